package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/minikafka/minikafka-go/client"
)

func (a *app) quotaCommand() *cobra.Command {
	return commandGroup("quota", "Manage client quotas (per user, client id, or both)",
		a.quotaSetCommand(), a.quotaListCommand(), a.quotaDeleteCommand())
}

// quotaEntityFlags are the flags that name a quota entity.
type quotaEntityFlags struct {
	user, clientID             string
	defaultUser, defaultClient bool
}

func (f *quotaEntityFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.user, "user", "", "the user (SASL user name) the quota applies to")
	fs.StringVar(&f.clientID, "client-id", "", "the client id the quota applies to")
	fs.BoolVar(&f.defaultUser, "default-user", false, "every user without a quota of its own")
	fs.BoolVar(&f.defaultClient, "default-client", false, "every client id without a quota of its own")
}

// entity checks the flags; required says that some entity must be named.
func (f *quotaEntityFlags) entity(required bool) (client.QuotaEntity, error) {
	e := client.QuotaEntity{User: f.user, ClientID: f.clientID, DefaultUser: f.defaultUser, DefaultClientID: f.defaultClient}
	switch {
	case f.user != "" && f.defaultUser:
		return e, usageErrorf("--user and --default-user exclude each other")
	case f.clientID != "" && f.defaultClient:
		return e, usageErrorf("--client-id and --default-client exclude each other")
	case required && e.String() == "":
		return e, usageErrorf("name an entity: --user or --default-user, --client-id or --default-client, or one of each")
	}
	return e, nil
}

// quotaFlagKeys are the value flags of quota set, with the key each sets.
var quotaFlagKeys = []struct{ flag, key, usage string }{
	{"producer-byte-rate", client.QuotaProducerByteRate, "bytes per second a producer may send to each broker (a whole number)"},
	{"consumer-byte-rate", client.QuotaConsumerByteRate, "bytes per second a consumer may fetch from each broker (a whole number)"},
	{"request-percentage", client.QuotaRequestPercentage, "percentage of one broker thread's time the requests may take"},
	{"controller-mutation-rate", client.QuotaControllerMutationRate, "partition creations and deletions per second"},
}

func (a *app) quotaSetCommand() *cobra.Command {
	var ef quotaEntityFlags
	values := make([]float64, len(quotaFlagKeys))
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Set quota values of a user, a client id, or a user's clients (other keys keep theirs)",
		Example: "  minikafka quota set --client-id app --producer-byte-rate 102400\n" +
			"  minikafka quota set --user alice --default-client --request-percentage 50",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ef.entity(true)
			if err != nil {
				return err
			}
			set := map[string]float64{}
			for i, k := range quotaFlagKeys {
				if cmd.Flags().Changed(k.flag) {
					set[k.key] = values[i]
				}
			}
			if len(set) == 0 {
				return usageErrorf("give at least one value: --producer-byte-rate, --consumer-byte-rate, --request-percentage or --controller-mutation-rate")
			}
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := adm.SetQuotas(ctx, e, set); err != nil {
					return a.explain(ctx, err) // the cluster's message names the entity
				}
				for _, k := range slices.Sorted(maps.Keys(set)) {
					fmt.Fprintf(a.stdout, "quota %s: %s = %s\n", e, k, formatQuota(set[k]))
				}
				return nil
			})
		},
	}
	ef.add(cmd.Flags())
	for i, k := range quotaFlagKeys {
		cmd.Flags().Float64Var(&values[i], k.flag, 0, k.usage)
	}
	return cmd
}

func (a *app) quotaListCommand() *cobra.Command {
	var ef quotaEntityFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the stored quotas, of every entity or of those with the given user and/or client id",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ef.entity(false)
			if err != nil {
				return err
			}
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				qs, err := adm.ListQuotas(ctx, e)
				if err != nil {
					return a.explain(ctx, err)
				}
				writeQuotas(a.stdout, qs)
				return nil
			})
		},
	}
	ef.add(cmd.Flags())
	return cmd
}

func (a *app) quotaDeleteCommand() *cobra.Command {
	var ef quotaEntityFlags
	var keys []string
	cmd := &cobra.Command{
		Use:     "delete",
		Short:   "Remove quota keys of an entity (every key without --key)",
		Example: "  minikafka quota delete --client-id app --key producer_byte_rate",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ef.entity(true)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if !slices.ContainsFunc(quotaFlagKeys, func(f struct{ flag, key, usage string }) bool { return f.key == k }) {
					return usageErrorf("--key %q: want producer_byte_rate, consumer_byte_rate, request_percentage or controller_mutation_rate", k)
				}
			}
			if len(keys) == 0 {
				for _, f := range quotaFlagKeys {
					keys = append(keys, f.key)
				}
			}
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := adm.DeleteQuotas(ctx, e, keys...); err != nil {
					return a.explain(ctx, err)
				}
				fmt.Fprintf(a.stdout, "quota %s: %v removed\n", e, keys)
				return nil
			})
		},
	}
	ef.add(cmd.Flags())
	cmd.Flags().StringSliceVar(&keys, "key", nil, "a quota key to remove (repeatable)")
	return cmd
}

func formatQuota(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func writeQuotas(w io.Writer, qs []client.ClientQuota) {
	if len(qs) == 0 {
		fmt.Fprintln(w, "no quotas")
		return
	}
	name := func(n string, def bool) string {
		switch {
		case def:
			return "<default>"
		case n == "":
			return "-"
		}
		return n
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tCLIENT-ID\tKEY\tVALUE")
	for _, q := range qs {
		for _, k := range slices.Sorted(maps.Keys(q.Values)) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name(q.Entity.User, q.Entity.DefaultUser),
				name(q.Entity.ClientID, q.Entity.DefaultClientID), k, formatQuota(q.Values[k]))
		}
	}
	tw.Flush()
}
