package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupMetadata identifies a consumer group member for
// SendOffsetsToTransaction (Kafka's ConsumerGroupMetadata). With
// Generation -1 and no MemberID the coordinator checks the group only.
type GroupMetadata struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID string // empty for a dynamic member
}

// GroupMetadata is the member's identity for SendOffsetsToTransaction:
// the coordinator refuses the offsets (an AbortableTxnError) if the
// generation has ended since.
func (g *GroupConsumer) GroupMetadata() GroupMetadata {
	g.mu.Lock()
	defer g.mu.Unlock()
	md := GroupMetadata{Group: g.cfg.group, Generation: g.generation, MemberID: g.memberID}
	if g.instanceID != nil {
		md.InstanceID = *g.instanceID
	}
	return md
}

// SendOffsetsToTransaction makes committing the group's offsets (by topic
// and partition: the next offset to read) part of the open transaction:
// AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to
// the group's coordinator, each retried while a coordinator moves or
// loads, until ctx ends. The offsets become the group's committed offsets
// only if the transaction commits. Any failure but a fatal one makes the
// transaction abortable (an AbortableTxnError).
func (p *Producer) SendOffsetsToTransaction(ctx context.Context, offsets map[string]map[int32]int64, group GroupMetadata) error {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if p.cfg.txnID == "" {
		return fmt.Errorf("%w: SendOffsetsToTransaction needs a TransactionalID producer", ErrTransactionState)
	}
	p.mu.Lock()
	err := p.usableLocked() // fatal, closed, no transaction or one that must abort
	if err == nil {
		p.txnMaybe = true
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	gc := newCoordinator(p.cl, group.Group)
	err = retryWhile(ctx, p.cfg, txnRetriable, func(ctx context.Context) error {
		// The group's coordinator first: finding it makes the broker create
		// the offsets topic, which AddOffsetsToTxn needs.
		if _, err := gc.find(ctx); err != nil {
			return err
		}
		id := p.currentID()
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.cfg.txnID, id.id, id.epoch, group.Group
		return p.txnRequest(ctx, req, func(r kmsg.Response) error {
			return kafkaErr(r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
		})
	})
	if err == nil {
		p.mu.Lock()
		p.txnGroups = true
		p.mu.Unlock()
		err = retryWhile(ctx, p.cfg, txnRetriable, func(ctx context.Context) error {
			return p.txnOffsetCommit(ctx, gc, offsets, group)
		})
	}
	if err != nil {
		return p.endFailed(fmt.Errorf("send offsets of group %q: %w", group.Group, err), true)
	}
	return nil
}

// txnOffsetCommit sends one TxnOffsetCommit to the group's coordinator.
func (p *Producer) txnOffsetCommit(ctx context.Context, gc *coordinator, offsets map[string]map[int32]int64, g GroupMetadata) error {
	id := p.currentID()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.cfg.txnID, g.Group, id.id, id.epoch
	req.Generation, req.MemberID = g.Generation, g.MemberID
	if g.InstanceID != "" {
		inst := g.InstanceID
		req.InstanceID = &inst
	}
	topics := make([]string, 0, len(offsets))
	for t := range offsets {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = t
		for part, off := range offsets[t] {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = part, off, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		slices.SortFunc(rt.Partitions, func(a, b kmsg.TxnOffsetCommitRequestTopicPartition) int { return int(a.Partition - b.Partition) })
		req.Topics = append(req.Topics, rt)
	}
	resp, err := gc.request(ctx, classDefault, req, 0)
	if err != nil {
		return err
	}
	for _, rt := range resp.(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			if err := kafkaErr(rp.ErrorCode, nil); err != nil {
				gc.noteErr(err)
				return fmt.Errorf("%s[%d]: %w", rt.Topic, rp.Partition, err)
			}
		}
	}
	return nil
}
