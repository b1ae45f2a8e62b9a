package kafkaapi

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/errgroup"

	"github.com/minikafka/minikafka-go/acl"
)

// Transactions is the Backend role that serves producer ids and the
// transaction coordinator's APIs. Errors are Kafka's, as for Groups. A
// node that runs no transaction coordinators answers
// kerr.CoordinatorNotAvailable from TxnCoordinatorNode and
// TxnCoordinator, and no coordinators from TxnCoordinators.
type Transactions interface {
	// InitProducerID allocates a producer id (idempotent producer) or,
	// for a transactional id, returns that id's producer id with its
	// epoch bumped, which fences the previous holder (docs/contract.md
	// B5). Ids are never reused. ctx carries the server's request
	// timeout.
	InitProducerID(ctx context.Context, req InitProducerIDRequest) (ProducerIdentity, error)
	// TxnCoordinatorNode returns the node that coordinates a
	// transactional id now.
	TxnCoordinatorNode(ctx context.Context, transactionalID string) (int32, error)
	// TxnCoordinator returns this node's coordinator of a transactional
	// id: kerr.NotCoordinator if another node coordinates it,
	// kerr.CoordinatorLoadInProgress while this node takes over.
	TxnCoordinator(ctx context.Context, transactionalID string) (TxnCoordinator, error)
	// TxnCoordinators returns every transaction coordinator this node
	// runs, for ListTransactions, and kerr.CoordinatorLoadInProgress with
	// them while one loads.
	TxnCoordinators() ([]TxnCoordinator, error)
	// TxnVerifier verifies transactional batches on Produce.
	TxnVerifier
}

// TxnCoordinator serves the transactional ids of one coordinator (in the
// broker, one partition of __transaction_state). Each request-shaped
// method answers at the request's version once what it changed is
// committed.
type TxnCoordinator interface {
	AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse
	// AddPartitionsToTxnTransaction answers one transaction of an
	// AddPartitionsToTxn v4-5 (version), the brokers' form (KIP-890): with
	// VerifyOnly it only reports whether each partition is in the ongoing
	// transaction (INVALID_TXN_STATE if not), else it adds them (at v5 to
	// a transaction of version 2).
	AddPartitionsToTxnTransaction(ctx context.Context, t *kmsg.AddPartitionsToTxnRequestTransaction, version int16) kmsg.AddPartitionsToTxnResponseTransaction
	AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse
	EndTxnRequest(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse
	// DescribeTransaction answers one id of a DescribeTransactions.
	DescribeTransaction(id string) kmsg.DescribeTransactionsResponseTransactionState
	// ListTransactions lists the coordinator's transactions, filtered by
	// state names and producer ids when those are not empty and by
	// running for at least minDurationMillis when it is not negative.
	ListTransactions(states []string, pids []int64, minDurationMillis int64) []kmsg.ListTransactionsResponseTransactionState
}

// txnCoordinator returns this node's coordinator of a transactional id,
// bounding the lookup by the request timeout, once the client may do op
// on the id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED). op 0 skips the
// check.
func (s *Server) txnCoordinator(ctx context.Context, id string, op acl.Operation) (TxnCoordinator, error) {
	if op != 0 && !s.authorizeTxnID(ctx, op, id) {
		return nil, kerr.TransactionalIDAuthorizationFailed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	return s.backend.TxnCoordinator(ctx, id)
}

// startAddPartitionsToTxn answers AddPartitionsToTxn 0-3, and v4-5 with
// addPartitionsToTxnBrokers from its start (startAsync); a routing error
// is every partition's error.
func (s *Server) startAddPartitionsToTxn(req *kmsg.AddPartitionsToTxnRequest, rc requestInfo) responder {
	if req.Version >= 4 {
		return s.startAsync(rc, kmsg.AddPartitionsToTxn, func(ctx context.Context, guarded func(func() error) error) (kmsg.Response, error) {
			return s.addPartitionsToTxnBrokers(ctx, req, guarded)
		})
	}
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.txnCoordinator(ctx, req.TransactionalID, acl.OpWrite)
		_, denied := splitTopics(s, ctx, acl.OpWrite, req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) string { return t.Topic })
		if err == nil && len(denied) == 0 {
			return c.AddPartitionsToTxn(ctx, req), nil
		}
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			e := err
			if e == nil { // as Kafka: the denied topics fail, the others are not attempted
				e = kerr.OperationNotAttempted
				if slices.ContainsFunc(denied, func(d kmsg.AddPartitionsToTxnRequestTopic) bool { return d.Topic == t.Topic }) {
					e = kerr.TopicAuthorizationFailed
				}
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, ErrorCode(e)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// addPartitionsToTxnBrokers answers AddPartitionsToTxn v4-5, which
// partition leaders send to verify transactions (KIP-890). It runs as the
// request arrives (startAsync), and its transactions at once, up to
// brokersTxnsAtOnce: a coordinator may hold one until the previous
// transaction's markers are written, and the requests and transactions
// behind it, of other producers, need not wait for that. Each transaction
// goes to its coordinator on this node (on a goroutine run by guarded),
// and a routing error (NOT_COORDINATOR, ...) is each of its partitions'
// error. As in Kafka, v4 needs CLUSTER_ACTION on the cluster (else the
// response's error is CLUSTER_AUTHORIZATION_FAILED).
func (s *Server) addPartitionsToTxnBrokers(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest, guarded func(func() error) error) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if !s.authorizeCluster(ctx, acl.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	var g errgroup.Group
	g.SetLimit(brokersTxnsAtOnce)
	for i := range req.Transactions {
		g.Go(func() error {
			return guarded(func() error {
				resp.Transactions[i] = s.addBrokersTxn(ctx, &req.Transactions[i], req.Version)
				return nil
			})
		})
	}
	return resp, g.Wait() // a panic's error: the connection closes
}

// brokersTxnsAtOnce bounds the transactions of one AddPartitionsToTxn
// v4-5 served at once.
const brokersTxnsAtOnce = 16

// addBrokersTxn answers one transaction of an AddPartitionsToTxn v4-5.
func (s *Server) addBrokersTxn(ctx context.Context, t *kmsg.AddPartitionsToTxnRequestTransaction, version int16) kmsg.AddPartitionsToTxnResponseTransaction {
	c, err := s.txnCoordinator(ctx, t.TransactionalID, 0)
	if err == nil {
		return c.AddPartitionsToTxnTransaction(ctx, t, version)
	}
	rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rt.TransactionalID = t.TransactionalID
	for _, tt := range t.Topics {
		topic := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		topic.Topic = tt.Topic
		for _, p := range tt.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p, ErrorCode(err)
			topic.Partitions = append(topic.Partitions, rp)
		}
		rt.Topics = append(rt.Topics, topic)
	}
	return rt
}

func (s *Server) startAddOffsetsToTxn(req *kmsg.AddOffsetsToTxnRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.txnCoordinator(ctx, req.TransactionalID, acl.OpWrite)
		if err == nil && !s.authorizeGroup(ctx, acl.OpRead, req.Group) {
			err = kerr.GroupAuthorizationFailed
		}
		if err != nil {
			resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		return c.AddOffsetsToTxn(ctx, req), nil
	}
}

func (s *Server) startEndTxn(req *kmsg.EndTxnRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		c, err := s.txnCoordinator(ctx, req.TransactionalID, acl.OpWrite)
		if err != nil {
			resp := req.ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode = ErrorCode(err)
			return resp, nil
		}
		return c.EndTxnRequest(ctx, req), nil
	}
}

// startTxnOffsetCommit answers TxnOffsetCommit 0-5 from the group's
// coordinator; a routing error is every partition's error, and so is a
// missing WRITE on the transactional id or READ on the group. From v5
// (transactions v2) the group's offsets partition is first added to the
// transaction (TxnAdder), as Kafka's group coordinator does, so the client
// sends no AddOffsetsToTxn.
func (s *Server) startTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		var c GroupCoordinator
		err := error(kerr.TransactionalIDAuthorizationFailed)
		if s.authorizeTxnID(ctx, acl.OpWrite, req.TransactionalID) {
			c, err = s.coordinator(ctx, req.Group, acl.OpRead)
		}
		if adder, ok := s.backend.(TxnAdder); ok && err == nil && req.Version >= 5 {
			actx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			err = txnOffsetsAddError(adder.AddTxnOffsets(actx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group))
			cancel()
		}
		if err == nil {
			return s.txnOffsetCommit(ctx, c, req), nil
		}
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, ErrorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
}

// txnOffsetsAddError is a TxnOffsetCommit's answer when its offsets
// partition could not be added to the transaction: the coordinator's own
// error, except that one which leaves the outcome open (markers being
// written, no coordinator or one loading) is COORDINATOR_NOT_AVAILABLE,
// which clients retry, as Kafka's group coordinator normalizes it.
func txnOffsetsAddError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.ConcurrentTransactions), errors.Is(err, kerr.CoordinatorLoadInProgress),
		errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.NotEnoughReplicas):
		return fmt.Errorf("%w: adding the offsets partition to the transaction: %w", kerr.CoordinatorNotAvailable, err)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%w: adding the offsets partition to the transaction: %w", kerr.CoordinatorNotAvailable, err)
}

// txnOffsetCommit commits the offsets of the topics the client may READ;
// the others answer TOPIC_AUTHORIZATION_FAILED, as in Kafka.
func (s *Server) txnOffsetCommit(ctx context.Context, tc GroupCoordinator, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	allowed, denied := splitTopics(s, ctx, acl.OpRead, req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic })
	if len(denied) == 0 {
		return tc.TxnOffsetCommit(ctx, req)
	}
	cp := *req
	cp.Topics = allowed
	resp := tc.TxnOffsetCommit(ctx, &cp)
	for _, t := range denied {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// startDescribeTransactions answers DescribeTransactions 0 for each id
// from its coordinator on this node (NOT_COORDINATOR if none), leaving out
// the partitions of topics the client may not DESCRIBE, as Kafka does.
func (s *Server) startDescribeTransactions(req *kmsg.DescribeTransactionsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range req.TransactionalIDs {
			c, err := s.txnCoordinator(ctx, id, acl.OpDescribe)
			if err != nil {
				st := kmsg.NewDescribeTransactionsResponseTransactionState()
				st.TransactionalID, st.ErrorCode, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, ErrorCode(err), -1, -1, -1
				resp.TransactionStates = append(resp.TransactionStates, st)
				continue
			}
			st := c.DescribeTransaction(id)
			var topics []kmsg.DescribeTransactionsResponseTransactionStateTopic
			for _, t := range st.Topics {
				if s.authorizeTopic(ctx, acl.OpDescribe, t.Topic) {
					topics = append(topics, t)
				}
			}
			st.Topics = topics
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp, nil
	}
}

// knownTxnStates are the states ListTransactions filters by.
var knownTxnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
	"CompleteAbort", "Dead", "PrepareEpochFence"}

// maxTxnIDPattern bounds the TransactionalIDPattern a ListTransactions
// may send, and so what compiling it costs.
const maxTxnIDPattern = 4096

// startListTransactions answers ListTransactions 0-2 with this node's
// coordinators' transactions, as Kafka does (a client asks every broker);
// v2 keeps the ids its RE2 pattern matches (anywhere in the id, as Java's
// Matcher.find does), INVALID_REGULAR_EXPRESSION for a bad pattern.
func (s *Server) startListTransactions(req *kmsg.ListTransactionsRequest, _ time.Time) responder {
	return func(ctx context.Context) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
		var pattern *regexp.Regexp
		if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
			if len(*req.TransactionalIDPattern) <= maxTxnIDPattern {
				pattern, _ = regexp.Compile(*req.TransactionalIDPattern) // nil when invalid
			}
			if pattern == nil {
				resp.ErrorCode = kerr.InvalidRegularExpression.Code
				return resp, nil
			}
		}
		for _, st := range req.StateFilters {
			if !slices.Contains(knownTxnStates, st) {
				resp.UnknownStateFilters = append(resp.UnknownStateFilters, st)
			}
		}
		coords, err := s.backend.TxnCoordinators()
		resp.ErrorCode = ErrorCode(err)
		duration := int64(-1)
		if req.Version >= 1 {
			duration = req.DurationFilterMillis
		}
		for _, c := range coords {
			for _, st := range c.ListTransactions(req.StateFilters, req.ProducerIDFilters, duration) {
				if (pattern == nil || pattern.MatchString(st.TransactionalID)) && s.authorizeTxnID(ctx, acl.OpDescribe, st.TransactionalID) {
					resp.TransactionStates = append(resp.TransactionStates, st)
				}
			}
		}
		return resp, nil
	}
}
