package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

func (a *app) topicCommand() *cobra.Command {
	return commandGroup("topic", "Create, list and describe topics",
		a.topicCreateCommand(), a.topicAddPartitionsCommand(), a.topicDeleteCommand(), a.topicDeleteRecordsCommand(), a.topicListCommand(), a.topicDescribeCommand(), a.topicAlterConfigCommand())
}

func (a *app) topicCreateCommand() *cobra.Command {
	var partitions int32
	var rf int16
	var configs []string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic and wait until every partition has a leader",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if partitions == 0 || partitions < -1 {
				return usageErrorf("--partitions must be positive (or -1 for the broker's default), got %d", partitions)
			}
			if rf == 0 || rf < -1 {
				return usageErrorf("--replication-factor must be positive (or -1 for the broker's default), got %d", rf)
			}
			m, err := parseConfigs("config", configs)
			if err != nil {
				return err
			}
			return a.topicCreate(cmd.Context(), args[0], partitions, rf, m)
		},
	}
	cmd.Flags().StringArrayVar(&configs, "config", nil, "a topic config, NAME=VALUE with Kafka's names, e.g. retention.ms=86400000 (repeatable)")
	cmd.Flags().Int32Var(&partitions, "partitions", -1, "number of partitions (-1: the broker's default)")
	cmd.Flags().Int16Var(&rf, "replication-factor", -1, "replicas per partition (-1: the broker's default)")
	return cmd
}

func (a *app) topicCreate(parent context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	ctx, cancel := a.start(parent, true, true)
	defer cancel()
	adm, err := a.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, name, partitions, rf, configs); err != nil {
		if errors.Is(err, client.ErrTopicAlreadyExists) {
			return fmt.Errorf("topic %q already exists", name)
		}
		if errors.Is(err, client.ErrInvalidTopicConfig) {
			return a.configError(ctx, name, err)
		}
		err = a.explain(ctx, err)
		var ue *UnreachableError
		if errors.As(err, &ue) || errors.Is(err, errInterrupted) {
			return err
		}
		return fmt.Errorf("create topic %q: %w", name, err)
	}
	// Wait for leaders, so that a script can produce right after.
	for {
		ds, err := adm.DescribeTopics(ctx, name)
		if err == nil && ds[0].Err == nil && len(ds[0].Partitions) > 0 && allLed(ds[0]) {
			d := ds[0]
			fmt.Fprintf(a.stdout, "created topic %q: %d partitions, replication factor %d\n",
				name, len(d.Partitions), len(d.Partitions[0].Replicas))
			return nil
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("topic %q was created, but its partitions have no leader yet: %w",
				name, a.explain(ctx, ctx.Err()))
		case <-t.C:
		}
	}
}

// allLed reports whether every partition has a leader.
func allLed(d client.TopicDetail) bool {
	for _, p := range d.Partitions {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

func (a *app) topicAddPartitionsCommand() *cobra.Command {
	var partitions int32
	cmd := &cobra.Command{
		Use:   "add-partitions NAME --partitions N",
		Short: "Grow a topic to N partitions (keyed records may then map to other partitions)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if partitions < 1 {
				return usageErrorf("--partitions must be the new, larger partition count, got %d", partitions)
			}
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := adm.CreatePartitions(ctx, args[0], partitions); err != nil {
					return fmt.Errorf("add partitions to %q: %w", args[0], a.explain(ctx, err))
				}
				fmt.Fprintf(a.stdout, "topic %q now has %d partitions\n", args[0], partitions)
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&partitions, "partitions", 0, "the new partition count (larger than the current one)")
	return cmd
}

func (a *app) topicDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic and its records on every replica",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := adm.DeleteTopic(ctx, args[0]); err != nil {
					if errors.Is(err, client.ErrUnknownTopicOrPartition) {
						return fmt.Errorf("topic %q does not exist", args[0])
					}
					return fmt.Errorf("delete topic %q: %w", args[0], a.explain(ctx, err))
				}
				fmt.Fprintf(a.stdout, "deleted topic %q\n", args[0])
				return nil
			})
		},
	}
}

func (a *app) topicListCommand() *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topic names, one a line (internal topics such as __consumer_offsets with --internal)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				list := adm.ListTopics
				if internal {
					list = adm.ListAllTopics
				}
				names, err := list(ctx)
				if err != nil {
					return a.explain(ctx, err)
				}
				for _, n := range names {
					fmt.Fprintln(a.stdout, n)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&internal, "internal", false, "also list internal topics")
	return cmd
}

func (a *app) topicDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe [NAME...]",
		Short: "Show each partition's leader, leader epoch, replicas, ISR and start and end offsets, the cleanup policy with compacted partitions' dirty ratios, and configs that are not defaults (every topic if none named)",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := a.start(cmd.Context(), true, true)
			defer cancel()
			adm, err := a.admin()
			if err != nil {
				return err
			}
			defer adm.Close()
			var ds []client.TopicDetail
			if len(args) == 0 {
				cd, err := adm.DescribeCluster(ctx)
				if err != nil {
					return a.explain(ctx, err)
				}
				ds = cd.Topics
			} else if ds, err = adm.DescribeTopics(ctx, args...); err != nil {
				return a.explain(ctx, err)
			}
			var missing []string
			known := ds[:0:0]
			for _, d := range ds {
				if d.Err != nil && isUnknownTopic(d.Err) {
					missing = append(missing, d.Name)
					continue
				}
				known = append(known, d)
			}
			if len(known) > 0 || len(args) == 0 {
				writePartitionTable(a.stdout, known, a.logRanges(ctx, adm, known))
				if err := a.describeConfigs(ctx, adm, known); err != nil {
					return err
				}
			}
			switch len(missing) {
			case 0:
				return nil
			case 1:
				return &TopicNotFoundError{Topic: missing[0]}
			}
			return fmt.Errorf("topics %s do not exist", quoteAll(missing))
		},
	}
}

// describeConfigs prints each topic's cleanup.policy, with the dirty
// ratio of each partition of a compacted topic, then the topics' configs
// that are not defaults.
func (a *app) describeConfigs(ctx context.Context, adm *client.Admin, topics []client.TopicDetail) error {
	configs := make(map[string][]client.TopicConfig, len(topics))
	var order []string
	for _, t := range topics {
		if t.Err != nil {
			continue
		}
		cs, err := adm.DescribeTopicConfigs(ctx, t.Name)
		if isUnknownTopic(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("describe configs of %q: %w", t.Name, a.explain(ctx, err))
		}
		configs[t.Name] = cs
		order = append(order, t.Name)
	}
	writeCleanup(a.stdout, topics, configs, dirtyRatios(ctx, adm, topics, configs))
	writeConfigs(a.stdout, configs, order)
	return nil
}

func isUnknownTopic(err error) bool { return errors.Is(err, client.ErrUnknownTopicOrPartition) }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// logRangesWait bounds how long topic describe waits for partitions' start
// and end offsets: a partition without a leader shows "-" rather than
// holding the command for the whole --timeout.
const logRangesWait = 3 * time.Second

// logRanges returns where each partition of the topics starts and ends, as
// far as their leaders answer within logRangesWait.
func (a *app) logRanges(ctx context.Context, adm *client.Admin, topics []client.TopicDetail) map[partitionKey]client.LogRange {
	parts := map[string][]int32{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.Partition)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, min(a.timeout, logRangesWait))
	defer cancel()
	rs, _ := adm.LogRanges(ctx, parts) // what did not answer shows as "-"
	out := make(map[partitionKey]client.LogRange, len(rs))
	for _, r := range rs {
		out[partitionKey{r.Topic, r.Partition}] = r
	}
	return out
}

// writePartitions prints one row per partition of the topics.
func writePartitions(w io.Writer, topics []client.TopicDetail) {
	writePartitionTable(w, topics, nil)
}

// writePartitionTable prints one row per partition of the topics; with
// ranges (not nil), also where each partition's log starts and ends.
func writePartitionTable(w io.Writer, topics []client.TopicDetail, ranges map[partitionKey]client.LogRange) {
	if len(topics) == 0 {
		fmt.Fprintln(w, "no topics")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head, none := "TOPIC\tPARTITION\tLEADER\tEPOCH\tREPLICAS\tISR", "\t-\t-\t-\t-\t-"
	if ranges != nil {
		head, none = head+"\tSTART\tEND", none+"\t-\t-"
	}
	fmt.Fprintln(tw, head)
	for _, t := range topics {
		if t.Err != nil {
			fmt.Fprintf(tw, "%s%s\t%v\n", t.Name, none, t.Err)
			continue
		}
		for _, p := range t.Partitions {
			leader := strconv.Itoa(int(p.Leader))
			if p.Leader < 0 {
				leader = "none"
			}
			offsets := ""
			if ranges != nil {
				r, ok := ranges[partitionKey{t.Name, p.Partition}]
				if !ok {
					r = client.LogRange{Start: -1, End: -1}
				}
				offsets = "\t" + num(r.Start) + "\t" + num(r.End)
			}
			note := ""
			if p.Err != nil {
				note = "\t" + p.Err.Error()
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s%s%s\n", t.Name, p.Partition, leader, p.LeaderEpoch,
				joinIDs(p.Replicas), joinIDs(p.ISR), offsets, note)
		}
	}
	tw.Flush()
}

// joinIDs prints node ids comma-separated, in the cluster's order (for
// replicas, the preferred leader first), "-" for none.
func joinIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}
