package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

// consumeGroup consumes topic as a member of group. After each batch is
// printed it commits the offset after the last record printed of each
// partition (Kafka's committed offset: the next one to read), so that the
// group's next member continues exactly after what was printed, even when
// -n cuts a batch short. Close then leaves the group.
func (a *app) consumeGroup(parent context.Context, topic, group string, spec consumeSpec) error {
	ctx, cancel := a.start(parent, true, true)
	defer cancel()
	n, err := a.partitionCount(ctx, topic, -1)
	if err != nil {
		return err
	}
	if note := a.startNote(ctx, group, topic, n, spec.fromBeginning); note != "" {
		fmt.Fprintln(a.stderr, note)
	}
	reset := client.AtEnd()
	if spec.fromBeginning {
		reset = client.AtStart()
	}
	g, err := client.NewGroupConsumer(a.clientOpts(client.ConsumerGroup(group), client.ConsumeTopics(topic),
		client.ConsumeResetOffset(reset), client.AutoCommit(false), client.GroupProtocol(spec.protocol))...)
	if err != nil {
		return err
	}
	c := &printCommitter{a: a, g: g, parent: parent, pending: map[string]map[int32]int64{}}
	count := 0
	if spec.idle > 0 {
		err = awaitJoin(ctx, g)
		if parent.Err() != nil {
			err = nil // interrupted while joining: a normal end, as in printRecords
		} else if err != nil {
			err = a.explain(ctx, fmt.Errorf("joining group %q: %w", group, err))
		}
	}
	if err == nil && parent.Err() == nil {
		count, err = a.printRecords(parent, g, spec, c.printed)
	}
	if err == nil {
		err = c.commit()
	}
	err = unsupportedGroups(err)
	cctx, ccancel := a.afterCtx(parent)
	defer ccancel()
	if cerr := g.Close(cctx); cerr != nil && err == nil {
		err = fmt.Errorf("leaving group %q: %w", group, a.explain(cctx, cerr))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "consumed %d %s\n", count, plural(count, "record"))
	return nil
}

// joinPoll is how often awaitJoin looks whether the member has joined.
const joinPoll = 20 * time.Millisecond

// awaitJoin waits until g has joined its group (it has a generation), so
// that --idle-timeout does not count the join: a new group's first one
// waits for group_initial_rebalance_delay, 3 s by default.
func awaitJoin(ctx context.Context, g *client.GroupConsumer) error {
	t := time.NewTicker(joinPoll)
	defer t.Stop()
	for {
		if _, gen := g.Member(); gen >= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// startNote says where a group consumer of topic (n partitions) starts:
// from the group's committed offsets where it has some, elsewhere at the
// end, or the start with --from-beginning. Empty when the group's offsets
// cannot be read: consuming then says what is wrong.
func (a *app) startNote(ctx context.Context, group, topic string, n int32, fromBeginning bool) string {
	adm, err := a.admin()
	if err != nil {
		return ""
	}
	defer adm.Close()
	offs, err := adm.GroupOffsets(ctx, group)
	if err != nil && !errors.Is(err, client.ErrGroupIDNotFound) {
		return ""
	}
	var committed []string
	for _, o := range offs {
		if o.Topic == topic && o.Committed >= 0 {
			committed = append(committed, strconv.Itoa(int(o.Partition)))
		}
	}
	where := "the end of each partition (only new records; --from-beginning reads from the start)"
	others := "the end (only new records)"
	if fromBeginning {
		where, others = "the start of each partition (--from-beginning)", "the start (--from-beginning)"
	}
	switch {
	case len(committed) == 0:
		return fmt.Sprintf("group %q has no committed offsets on %q: starting at %s", group, topic, where)
	case len(committed) < int(n):
		return fmt.Sprintf("group %q continues from its committed offsets on %q (%s %s); the others start at %s",
			group, topic, plural(len(committed), "partition"), strings.Join(committed, ", "), others)
	}
	note := fmt.Sprintf("group %q continues from its committed offsets on %q (%s %s)",
		group, topic, plural(len(committed), "partition"), strings.Join(committed, ", "))
	if fromBeginning {
		note += "; --from-beginning applies only where there is none (group reset-offsets --to-earliest rereads)"
	}
	return note
}

// afterCtx is a context for the work after an interrupt (the last commit,
// leaving the group): not ended by parent, bounded by --timeout.
func (a *app) afterCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), a.timeout)
}

// printCommitter commits the offsets after printed records.
type printCommitter struct {
	a       *app
	g       *client.GroupConsumer
	parent  context.Context
	pending map[string]map[int32]int64 // offsets printed but not yet committed
}

// printed records what was printed and commits it. A commit that fails
// because the group is rebalancing is tried again after the next batch,
// for the partitions the member still owns.
func (c *printCommitter) printed(recs []*client.Record) error {
	for _, r := range recs {
		if c.pending[r.Topic] == nil {
			c.pending[r.Topic] = map[int32]int64{}
		}
		c.pending[r.Topic][r.Partition] = r.Offset + 1
	}
	err := c.commit()
	if err != nil && (client.IsRetriable(err) || isRebalance(err)) {
		fmt.Fprintf(c.a.stderr, "minikafka: %v (tried again after the next batch)\n", err)
		return nil
	}
	return err
}

// commit commits the pending offsets of the partitions still owned.
func (c *printCommitter) commit() error {
	owned := c.g.Assigned()
	for topic, ps := range c.pending {
		for p := range ps {
			if !slices.Contains(owned[topic], p) {
				delete(ps, p) // revoked: its new owner continues from the last commit
			}
		}
		if len(ps) == 0 {
			delete(c.pending, topic)
		}
	}
	if len(c.pending) == 0 {
		return nil
	}
	ctx, cancel := c.a.afterCtx(c.parent)
	defer cancel()
	if err := c.g.Commit(ctx, c.pending); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	c.pending = map[string]map[int32]int64{}
	return nil
}

// isRebalance reports whether a commit failed because the member's
// generation ended or is ending: it will rejoin by itself.
func isRebalance(err error) bool {
	for _, e := range []error{client.ErrRebalanceInProgress, client.ErrIllegalGeneration, client.ErrUnknownMemberID, client.ErrNotGroupMember} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
