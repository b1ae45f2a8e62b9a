package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// startInitProducerID asks the backend for a producer identity when its
// turn comes, after Kafka's own request checks.
func (s *Server) startInitProducerID(req *kmsg.InitProducerIDRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		id, err := s.initProducerID(ctx, req)
		if err != nil {
			resp.ErrorCode = ErrorCode(err)
			if resp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 4 {
				resp.ErrorCode = kerr.InvalidProducerEpoch.Code // before KIP-588
			}
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = id.ID, id.Epoch
		return resp, nil
	}
}

func (s *Server) initProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) (ProducerIdentity, error) {
	// Kafka refuses an empty transactional id, and a current identity
	// with only one of its two halves.
	if req.TransactionalID != nil && *req.TransactionalID == "" {
		return ProducerIdentity{}, kerr.InvalidRequest
	}
	if (req.ProducerID < 0) != (req.ProducerEpoch < 0) {
		return ProducerIdentity{}, kerr.InvalidRequest
	}
	// As Kafka: a transactional producer needs WRITE on its id; an
	// idempotent one IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
	if req.TransactionalID != nil {
		if !s.authorizeTxnID(ctx, acl.OpWrite, *req.TransactionalID) {
			return ProducerIdentity{}, kerr.TransactionalIDAuthorizationFailed
		}
	} else if !s.authorizeCluster(ctx, acl.OpIdempotentWrite) && !s.authorizeAny(ctx, acl.OpWrite, acl.ResourceTopic) {
		return ProducerIdentity{}, kerr.ClusterAuthorizationFailed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	return s.backend.InitProducerID(ctx, InitProducerIDRequest{
		TransactionalID:    req.TransactionalID,
		TransactionTimeout: time.Duration(req.TransactionTimeoutMillis) * time.Millisecond,
		ProducerID:         req.ProducerID,
		ProducerEpoch:      req.ProducerEpoch,
	})
}
