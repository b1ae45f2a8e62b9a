package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

func (a *app) txnCommand() *cobra.Command {
	return commandGroup("txn", "Show transactions",
		a.txnListCommand())
}

func (a *app) txnListCommand() *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the transactional ids with their state and producer id",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				ts, err := adm.ListTransactions(ctx, states...)
				if err != nil {
					return err
				}
				writeTxns(a.stdout, ts)
				return nil
			})
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort)")
	return cmd
}

func writeTxns(w io.Writer, ts []client.TransactionListing) {
	if len(ts) == 0 {
		fmt.Fprintln(w, "no transactions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSACTIONAL-ID\tSTATE\tPRODUCER-ID\tCOORDINATOR")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", t.TransactionalID, t.State, strconv.FormatInt(t.ProducerID, 10), t.Coordinator)
	}
	tw.Flush()
}
