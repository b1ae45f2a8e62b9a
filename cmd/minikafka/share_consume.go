package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

// consumeShareCommand checks the flags of consume --share-group and runs
// it.
func (a *app) consumeShareCommand(cmd *cobra.Command, topic, group, ack string, spec consumeSpec) error {
	fl := cmd.Flags()
	switch {
	case group == "":
		return usageErrorf("--share-group needs a group name (and --ack needs --share-group)")
	case fl.Changed("group") || fl.Changed("group-protocol"):
		return usageErrorf("--share-group cannot be used with --group or --group-protocol")
	case fl.Changed("partition"):
		return usageErrorf("--partition cannot be used with --share-group: the group assigns the partitions")
	case fl.Changed("from-beginning"):
		return usageErrorf("--from-beginning cannot be used with --share-group: a share group starts where its share.auto.offset.reset config says; share-group reset-offsets --to-earliest rereads")
	}
	kind, err := client.ParseAckKind(ack)
	if err != nil {
		return usageErrorf("--ack is accept, release or reject, got %q", ack)
	}
	return a.consumeShare(cmd.Context(), topic, group, kind, spec)
}

// consumeShare consumes topic as a member of share group. Each printed
// record is acknowledged with kind (and the acknowledgements committed)
// after its batch is printed; records fetched but not printed (-n cut the
// batch) are released for other members. Close then leaves the group.
func (a *app) consumeShare(parent context.Context, topic, group string, kind client.AckKind, spec consumeSpec) error {
	ctx, cancel := a.start(parent, true, true)
	defer cancel()
	if _, err := a.partitionCount(ctx, topic, -1); err != nil {
		return err
	}
	s, err := client.NewShareConsumer(a.clientOpts(client.ShareGroup(group), client.ConsumeTopics(topic))...)
	if err != nil {
		return err
	}
	p := &sharePrinter{a: a, s: s, parent: parent, kind: kind}
	count, err := a.printRecords(parent, p, spec, p.printed)
	cctx, ccancel := a.afterCtx(parent)
	defer ccancel()
	if cerr := s.Close(cctx); cerr != nil && err == nil {
		err = fmt.Errorf("leaving share group %q: %w", group, a.explain(cctx, cerr))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "consumed %d %s\n", count, plural(count, "record"))
	return nil
}

// sharePrinter adapts a ShareConsumer to printRecords and acknowledges
// what it printed.
type sharePrinter struct {
	a      *app
	s      *client.ShareConsumer
	parent context.Context
	kind   client.AckKind
	last   []*client.ShareRecord // what the last Poll returned
}

// Poll returns the records of the share consumer's next Poll.
func (p *sharePrinter) Poll(ctx context.Context) ([]*client.Record, error) {
	recs, err := p.s.Poll(ctx)
	p.last = recs
	out := make([]*client.Record, len(recs))
	for i, r := range recs {
		out[i] = &r.Record
	}
	return out, err
}

// printed acknowledges the printed records (a prefix of the last Poll's)
// with the chosen kind, releases the rest, and commits.
func (p *sharePrinter) printed(recs []*client.Record) error {
	var errs []error
	for i, r := range p.last {
		kind := p.kind
		if i >= len(recs) {
			kind = client.AckRelease // not printed: another member may have it
		}
		errs = append(errs, p.s.Acknowledge(r, kind))
	}
	p.last = nil
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ctx, cancel := p.a.afterCtx(p.parent)
	defer cancel()
	if _, err := p.s.CommitSync(ctx); err != nil {
		fmt.Fprintf(p.a.stderr, "minikafka: acknowledging: %v (the records will be delivered again)\n", err)
	}
	return nil
}
