package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

// topicDeleteRecordsCommand is Kafka's kafka-delete-records for one
// partition: the partition's log start offset moves up on every replica.
func (a *app) topicDeleteRecordsCommand() *cobra.Command {
	var (
		partition int32
		offset    int64
	)
	cmd := &cobra.Command{
		Use:   "delete-records NAME --partition P --offset N",
		Short: "Delete a partition's records below offset N (-1: all of them) on every replica",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if offset < client.DeleteRecordsToEnd {
				return usageErrorf("--offset must be an offset or -1 (every record), got %d", offset)
			}
			return a.withAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				start, err := adm.DeleteRecords(ctx, args[0], partition, offset)
				switch {
				case errors.Is(err, client.ErrOffsetOutOfRange):
					return fmt.Errorf("delete records of %q partition %d: offset %d is past the partition's last record", args[0], partition, offset)
				case errors.Is(err, client.ErrUnknownTopicOrPartition):
					return fmt.Errorf("topic %q has no partition %d", args[0], partition)
				case err != nil:
					return fmt.Errorf("delete records of %q partition %d: %w", args[0], partition, a.explain(ctx, err))
				}
				fmt.Fprintf(a.stdout, "partition %d of %q now starts at offset %d\n", partition, args[0], start)
				return nil
			})
		},
	}
	cmd.Flags().Int32Var(&partition, "partition", 0, "the partition")
	cmd.Flags().Int64Var(&offset, "offset", -2, "delete the records below this offset (-1: every record)")
	_ = cmd.MarkFlagRequired("offset")
	return cmd
}
