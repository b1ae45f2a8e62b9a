package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

func (a *app) consumeCommand() *cobra.Command {
	var fromBeginning bool
	var partition int32
	var maxRecords int
	var format string
	var idle time.Duration
	var group, protocol, shareGroup, ack string
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic to standard output",
		Long: `consume prints the records of a topic (every partition, or one with
--partition), one line per record, as --format says. It starts at the end of
each partition (only new records) or, with --from-beginning, at the start. It
runs until -n records are printed, until --idle-timeout passes without a
record, or until interrupted (Ctrl-C), and then reports the count on stderr.
Records come in offset order within a partition.

With --group, consume joins that consumer group: the group assigns it
partitions of the topic (shared with the group's other members), each read
from the group's committed offset (where there is none: the end, or the
start with --from-beginning), and what it prints is committed, so that the
next member of the group continues exactly after it. --group-protocol consumer
joins with KIP-848's protocol (the broker assigns; Kafka's group.protocol).

With --share-group, consume joins that share group (KIP-932): its members
read the same partitions at once, the broker handing each record to one of
them; each printed record is acknowledged with --ack (accept, the default;
release: it is delivered again; reject: it never is), and records a run
fetched but did not print (-n) are released. Where a new share group starts
is its share.auto.offset.reset config (latest by default); share-group
reset-offsets moves it.

` + formatHelp,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := parseFormat(format)
			if err != nil {
				return &usageError{err: err}
			}
			switch {
			case partition < -1:
				return usageErrorf("--partition must be a partition number or -1, got %d", partition)
			case maxRecords < 0:
				return usageErrorf("--max-messages must not be negative, got %d", maxRecords)
			case idle < 0:
				return usageErrorf("--idle-timeout must not be negative, got %v", idle)
			case cmd.Flags().Changed("group") && group == "":
				return usageErrorf("--group needs a group name")
			case group != "" && partition >= 0:
				return usageErrorf("--partition cannot be used with --group: the group assigns the partitions")
			case cmd.Flags().Changed("group-protocol") && group == "":
				return usageErrorf("--group-protocol needs --group")
			}
			if cmd.Flags().Changed("share-group") || cmd.Flags().Changed("ack") {
				return a.consumeShareCommand(cmd, args[0], shareGroup, ack, consumeSpec{partition: -1, max: maxRecords, format: f, idle: idle})
			}
			proto, err := client.ParseGroupProtocol(protocol)
			if err != nil {
				return usageErrorf("--group-protocol is classic or consumer, got %q", protocol)
			}
			spec := consumeSpec{fromBeginning: fromBeginning, partition: partition, max: maxRecords, format: f, idle: idle, protocol: proto}
			if group != "" {
				return a.consumeGroup(cmd.Context(), args[0], group, spec)
			}
			return a.consume(cmd.Context(), args[0], spec)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&fromBeginning, "from-beginning", false, "start at the earliest offset instead of the end (with --group: where the group has no committed offset)")
	fl.Int32Var(&partition, "partition", -1, "read only this partition (-1: every partition)")
	fl.IntVarP(&maxRecords, "max-messages", "n", 0, "stop after this many records (0: no limit)")
	fl.StringVar(&format, "format", "%v", "how to print each record (syntax above)")
	fl.DurationVar(&idle, "idle-timeout", 0, "stop when no record arrives for this long (0: wait forever; with --group, counted once the member has joined)")
	fl.StringVar(&group, "group", "", "consume as a member of this consumer group, committing what is printed")
	fl.StringVar(&protocol, "group-protocol", "classic", "the group's rebalance protocol: classic, or consumer (KIP-848: the broker assigns)")
	fl.StringVar(&shareGroup, "share-group", "", "consume as a member of this share group (KIP-932), acknowledging what is printed")
	fl.StringVar(&ack, "ack", "accept", "with --share-group, how printed records are acknowledged: accept, release or reject")
	return cmd
}

// consumeSpec is what consume reads and how it prints it.
type consumeSpec struct {
	fromBeginning bool
	partition     int32 // -1: all
	max           int   // 0: no limit
	format        recordFormat
	idle          time.Duration // 0: none
	protocol      client.RebalanceProtocol
}

func (a *app) consume(parent context.Context, topic string, spec consumeSpec) error {
	ctx, cancel := a.start(parent, true, true)
	defer cancel()
	n, err := a.partitionCount(ctx, topic, spec.partition)
	if err != nil {
		return err
	}
	start := client.AtEnd()
	if spec.fromBeginning {
		start = client.AtStart()
	}
	parts := map[int32]client.Offset{}
	for p := range n {
		if spec.partition < 0 || p == spec.partition {
			parts[p] = start
		}
	}
	c, err := client.NewConsumer(a.clientOpts(client.ConsumePartitions(map[string]map[int32]client.Offset{topic: parts}))...)
	if err != nil {
		return err
	}
	defer c.Close()

	count, err := a.printRecords(parent, c, spec, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "consumed %d %s\n", count, plural(count, "record"))
	return nil
}

// poller is what printRecords reads from: a Consumer or a GroupConsumer.
type poller interface {
	Poll(ctx context.Context) ([]*client.Record, error)
}

// printRecords polls and prints records until -n are printed, the idle
// timeout passes, or parent ends (an interrupt). After each batch is
// written out, printed (if not nil) gets the records printed. It returns
// how many were printed.
func (a *app) printRecords(parent context.Context, c poller, spec consumeSpec, printed func([]*client.Record) error) (int, error) {
	w := bufio.NewWriter(a.stdout)
	var buf []byte
	count := 0
	for spec.max == 0 || count < spec.max {
		pctx, pcancel := parent, context.CancelFunc(func() {})
		if spec.idle > 0 {
			pctx, pcancel = context.WithTimeout(parent, spec.idle)
		}
		recs, err := c.Poll(pctx)
		pcancel()
		if spec.max > 0 {
			recs = recs[:min(len(recs), spec.max-count)]
		}
		for _, r := range recs {
			buf = spec.format.appendRecord(buf[:0], r)
			w.Write(buf)
		}
		count += len(recs)
		if werr := w.Flush(); werr != nil {
			return count, fmt.Errorf("writing standard output: %w", werr)
		}
		if printed != nil && len(recs) > 0 {
			if perr := printed(recs); perr != nil {
				return count, perr
			}
		}
		if err != nil {
			if parent.Err() != nil || (spec.idle > 0 && errors.Is(err, context.DeadlineExceeded)) {
				break // interrupted or idle: the normal ends of an open-ended consume
			}
			return count, a.explain(parent, err)
		}
	}
	return count, nil
}
