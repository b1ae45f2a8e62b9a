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

func (a *app) shareGroupCommand() *cobra.Command {
	return commandGroup("share-group", "List and describe share groups (KIP-932) and reset their start offsets",
		a.shareGroupListCommand(), a.shareGroupDescribeCommand(), a.shareGroupResetCommand())
}

// explainShare says so when the cluster lacks a share-group API; other
// errors go through explainGroup.
func (a *app) explainShare(ctx context.Context, err error) error {
	var ue *client.ShareUnsupportedError
	if errors.As(err, &ue) {
		return ue
	}
	return a.explainGroup(ctx, err)
}

// withShareAdmin is withAdmin that explains fn's share-group errors.
func (a *app) withShareAdmin(parent context.Context, fn func(context.Context, *client.Admin) error) error {
	return a.withAdmin(parent, func(ctx context.Context, adm *client.Admin) error {
		return a.explainShare(ctx, fn(ctx, adm))
	})
}

func (a *app) shareGroupListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the share groups with their state",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withShareAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				gs, err := adm.ListGroups(ctx)
				if err != nil {
					return err
				}
				var share []client.GroupListing
				for _, g := range gs {
					if g.Type == "share" {
						share = append(share, g)
					}
				}
				writeShareGroups(a.stdout, share)
				return nil
			})
		},
	}
}

func writeShareGroups(w io.Writer, gs []client.GroupListing) {
	if len(gs) == 0 {
		fmt.Fprintln(w, "no share groups")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tCOORDINATOR")
	for _, g := range gs {
		fmt.Fprintf(tw, "%s\t%s\t%d\n", g.Group, dash(g.State), g.Coordinator)
	}
	tw.Flush()
}

func (a *app) shareGroupDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a share group's members and assignments, and each partition's start offset and lag",
		Args:  groupName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withShareAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				d, err := adm.DescribeShareGroup(ctx, args[0])
				if err != nil {
					return notFound(args[0], err)
				}
				offs, err := adm.ShareGroupOffsets(ctx, args[0])
				var ue *client.ShareUnsupportedError
				if errors.As(err, &ue) {
					// A cluster may serve share-group heartbeats before
					// their offsets: show what it has.
					writeShareGroup(a.stdout, d, nil, ue)
					return nil
				}
				if err != nil {
					return notFound(args[0], err)
				}
				writeShareGroup(a.stdout, d, offs, nil)
				return nil
			})
		},
	}
}

// writeShareGroup prints a share group: a summary line, its members, and
// its partitions, or why they are unknown (offsErr).
func writeShareGroup(w io.Writer, d *client.GroupDetail, offs []client.ShareGroupOffset, offsErr error) {
	fmt.Fprintf(w, "share group %q: state %s, group epoch %d, assignment epoch %d, assignor %s, %d %s, coordinator %d\n",
		d.Group, d.State, d.GroupEpoch, d.AssignmentEpoch, dash(d.Assignor), len(d.Members), plural(len(d.Members), "member"), d.Coordinator)
	if len(d.Members) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER\tCLIENT-ID\tHOST\tEPOCH\tASSIGNED")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", m.MemberID, dash(m.ClientID), dash(m.ClientHost), m.MemberEpoch, assignment(m.Assignment))
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	switch {
	case offsErr != nil:
		fmt.Fprintf(w, "start offsets unknown: %v\n", offsErr)
		return
	case len(offs) == 0:
		fmt.Fprintln(w, "no start offsets")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTART-OFFSET\tLAG\tERROR")
	for _, o := range offs {
		e := "-"
		if o.Err != nil {
			e = o.Err.Error()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", o.Topic, o.Partition, num(o.StartOffset), num(o.Lag), e)
	}
	tw.Flush()
}

func (a *app) shareGroupResetCommand() *cobra.Command {
	var earliest, latest bool
	var offset int64
	var topics []string
	cmd := &cobra.Command{
		Use:   "reset-offsets NAME --topic T [--topic T]... (--to-earliest | --to-latest | --to-offset N)",
		Short: "Set the start offsets of a share group that has no members",
		Long: `reset-offsets sets where a share group reads every partition of the named
topics: the start of each partition (--to-earliest), its end (--to-latest),
or an exact offset (--to-offset N, moved into the partition's log if outside
it). Records before it are never delivered; records from it on are delivered
again. As in Kafka, a share group with active members is refused.`,
		Args: groupName,
		RunE: func(cmd *cobra.Command, args []string) error {
			to, err := resetTarget(cmd, earliest, latest, offset)
			if err != nil {
				return err
			}
			if len(topics) == 0 {
				return usageErrorf("name the topics to reset with --topic")
			}
			if err := topicNames(topics); err != nil {
				return err
			}
			return a.withShareAdmin(cmd.Context(), func(ctx context.Context, adm *client.Admin) error {
				if err := a.topicsExist(ctx, adm, topics); err != nil {
					return err
				}
				rs, err := adm.ResetShareGroupOffsets(ctx, args[0], to, topics...)
				if err != nil {
					return notFound(args[0], err)
				}
				writeResets(a.stdout, args[0], rs)
				return nil
			})
		},
	}
	resetFlags(cmd, &earliest, &latest, &offset)
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "reset every partition of this topic (repeatable; required)")
	return cmd
}
