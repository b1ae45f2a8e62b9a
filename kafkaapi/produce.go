package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
	"github.com/minikafka/minikafka-go/record"
)

// producing is one partition of a Produce request whose batch has been
// handed to the backend.
type producing struct {
	resp *kmsg.ProduceResponseTopicPartition
	wait ProduceWait
}

// produceBatch is one partition's batch of a Produce request that passed
// the checks, waiting to be handed to its partition.
type produceBatch struct {
	resp  *kmsg.ProduceResponseTopicPartition
	topic string
	batch []byte
	p     Partition
	h     record.Header
	// verified is set for a transactional batch whose transaction holds
	// the partition, to be proposed under guard (Partition.TxnVerified).
	// err is its verification's failure.
	verified bool
	guard    TxnGuard
	err      error
}

// produce hands the batch to its partition.
func (b *produceBatch) produce() ProduceWait {
	if b.verified {
		return b.p.ProduceVerified(b.batch, b.h.ProducerID, b.h.ProducerEpoch, b.guard)
	}
	return b.p.Produce(b.batch)
}

// startProduce checks every partition's batch, verifies the transactional
// ones, and hands the good ones to their partitions, in request order,
// before returning. A partition named more than once gets only its last
// batch (see collapse). The responder waits for the outcomes, bounded by
// the request's TimeoutMillis.
func (s *Server) startProduce(req *kmsg.ProduceRequest, rc requestInfo) responder {
	s.nameTopicsByID(req)
	req.Topics = collapse(req.Topics, produceTopics)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	failed := false
	fail := func(sp *kmsg.ProduceResponseTopicPartition, err error) {
		setProduceError(req.Version, sp, err)
		failed = true
	}
	batches := s.checkProduce(rc.connContext(), req, resp, fail)
	batches = s.verifyTxnBatches(rc.connContext(), req, batches, fail)
	waits := make([]producing, 0, len(batches))
	for i := range batches {
		waits = append(waits, producing{resp: batches[i].resp, wait: batches[i].produce()})
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	acks, received, conn := req.Acks, rc.received, rc.connContext()
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithDeadline(ctx, received.Add(timeout))
		defer cancel()
		for _, w := range waits {
			res, err := w.wait(ctx)
			if err != nil {
				fail(w.resp, err)
				continue
			}
			w.resp.BaseOffset = res.BaseOffset
			w.resp.LogStartOffset = res.LogStartOffset
			if res.LogAppendTime > 0 {
				w.resp.LogAppendTime = res.LogAppendTime
			}
		}
		if acks == 0 {
			if failed {
				return nil, errAcksZeroFailed
			}
			return nil, nil
		}
		s.addLeaderHints(conn, resp)
		return resp, nil
	}
}

// checkProduce lays out resp and returns the batches that pass the
// checks, in request order; fail answers the others. As in Kafka, a
// transactional Produce needs WRITE on its transactional id (else every
// partition fails TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each topic
// WRITE (else TOPIC_AUTHORIZATION_FAILED).
func (s *Server) checkProduce(ctx context.Context, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, fail func(*kmsg.ProduceResponseTopicPartition, error)) []produceBatch {
	acksOK := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	var txnErr error
	if req.TransactionID != nil && !s.authorizeTxnID(ctx, acl.OpWrite, *req.TransactionID) {
		txnErr = kerr.TransactionalIDAuthorizationFailed
	}
	var out []produceBatch
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		authErr := txnErr
		switch {
		case unknownTopicID(rt.Topic):
			authErr = errUnknownTopicID
		case authErr == nil && !s.authorizeTopic(ctx, acl.OpWrite, rt.Topic):
			authErr = kerr.TopicAuthorizationFailed
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			if !acksOK {
				// Nothing is proposed for any partition.
				fail(sp, kerr.InvalidRequiredAcks)
				continue
			}
			if authErr != nil {
				fail(sp, authErr)
				continue
			}
			p, h, err := s.checkBatch(rt.Topic, rp)
			if err != nil {
				fail(sp, err)
				continue
			}
			out = append(out, produceBatch{resp: sp, topic: rt.Topic, batch: rp.Records, p: p, h: h})
		}
	}
	return out
}

// checkBatch checks one partition's records and returns its replica.
func (s *Server) checkBatch(topic string, rp *kmsg.ProduceRequestTopicPartition) (Partition, record.Header, error) {
	p, err := s.backend.Partition(topic, rp.Partition)
	if err != nil {
		return nil, record.Header{}, err
	}
	if !p.IsLeader() {
		return nil, record.Header{}, kerr.NotLeaderForPartition
	}
	// Exactly one whole batch with a good CRC, and not a control batch:
	// CheckProduce's length check also rejects two batches, or one with
	// trailing bytes.
	h, err := record.CheckProduce(rp.Records)
	if err != nil {
		return nil, record.Header{}, err
	}
	// Its header's record count must be the records it holds: the log
	// gives the batch that many offsets. The FSM trusts the header, so the
	// leader checks this once, here.
	if err := record.CheckRecordCount(rp.Records, h); err != nil {
		return nil, record.Header{}, err
	}
	return p, h, nil
}

func setProduceError(version int16, sp *kmsg.ProduceResponseTopicPartition, err error) {
	sp.ErrorCode = ErrorCode(err)
	sp.BaseOffset = -1
	sp.LogStartOffset = -1
	if version >= 8 {
		sp.ErrorMessage = errorMessage(err)
	}
}
