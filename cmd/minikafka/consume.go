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
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic to standard output",
		Long: `consume prints the records of a topic (every partition, or one with
--partition), one line per record, as --format says. It starts at the end of
each partition (only new records) or, with --from-beginning, at the start. It
runs until -n records are printed, until --idle-timeout passes without a
record, or until interrupted (Ctrl-C), and then reports the count on stderr.
Records come in offset order within a partition.

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
			}
			return a.consume(cmd.Context(), args[0], consumeSpec{
				fromBeginning: fromBeginning, partition: partition, max: maxRecords, format: f, idle: idle,
			})
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&fromBeginning, "from-beginning", false, "start at the earliest offset instead of the end")
	fl.Int32Var(&partition, "partition", -1, "read only this partition (-1: every partition)")
	fl.IntVarP(&maxRecords, "max-messages", "n", 0, "stop after this many records (0: no limit)")
	fl.StringVar(&format, "format", "%v", "how to print each record (syntax above)")
	fl.DurationVar(&idle, "idle-timeout", 0, "stop when no record arrives for this long (0: wait forever)")
	return cmd
}

// consumeSpec is what consume reads and how it prints it.
type consumeSpec struct {
	fromBeginning bool
	partition     int32 // -1: all
	max           int   // 0: no limit
	format        recordFormat
	idle          time.Duration // 0: none
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
		for _, r := range recs {
			if spec.max > 0 && count >= spec.max {
				break
			}
			buf = spec.format.appendRecord(buf[:0], r)
			w.Write(buf)
			count++
		}
		if werr := w.Flush(); werr != nil {
			return fmt.Errorf("writing standard output: %w", werr)
		}
		if err != nil {
			if parent.Err() != nil || (spec.idle > 0 && errors.Is(err, context.DeadlineExceeded)) {
				break // interrupted or idle: the normal ends of an open-ended consume
			}
			return a.explain(parent, err)
		}
	}
	fmt.Fprintf(a.stderr, "consumed %d %s\n", count, plural(count, "record"))
	return nil
}
