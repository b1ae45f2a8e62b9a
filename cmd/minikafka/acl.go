package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/client"
)

func (a *app) aclCommand() *cobra.Command {
	return commandGroup("acl", "Manage ACLs (Kafka's authorisation; the nodes enforce them with authorization_enabled)",
		a.aclAddCommand(), a.aclListCommand(), a.aclRemoveCommand())
}

// aclFlags are kafka-acls' flags.
type aclFlags struct {
	allow, deny, ops, hosts []string
	topics, groups, txnIDs  []string
	cluster                 bool
	pattern                 string
}

func (f *aclFlags) register(cmd *cobra.Command, pattern string, what string) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.allow, "allow-principal", nil, "principal (User:<name>, User:* for all) the ACL allows"+what)
	fl.StringArrayVar(&f.deny, "deny-principal", nil, "principal (User:<name>, User:* for all) the ACL denies"+what)
	fl.StringArrayVar(&f.ops, "operation", nil, "operation: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite"+what)
	fl.StringArrayVar(&f.hosts, "host", nil, "client IP address, or * for any"+what)
	fl.StringArrayVar(&f.topics, "topic", nil, "topic name (* for all)")
	fl.StringArrayVar(&f.groups, "group", nil, "consumer group id (* for all)")
	fl.StringArrayVar(&f.txnIDs, "transactional-id", nil, "transactional id (* for all)")
	fl.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fl.StringVar(&f.pattern, "resource-pattern-type", pattern, "how resource names match: literal or prefixed (list and remove also take any and match)")
}

type aclResource struct {
	rt   acl.ResourceType
	name string
}

func (f *aclFlags) resources() []aclResource {
	var out []aclResource
	for _, x := range []struct {
		rt    acl.ResourceType
		names []string
	}{{acl.ResourceTopic, f.topics}, {acl.ResourceGroup, f.groups}, {acl.ResourceTransactionalID, f.txnIDs}} {
		for _, n := range x.names {
			out = append(out, aclResource{x.rt, n})
		}
	}
	if f.cluster {
		out = append(out, aclResource{acl.ResourceCluster, acl.ClusterName})
	}
	return out
}

func (f *aclFlags) parsePattern(filter bool) (acl.PatternType, error) {
	switch strings.ToLower(f.pattern) {
	case "literal":
		return acl.PatternLiteral, nil
	case "prefixed":
		return acl.PatternPrefixed, nil
	case "any":
		if filter {
			return acl.PatternAny, nil
		}
	case "match":
		if filter {
			return acl.PatternMatch, nil
		}
	}
	if filter {
		return 0, usageErrorf("--resource-pattern-type %q: want literal, prefixed, any or match", f.pattern)
	}
	return 0, usageErrorf("--resource-pattern-type %q: want literal or prefixed", f.pattern)
}

func (f *aclFlags) parseOps() ([]acl.Operation, error) {
	var out []acl.Operation
	for _, s := range f.ops {
		op, ok := acl.ParseOperation(s)
		if !ok || op == acl.OpAny {
			return nil, usageErrorf("--operation %q: unknown operation", s)
		}
		out = append(out, op)
	}
	return out, nil
}

// aclWho is one principal flag with its permission.
type aclWho struct {
	principal  string
	permission acl.Permission
}

// principals pairs each principal flag with its permission.
func (f *aclFlags) principals() []aclWho {
	var out []aclWho
	for _, p := range f.allow {
		out = append(out, aclWho{p, acl.PermissionAllow})
	}
	for _, p := range f.deny {
		out = append(out, aclWho{p, acl.PermissionDeny})
	}
	return out
}

// bindings is the product of principals, hosts, operations and
// resources, each checked.
func (f *aclFlags) bindings() ([]acl.Binding, error) {
	pat, err := f.parsePattern(false)
	if err != nil {
		return nil, err
	}
	ops, err := f.parseOps()
	if err != nil {
		return nil, err
	}
	res := f.resources()
	switch {
	case len(f.allow)+len(f.deny) == 0:
		return nil, usageErrorf("--allow-principal or --deny-principal is needed")
	case len(ops) == 0:
		return nil, usageErrorf("--operation is needed")
	case len(res) == 0:
		return nil, usageErrorf("a resource is needed: --topic, --group, --transactional-id or --cluster")
	}
	hosts := f.hosts
	if len(hosts) == 0 {
		hosts = []string{acl.Wildcard}
	}
	var out []acl.Binding
	for _, pr := range f.principals() {
		for _, h := range hosts {
			for _, op := range ops {
				for _, r := range res {
					b := acl.Binding{ResourceType: r.rt, Name: r.name, Pattern: pat, Principal: pr.principal, Host: h, Operation: op, Permission: pr.permission}
					if err := b.Validate(); err != nil {
						return nil, usageErrorf("%v", err)
					}
					out = append(out, b)
				}
			}
		}
	}
	return out, nil
}

// filters is the product of the given flags; an absent flag matches
// anything.
func (f *aclFlags) filters() ([]acl.Filter, error) {
	pat, err := f.parsePattern(true)
	if err != nil {
		return nil, err
	}
	ops, err := f.parseOps()
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		ops = []acl.Operation{acl.OpAny}
	}
	type res struct {
		rt   acl.ResourceType
		name *string
	}
	var rs []res
	for _, r := range f.resources() {
		rs = append(rs, res{r.rt, &r.name})
	}
	if len(rs) == 0 {
		rs = []res{{acl.ResourceAny, nil}}
	}
	type who struct {
		p    *string
		perm acl.Permission
	}
	var ws []who
	for _, pr := range f.principals() {
		ws = append(ws, who{&pr.principal, pr.permission})
	}
	if len(ws) == 0 {
		ws = []who{{nil, acl.PermissionAny}}
	}
	hosts := []*string{nil}
	if len(f.hosts) > 0 {
		hosts = nil
		for _, h := range f.hosts {
			hosts = append(hosts, &h)
		}
	}
	var out []acl.Filter
	for _, w := range ws {
		for _, h := range hosts {
			for _, op := range ops {
				for _, r := range rs {
					out = append(out, acl.Filter{ResourceType: r.rt, Name: r.name, Pattern: pat, Principal: w.p, Host: h, Operation: op, Permission: w.perm})
				}
			}
		}
	}
	return out, nil
}

// aclSubcommand is an acl command without arguments: parse reads its ACL
// flags (pattern is --pattern's default, help ends their descriptions)
// before any connection, then run uses what it made with an admin client,
// and run's errors are explained.
func aclSubcommand[T any](a *app, use, short, pattern, help string, parse func(*aclFlags) (T, error), run func(context.Context, *client.Admin, T) error) *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  usageArgs(cobra.NoArgs),
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v, err := parse(&f)
		if err != nil {
			return err
		}
		return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
			if err := run(ctx, adm, v); err != nil {
				return a.explain(ctx, err)
			}
			return nil
		})
	}
	f.register(cmd, pattern, help)
	return cmd
}

func (a *app) aclAddCommand() *cobra.Command {
	return aclSubcommand(a, "add", "Add ACLs: every principal x host x operation x resource given", "literal", " (repeatable)",
		(*aclFlags).bindings,
		func(ctx context.Context, adm *client.Admin, bs []acl.Binding) error {
			if err := adm.CreateACLs(ctx, bs); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "added %d ACLs\n", len(bs))
			return nil
		})
}

func (a *app) aclListCommand() *cobra.Command {
	return aclSubcommand(a, "list", "List the ACLs that match the flags (all without flags)", "any", " to match (repeatable; default any)",
		(*aclFlags).filters,
		func(ctx context.Context, adm *client.Admin, fs []acl.Filter) error {
			var all []acl.Binding
			for _, flt := range fs {
				bs, err := adm.ListACLs(ctx, flt)
				if err != nil {
					return err
				}
				all = append(all, bs...)
			}
			writeACLs(a.stdout, acl.NewSet(all...).All())
			return nil
		})
}

func (a *app) aclRemoveCommand() *cobra.Command {
	return aclSubcommand(a, "remove", "Remove the ACLs that match the flags (at least one resource or principal)", "any", " to match (repeatable; default any)",
		func(f *aclFlags) ([]acl.Filter, error) {
			if len(f.resources()) == 0 && len(f.allow)+len(f.deny) == 0 {
				return nil, usageErrorf("give a resource (--topic, --group, --transactional-id, --cluster) or a principal: removing every ACL needs --topic '*' style flags")
			}
			return f.filters()
		},
		func(ctx context.Context, adm *client.Admin, fs []acl.Filter) error {
			removed, err := adm.DeleteACLs(ctx, fs)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "removed %d ACLs\n", len(acl.NewSet(removed...).All()))
			return nil
		})
}

func writeACLs(w io.Writer, bs []acl.Binding) {
	if len(bs) == 0 {
		fmt.Fprintln(w, "no ACLs")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
	for _, b := range bs {
		fmt.Fprintf(tw, "%v\t%s\t%v\t%s\t%s\t%v\t%v\n", b.ResourceType, b.Name, b.Pattern, b.Principal, b.Host, b.Operation, b.Permission)
	}
	tw.Flush()
}
