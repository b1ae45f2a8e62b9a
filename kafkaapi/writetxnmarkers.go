package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// startWriteTxnMarkers serves WriteTxnMarkers (versions 0-2), which a
// transaction coordinator sends to a partition's leader to end a
// producer's transaction there: each marker goes through the partition's
// replicated log (Partition.WriteTxnMarker) before it is answered. Like Produce, the
// markers are handed to their partitions in request order when the request
// starts; the responder waits for them, bounded by Config.RequestTimeout.
//
// It is an inter-broker API: as in Kafka it needs CLUSTER_ACTION on the
// cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED
// (without an authorizer every connection has it).
func (s *Server) startWriteTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest, received time.Time) responder {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	authorized := s.authorizeCluster(ctx, acl.OpClusterAction)
	var waits []markerWait
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for mi := range req.Markers {
		rm := &req.Markers[mi]
		sm := &resp.Markers[mi]
		*sm = kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = rm.ProducerID
		m := TxnMarker{ProducerID: rm.ProducerID, ProducerEpoch: rm.ProducerEpoch, Commit: rm.Committed,
			CoordinatorEpoch: rm.CoordinatorEpoch, TxnVersion: int16(rm.TransactionVersion)}
		sm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(rm.Topics))
		for ti := range rm.Topics {
			rt := &rm.Topics[ti]
			st := &sm.Topics[ti]
			*st = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			st.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(rt.Partitions))
			for pi, partition := range rt.Partitions {
				sp := &st.Partitions[pi]
				*sp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = partition
				if !authorized {
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					continue
				}
				wait, err := s.writeMarker(rt.Topic, partition, m)
				if err != nil {
					sp.ErrorCode = ErrorCode(err)
					continue
				}
				waits = append(waits, markerWait{resp: sp, wait: wait})
			}
		}
	}
	return func(ctx context.Context) (kmsg.Response, error) {
		ctx, cancel := context.WithDeadline(ctx, received.Add(s.cfg.RequestTimeout))
		defer cancel()
		for _, w := range waits {
			if _, err := w.wait(ctx); err != nil {
				w.resp.ErrorCode = ErrorCode(err)
			}
		}
		return resp, nil
	}
}

// markerWait is one partition's marker handed to its replica.
type markerWait struct {
	resp *kmsg.WriteTxnMarkersResponseMarkerTopicPartition
	wait ProduceWait
}

// writeMarker hands one marker to its partition's leader replica.
func (s *Server) writeMarker(topic string, partition int32, m TxnMarker) (ProduceWait, error) {
	p, err := s.backend.Partition(topic, partition)
	if err != nil {
		return nil, err
	}
	if !p.IsLeader() {
		return nil, kerr.NotLeaderForPartition
	}
	return p.WriteTxnMarker(m), nil
}
