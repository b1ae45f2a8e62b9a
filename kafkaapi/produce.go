package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/record"
)

// producing is one partition of a Produce request whose batch has been
// handed to the backend.
type producing struct {
	resp *kmsg.ProduceResponseTopicPartition
	wait ProduceWait
}

// startProduce checks every partition's batch and hands the good ones to
// their partitions, in request order, before returning. The responder
// waits for the outcomes, bounded by the request's TimeoutMillis.
func (s *Server) startProduce(req *kmsg.ProduceRequest, received time.Time) responder {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksOK := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	var waits []producing
	failed := false
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		*st = kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			if !acksOK {
				// Nothing is proposed for any partition.
				setProduceError(req.Version, sp, kerr.InvalidRequiredAcks)
				failed = true
				continue
			}
			wait, err := s.produceOne(rt.Topic, rp, req.Acks)
			if err != nil {
				setProduceError(req.Version, sp, err)
				failed = true
				continue
			}
			waits = append(waits, producing{resp: sp, wait: wait})
		}
	}
	timeout := time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond
	acks := req.Acks
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithDeadline(ctx, received.Add(timeout))
		defer cancel()
		for _, w := range waits {
			res, err := w.wait(ctx)
			if err != nil {
				setProduceError(req.Version, w.resp, err)
				failed = true
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
		return resp, nil
	}
}

// produceOne checks one partition's records and hands them to its replica.
func (s *Server) produceOne(topic string, rp *kmsg.ProduceRequestTopicPartition, acks int16) (ProduceWait, error) {
	p, err := s.backend.Partition(topic, rp.Partition)
	if err != nil {
		return nil, err
	}
	if !p.IsLeader() {
		return nil, kerr.NotLeaderForPartition
	}
	// Exactly one whole batch with a good CRC, and not a control batch:
	// CheckProduce's length check also rejects two batches, or one with
	// trailing bytes.
	h, err := record.CheckProduce(rp.Records)
	if err != nil {
		return nil, err
	}
	// Its header's record count must be the records it holds: the log
	// gives the batch that many offsets. The FSM trusts the header, so the
	// leader checks this once, here.
	if err := record.CheckRecordCount(rp.Records, h); err != nil {
		return nil, err
	}
	return p.Produce(rp.Records, acks), nil
}

func setProduceError(version int16, sp *kmsg.ProduceResponseTopicPartition, err error) {
	sp.ErrorCode = ErrorCode(err)
	sp.BaseOffset = -1
	sp.LogStartOffset = -1
	if version >= 8 {
		sp.ErrorMessage = errorMessage(err)
	}
}
