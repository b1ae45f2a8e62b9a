package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

// pollEvery is how often --wait looks at the moves in progress.
const pollEvery = 250 * time.Millisecond

func (a *app) partitionCommand() *cobra.Command {
	return commandGroup("partition", "Move partitions between brokers",
		a.partitionReassignCommand(), a.partitionReassignmentsCommand())
}

func (a *app) partitionReassignCommand() *cobra.Command {
	var replicas []int
	var cancelMove, wait bool
	cmd := &cobra.Command{
		Use:   "reassign TOPIC PARTITION (--replicas IDS | --cancel)",
		Short: "Move a partition to other brokers (Kafka's AlterPartitionReassignments), or cancel its move",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := strconv.ParseInt(args[1], 10, 32)
			if err != nil || p < 0 {
				return usageErrorf("partition %q: want a number from 0", args[1])
			}
			if cancelMove == (len(replicas) > 0) {
				return usageErrorf("give either --replicas or --cancel")
			}
			m := client.Move{Topic: args[0], Partition: int32(p)}
			for _, r := range replicas {
				m.Replicas = append(m.Replicas, int32(r))
			}
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := adm.Reassign(ctx, m); err != nil {
					return a.explain(ctx, err)
				}
				if !wait {
					fmt.Fprintf(a.stdout, "%s[%d]: move to %v started\n", m.Topic, m.Partition, m.Replicas)
					return nil
				}
				if err := waitMoves(ctx, adm, func(r client.Reassignment) bool { return r.Topic == m.Topic && r.Partition == m.Partition }); err != nil {
					return a.explain(ctx, err)
				}
				fmt.Fprintf(a.stdout, "%s[%d]: on %v\n", m.Topic, m.Partition, m.Replicas)
				return nil
			})
		},
	}
	cmd.Flags().IntSliceVar(&replicas, "replicas", nil, "the new replicas' broker ids, preferred leader first, comma-separated")
	cmd.Flags().BoolVar(&cancelMove, "cancel", false, "cancel the partition's move: it returns to its replicas from before")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait (up to --timeout) until the move has finished")
	return cmd
}

func (a *app) partitionReassignmentsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "reassignments",
		Short: "List the partition moves in progress",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				rs, err := adm.ListReassignments(ctx)
				if err != nil {
					return a.explain(ctx, err)
				}
				writeReassignments(a.stdout, rs)
				return nil
			})
		},
	}
}

func (a *app) nodeCommand() *cobra.Command {
	return commandGroup("node", "Operate on one broker",
		a.nodeDecommissionCommand())
}

func (a *app) nodeDecommissionCommand() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "decommission ID",
		Short: "Move every replica off a broker, so that it can be stopped for good",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return usageErrorf("node id %q: want a number from 0", args[0])
			}
			node := int32(id)
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				cluster, err := adm.DescribeCluster(ctx)
				if err != nil {
					return a.explain(ctx, err)
				}
				moves, err := client.PlanDrain(cluster, node)
				if err != nil {
					return err
				}
				if err := adm.Reassign(ctx, moves...); err != nil {
					return a.explain(ctx, err)
				}
				fmt.Fprintf(a.stdout, "node %d: %d partitions moving off\n", node, len(moves))
				if !wait {
					return nil
				}
				if err := waitMoves(ctx, adm, func(r client.Reassignment) bool { return slices.Contains(r.Replicas, node) }); err != nil {
					return a.explain(ctx, err)
				}
				fmt.Fprintf(a.stdout, "node %d holds no replicas: it can be stopped\n", node)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait (up to --timeout) until every move has finished")
	return cmd
}

// waitMoves polls the moves in progress until none matches, or ctx ends.
func waitMoves(ctx context.Context, adm *client.Admin, match func(client.Reassignment) bool) error {
	for {
		rs, err := adm.ListReassignments(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(rs, match) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("moves still in progress: %w", ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

func writeReassignments(w io.Writer, rs []client.Reassignment) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "no reassignments in progress")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\n", r.Topic, r.Partition, r.Replicas, r.Adding, r.Removing)
	}
	tw.Flush()
}
