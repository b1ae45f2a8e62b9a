package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
)

func (a *app) groupCommand() *cobra.Command {
	return commandGroup("group", "List, describe, delete consumer groups and reset their offsets",
		a.groupListCommand(), a.groupDescribeCommand(), a.groupDeleteCommand(), a.groupResetCommand())
}

// groupName validates the one argument of a command on a group.
func groupName(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return usageErrorf("%s needs a group NAME", cmd.CommandPath())
	case len(args) > 1:
		return usageErrorf("%s takes one group NAME, got %d arguments", cmd.CommandPath(), len(args))
	case args[0] == "":
		return usageErrorf("%s: the group NAME is empty", cmd.CommandPath())
	}
	return nil
}

// withGroupAdmin is withAdmin that explains fn's group errors.
func (a *app) withGroupAdmin(parent context.Context, fn func(context.Context, *client.Admin) error) error {
	return a.withAdmin(parent, func(ctx context.Context, adm *client.Admin) error {
		return a.explainGroup(ctx, fn(ctx, adm))
	})
}

// GroupNotFoundError is a group the cluster does not know.
type GroupNotFoundError struct{ Group string }

func (e *GroupNotFoundError) Error() string { return fmt.Sprintf("group %q does not exist", e.Group) }

// explainGroup turns the group errors of the client into what the user
// sees; others go through explain.
func (a *app) explainGroup(ctx context.Context, err error) error {
	var ne *client.GroupNotEmptyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ne):
		return fmt.Errorf("cannot reset the offsets of group %q: it has active members (state %s); stop its consumers first", ne.Group, ne.State)
	}
	return unsupportedGroups(a.explain(ctx, err))
}

// unsupportedGroups says so when the broker lacks a group API (a broker
// without a group coordinator); other errors are returned as they are.
func unsupportedGroups(err error) error {
	var ve *client.VersionError
	if !errors.As(err, &ve) {
		return err
	}
	name := kmsg.NameForKey(ve.Key)
	if name == "" {
		name = fmt.Sprintf("API key %d", ve.Key)
	}
	return fmt.Errorf("the broker does not support consumer groups (%s: %w)", name, err)
}

// notFound replaces a client's ErrGroupIDNotFound by a GroupNotFoundError.
func notFound(group string, err error) error {
	if errors.Is(err, client.ErrGroupIDNotFound) {
		return &GroupNotFoundError{Group: group}
	}
	return err
}

func (a *app) groupListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the groups with their type (classic or consumer), state and protocol type",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withGroupAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				gs, err := adm.ListGroups(ctx)
				if err != nil {
					return err
				}
				writeGroups(a.stdout, gs)
				return nil
			})
		},
	}
}

func writeGroups(w io.Writer, gs []client.GroupListing) {
	if len(gs) == 0 {
		fmt.Fprintln(w, "no groups")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTYPE\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
	for _, g := range gs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", g.Group, dash(g.Type), dash(g.State), dash(g.ProtocolType), g.Coordinator)
	}
	tw.Flush()
}

// dash prints an empty field as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// num prints an offset, "-" when unknown (negative).
func num(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func (a *app) groupDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a group's members and assignment, and each partition's committed offset and lag",
		Args:  groupName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withGroupAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				d, err := adm.DescribeGroup(ctx, args[0])
				if err != nil {
					return notFound(args[0], err)
				}
				offs, err := adm.GroupOffsets(ctx, args[0])
				if err != nil {
					return notFound(args[0], err)
				}
				writeGroup(a.stdout, d, offs)
				return nil
			})
		},
	}
}

// writeGroup prints a group: a summary line, its members, and its
// partitions.
func writeGroup(w io.Writer, d *client.GroupDetail, offs []client.GroupOffset) {
	if d.Type == "consumer" {
		writeConsumerGroup(w, d)
	} else {
		writeClassicGroup(w, d)
	}
	fmt.Fprintln(w)
	if len(offs) == 0 {
		fmt.Fprintln(w, "no committed offsets")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER")
	for _, o := range offs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", o.Topic, o.Partition, num(o.Committed), num(o.LogEnd), num(o.Lag), dash(o.MemberID))
	}
	tw.Flush()
}

// writeConsumerGroup prints a KIP-848 group's summary line and members:
// each member's epoch, the partitions it owns and those the coordinator
// is moving it to.
func writeConsumerGroup(w io.Writer, d *client.GroupDetail) {
	fmt.Fprintf(w, "group %q: type consumer, state %s, group epoch %d, assignment epoch %d, assignor %s, %d %s, coordinator %d\n",
		d.Group, d.State, d.GroupEpoch, d.AssignmentEpoch, dash(d.Assignor), len(d.Members), plural(len(d.Members), "member"), d.Coordinator)
	if len(d.Members) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tINSTANCE\tCLIENT-ID\tHOST\tEPOCH\tASSIGNED\tTARGET")
	for _, m := range d.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.MemberID, dash(m.InstanceID), dash(m.ClientID), dash(m.ClientHost),
			m.MemberEpoch, assignment(m.Assignment), assignment(m.Target))
	}
	tw.Flush()
}

// writeClassicGroup prints a classic group's summary line and members.
func writeClassicGroup(w io.Writer, d *client.GroupDetail) {
	fmt.Fprintf(w, "group %q: state %s, %d %s", d.Group, d.State, len(d.Members), plural(len(d.Members), "member"))
	if d.Protocol != "" {
		fmt.Fprintf(w, ", strategy %s", d.Protocol)
	}
	fmt.Fprintf(w, ", coordinator %d\n", d.Coordinator)
	if len(d.Members) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER\tINSTANCE\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, dash(m.InstanceID), dash(m.ClientID), dash(m.ClientHost), assignment(m.Assignment))
		}
		tw.Flush()
	}
}

// assignment prints partitions by topic as "t[0,1] u[2]", "-" for none.
func assignment(a map[string][]int32) string {
	if len(a) == 0 {
		return "-"
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(a)) {
		ps := make([]string, len(a[t]))
		for i, p := range a[t] {
			ps[i] = strconv.Itoa(int(p))
		}
		parts = append(parts, t+"["+strings.Join(ps, ",")+"]")
	}
	return strings.Join(parts, " ")
}

func (a *app) groupDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a group that has no members, with its committed offsets",
		Args:  groupName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withGroupAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				err := adm.DeleteGroup(ctx, args[0])
				if errors.Is(err, client.ErrNonEmptyGroup) {
					return fmt.Errorf("group %q has active members: stop its consumers first", args[0])
				}
				if err != nil {
					return notFound(args[0], err)
				}
				fmt.Fprintf(a.stdout, "deleted group %q\n", args[0])
				return nil
			})
		},
	}
}
