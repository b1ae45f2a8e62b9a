package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

func (a *app) groupResetCommand() *cobra.Command {
	var earliest, latest bool
	var offset int64
	var topics []string
	cmd := &cobra.Command{
		Use:   "reset-offsets NAME (--to-earliest | --to-latest | --to-offset N) [--topic T]...",
		Short: "Set the committed offsets of a group that has no members",
		Long: `reset-offsets sets the committed offsets of a group, so that its next
member starts there: at the start of each partition (--to-earliest), at its
end (--to-latest), or at an exact offset (--to-offset N, moved into the
partition's log if outside it). With --topic, every partition of the named
topics is reset (the group need not exist yet); without, every partition the
group has committed offsets for. As in Kafka, a group with active members is
refused: they would overwrite the offsets.`,
		Args: groupName,
		RunE: func(cmd *cobra.Command, args []string) error {
			to, err := resetTarget(cmd, earliest, latest, offset)
			if err != nil {
				return err
			}
			if err := topicNames(topics); err != nil {
				return err
			}
			return a.withGroupAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := a.topicsExist(ctx, adm, topics); err != nil {
					return err
				}
				rs, err := adm.ResetGroupOffsets(ctx, args[0], to, topics...)
				switch {
				case errors.Is(err, client.ErrNoOffsetsToReset):
					return fmt.Errorf("group %q has no committed offsets: name the topics to reset with --topic", args[0])
				case errors.Is(err, client.ErrGroupIDNotFound) && len(topics) == 0:
					return fmt.Errorf("%w: name the topics to reset with --topic (the group need not exist yet)", notFound(args[0], err))
				}
				if err != nil {
					return notFound(args[0], err)
				}
				writeResets(a.stdout, args[0], rs)
				return nil
			})
		},
	}
	resetFlags(cmd, &earliest, &latest, &offset)
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "reset every partition of this topic (repeatable; default: the partitions with committed offsets)")
	return cmd
}

// resetFlags adds the reset targets resetTarget reads.
func resetFlags(cmd *cobra.Command, earliest, latest *bool, offset *int64) {
	fl := cmd.Flags()
	fl.BoolVar(earliest, "to-earliest", false, "reset to the start of each partition")
	fl.BoolVar(latest, "to-latest", false, "reset to the end of each partition")
	fl.Int64Var(offset, "to-offset", -1, "reset to this offset")
}

// resetTarget is the offset the flags ask for: exactly one of them.
func resetTarget(cmd *cobra.Command, earliest, latest bool, offset int64) (client.Offset, error) {
	var given []string
	for _, f := range []string{"to-earliest", "to-latest", "to-offset"} {
		if cmd.Flags().Changed(f) {
			given = append(given, "--"+f)
		}
	}
	switch {
	case len(given) == 0:
		return client.Offset{}, usageErrorf("say where to reset to: --to-earliest, --to-latest or --to-offset N")
	case len(given) > 1:
		return client.Offset{}, usageErrorf("%s and %s cannot be used together: give one of --to-earliest, --to-latest, --to-offset", given[0], given[1])
	case cmd.Flags().Changed("to-offset") && offset < 0:
		return client.Offset{}, usageErrorf("--to-offset must not be negative, got %d", offset)
	case cmd.Flags().Changed("to-offset"):
		return client.At(offset), nil
	case earliest:
		return client.AtStart(), nil
	case latest:
		return client.AtEnd(), nil
	}
	return client.Offset{}, usageErrorf("--to-earliest=false and --to-latest=false say nowhere to reset to")
}

func writeResets(w io.Writer, group string, rs []client.OffsetReset) {
	fmt.Fprintf(w, "reset %d %s of group %q\n", len(rs), plural(len(rs), "partition"), group)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tOLD\tNEW")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", r.Topic, r.Partition, num(r.Old), r.New)
	}
	tw.Flush()
}

// topicNames checks the --topic values of a reset.
func topicNames(topics []string) error {
	for _, t := range topics {
		if t == "" {
			return usageErrorf("--topic needs a topic name")
		}
	}
	return nil
}

// topicsExist describes each topic of a reset, so that a missing one is
// named before anything is reset.
func (a *app) topicsExist(ctx context.Context, adm *client.Admin, topics []string) error {
	for _, t := range topics {
		if _, err := a.describeTopic(ctx, adm, t); err != nil {
			return err
		}
	}
	return nil
}
