package kafkaapi

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// responder produces a request's response when its turn to be answered
// comes, on the connection's writer. A nil response with a nil error writes
// no frame (acks=0 Produce); an error closes the connection.
type responder func(ctx context.Context) (kmsg.Response, error)

// started is a request that has been decoded and started and now waits for
// its turn to be answered.
type started struct {
	correlationID int32
	headerV1      bool // response header v1 (flexible), else v0
	reply         responder
	// closeAfter, when set, ends reading after this request; the
	// connection closes once it is answered. It wraps ErrProtocol.
	closeAfter error
	// key and received are the request's API key and arrival, for
	// Config.Observer (set by the reader).
	key      int16
	received time.Time
	// charge is what the request holds of the queued-bytes budget (set
	// by the reader, released by the writer).
	charge charge
	// quota is the request's part in client quotas; nil without
	// Config.Quotas (and for SASL and ApiVersions fallbacks).
	quota *reqQuota
}

// api is one supported API and the versions the server advertises.
type api struct {
	key      kmsg.Key
	min, max int16
}

const apiVersionsMax = 4

// apis lists the supported APIs, ordered by key (ApiVersions answers in
// this order). startAPI must handle each.
var apis = []api{
	{kmsg.Produce, 3, 13},
	{kmsg.Fetch, 4, 18},
	{kmsg.ListOffsets, 0, 11},
	{kmsg.Metadata, 0, 13},
	{kmsg.OffsetCommit, 0, 10},
	{kmsg.OffsetFetch, 0, 10},
	{kmsg.FindCoordinator, 0, 6},
	{kmsg.JoinGroup, 0, 9},
	{kmsg.Heartbeat, 0, 4},
	{kmsg.LeaveGroup, 0, 5},
	{kmsg.SyncGroup, 0, 5},
	{kmsg.DescribeGroups, 0, 6},
	{kmsg.ListGroups, 0, 5},
	// v0 is listed because librdkafka detects SASL support by it, but
	// its unframed tokens are not supported: see connAuth.handshake.
	{kmsg.SASLHandshake, 0, 1},
	{kmsg.ApiVersions, 0, apiVersionsMax},
	{kmsg.CreateTopics, 0, 7},
	{kmsg.DeleteTopics, 0, 6},
	{kmsg.DeleteRecords, 0, 2},
	{kmsg.InitProducerID, 0, 5},
	{kmsg.OffsetForLeaderEpoch, 0, 4},
	{kmsg.AddPartitionsToTxn, 0, 5},
	{kmsg.AddOffsetsToTxn, 0, 4},
	{kmsg.EndTxn, 0, 5},
	{kmsg.WriteTxnMarkers, 0, 2},
	{kmsg.TxnOffsetCommit, 0, 5},
	{kmsg.DescribeACLs, 0, 3},
	{kmsg.CreateACLs, 0, 3},
	{kmsg.DeleteACLs, 0, 3},
	{kmsg.DescribeConfigs, 0, 4},
	{kmsg.AlterConfigs, 0, 2},
	{kmsg.DescribeLogDirs, 1, 5},
	{kmsg.SASLAuthenticate, 0, 2},
	{kmsg.CreatePartitions, 0, 3},
	{kmsg.CreateDelegationToken, 0, 3},
	{kmsg.RenewDelegationToken, 0, 2},
	{kmsg.ExpireDelegationToken, 0, 2},
	{kmsg.DescribeDelegationToken, 0, 3},
	{kmsg.DeleteGroups, 0, 2},
	{kmsg.ElectLeaders, 0, 2},
	{kmsg.IncrementalAlterConfigs, 0, 1},
	{kmsg.AlterPartitionAssignments, 0, 1},
	{kmsg.ListPartitionReassignments, 0, 0},
	{kmsg.OffsetDelete, 0, 0},
	{kmsg.DescribeClientQuotas, 0, 1},
	{kmsg.AlterClientQuotas, 0, 1},
	{kmsg.DescribeUserSCRAMCredentials, 0, 0},
	{kmsg.AlterUserSCRAMCredentials, 0, 0},
	{kmsg.DescribeQuorum, 0, 2},
	{kmsg.UpdateFeatures, 0, 2},
	{kmsg.DescribeCluster, 0, 2},
	{kmsg.DescribeProducers, 0, 0},
	{kmsg.DescribeTransactions, 0, 0},
	{kmsg.ListTransactions, 0, 2},
	{kmsg.ConsumerGroupHeartbeat, 0, 1},
	{kmsg.ConsumerGroupDescribe, 0, 1},
	{kmsg.ListConfigResources, 0, 1},
	{kmsg.DescribeTopicPartitions, 0, 0},
	{kmsg.ShareGroupHeartbeat, 1, 1},
	{kmsg.ShareGroupDescribe, 1, 1},
	{kmsg.ShareFetch, 0, 2},
	{kmsg.ShareAcknowledge, 0, 2},
	{kmsg.ReadShareGroupState, 0, 0},
	{kmsg.WriteShareGroupState, 0, 1},
	{kmsg.DescribeShareGroupOffsets, 0, 1},
	{kmsg.AlterShareGroupOffsets, 0, 0},
	{kmsg.DeleteShareGroupOffsets, 0, 0},
}

// requestInfo is what the server knows of a request besides its body.
type requestInfo struct {
	received time.Time
	clientID string // the request header's client id
	host     string // the client's IP address, as Kafka shows it
	// conn ends when the connection closes; nil means never. Only work
	// done while the request starts (Produce's verification) uses it.
	conn context.Context
	// mute is the connection's throttle gate (nil: none), and quota the
	// request's part in client quotas (nil without Config.Quotas).
	mute  *muteGate
	quota *reqQuota
	// work owns the goroutines of the connection's requests started by
	// startAsync (nil without a connection).
	work *sync.WaitGroup
}

// connContext is the connection's context, or a background one.
func (rc requestInfo) connContext() context.Context {
	if rc.conn == nil {
		return context.Background()
	}
	return rc.conn
}

// startAsync runs work on a goroutine of its own at once and answers
// with its response when the connection's turn comes, so that the next
// requests start meanwhile instead of waiting for it, as the writer
// answers in order: for what other nodes send many of on one connection
// (a partition leader's AddPartitionsToTxn). At most MaxInFlight run per
// connection (the reader's slots); the connection waits for them before
// it ends, and their context ends with it. A panic in work, or in the
// goroutines work runs f on with guarded, is guarded as on the reader and
// the writer (Server.guard): work's error then closes the connection when
// the answer is due. Without a connection (work nil) work runs when the
// answer is due.
func (s *Server) startAsync(rc requestInfo, key kmsg.Key, work func(ctx context.Context, guarded func(f func() error) error) (kmsg.Response, error)) responder {
	guarded := func(f func() error) error { return s.guard(int16(key), rc.host, f) }
	run := func(ctx context.Context) (resp kmsg.Response, err error) {
		err = guarded(func() error {
			resp, err = work(ctx, guarded)
			return err
		})
		return resp, err
	}
	if rc.work == nil {
		return run
	}
	ctx := rc.connContext()
	var resp kmsg.Response
	var err error
	done := make(chan struct{})
	rc.work.Go(func() {
		defer close(done)
		resp, err = run(ctx)
	})
	return func(ctx context.Context) (kmsg.Response, error) {
		select {
		case <-done:
			return resp, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// startAPI begins a decoded request on the connection's reader. It must
// not block for long; see the package doc.
func (s *Server) startAPI(req kmsg.Request, rc requestInfo) responder {
	received := rc.received
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		return s.startProduce(req, rc)
	case *kmsg.FetchRequest:
		return s.startFetch(req, received)
	case *kmsg.ListOffsetsRequest:
		return s.startListOffsets(req, received)
	case *kmsg.MetadataRequest:
		return s.startMetadata(req, received)
	case *kmsg.ApiVersionsRequest:
		return s.startAPIVersions(req, received)
	case *kmsg.CreateTopicsRequest:
		return s.startCreateTopics(req, rc.quota.mutations())
	case *kmsg.InitProducerIDRequest:
		return s.startInitProducerID(req, received)
	case *kmsg.OffsetForLeaderEpochRequest:
		return s.startOffsetForLeaderEpoch(req, received)
	case *kmsg.DescribeConfigsRequest:
		return s.startDescribeConfigs(req, received)
	case *kmsg.AlterConfigsRequest:
		return s.startAlterConfigs(req, received)
	case *kmsg.IncrementalAlterConfigsRequest:
		return s.startIncrementalAlterConfigs(req, received)
	case *kmsg.DescribeClusterRequest:
		return s.startDescribeCluster(req, received)
	case *kmsg.FindCoordinatorRequest:
		return s.startFindCoordinator(req, received)
	case *kmsg.CreatePartitionsRequest:
		return s.startCreatePartitions(req, rc.quota.mutations())
	case *kmsg.DeleteTopicsRequest:
		return s.startDeleteTopics(req, rc.quota.mutations())
	case *kmsg.DeleteRecordsRequest:
		return s.startDeleteRecords(req, received)
	case *kmsg.WriteTxnMarkersRequest:
		return s.startWriteTxnMarkers(rc.connContext(), req, received)
	case *kmsg.AddPartitionsToTxnRequest:
		return s.startAddPartitionsToTxn(req, rc)
	case *kmsg.AddOffsetsToTxnRequest:
		return s.startAddOffsetsToTxn(req, received)
	case *kmsg.EndTxnRequest:
		return s.startEndTxn(req, received)
	case *kmsg.TxnOffsetCommitRequest:
		return s.startTxnOffsetCommit(req, received)
	case *kmsg.DescribeTransactionsRequest:
		return s.startDescribeTransactions(req, received)
	case *kmsg.ListTransactionsRequest:
		return s.startListTransactions(req, received)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return s.startDescribeUserScram(req, received)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return s.startAlterUserScram(req, received)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return s.startAlterReassignments(req, received)
	case *kmsg.ListPartitionReassignmentsRequest:
		return s.startListReassignments(req, received)
	case *kmsg.CreateACLsRequest:
		return s.startCreateACLs(req, received)
	case *kmsg.DescribeACLsRequest:
		return s.startDescribeACLs(req, received)
	case *kmsg.DeleteACLsRequest:
		return s.startDeleteACLs(req, received)
	case *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest:
		return answered(illegalSASLState(req))
	}
	if r := s.startGroupAPI(req, rc); r != nil {
		return r
	}
	if r := s.startToolAPI(req, rc); r != nil {
		return r
	}
	if r := s.startTokenAPI(req, received); r != nil {
		return r
	}
	// Unreachable while apis and this switch agree (a test checks it);
	// close the connection rather than crash the node.
	unsupported := &UnsupportedRequestError{Key: req.Key(), Version: req.GetVersion()}
	return func(context.Context) (kmsg.Response, error) { return nil, unsupported }
}

func lookupAPI(key int16) (api, bool) {
	for _, a := range apis {
		if int16(a.key) == key {
			return a, true
		}
	}
	return api{}, false
}

// startRequest decodes one frame and starts the request it holds. An error
// means the connection must be closed.
func (s *Server) startRequest(frame []byte, rc requestInfo) (started, error) {
	h, err := peekHeader(frame)
	if err != nil {
		return started{}, err
	}
	if h.Key == int16(kmsg.ApiVersions) && h.Version > apiVersionsMax {
		// Kafka answers an ApiVersions version it does not know with a
		// v0 body, without reading the request, so that the client can
		// retry at a version both sides know.
		return started{correlationID: h.CorrelationID, reply: unsupportedAPIVersions}, nil
	}
	begun := time.Now()
	req, clientID, err := decodeRequest(frame, h)
	if err != nil {
		return started{}, err
	}
	rc.clientID = clientID
	if s.cfg.Quotas != nil {
		rc.quota = s.startQuota(req, clientID, rc, len(frame))
	}
	st := started{
		correlationID: h.CorrelationID,
		// ApiVersions responses always use header v0 (KIP-511), so that
		// a client that does not yet know the version can read them.
		headerV1: req.IsFlexible() && h.Key != int16(kmsg.ApiVersions),
		reply:    s.startAPI(req, rc),
		quota:    rc.quota,
	}
	if st.quota != nil {
		st.quota.handled = time.Since(begun)
	}
	return st, nil
}

// decodeRequest decodes a frame whose header is h, if the server supports
// its API and version.
func decodeRequest(frame []byte, h requestHeader) (req kmsg.Request, clientID string, err error) {
	a, ok := lookupAPI(h.Key)
	if !ok || h.Version < a.min || h.Version > a.max {
		return nil, "", &UnsupportedRequestError{Key: h.Key, Version: h.Version}
	}
	req = kmsg.RequestForKey(h.Key)
	req.SetVersion(h.Version)
	body, clientID, err := requestBody(frame, req.IsFlexible())
	if err != nil {
		return nil, "", &DecodeError{Key: h.Key, Version: h.Version, Err: err}
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, "", &DecodeError{Key: h.Key, Version: h.Version, Err: err}
	}
	return req, clientID, nil
}

// startGroupAPI starts a request of the group APIs (groupapis.go), or
// returns nil if req is of another API.
func (s *Server) startGroupAPI(req kmsg.Request, rc requestInfo) responder {
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		return s.startJoinGroup(req, rc)
	case *kmsg.SyncGroupRequest:
		return s.startSyncGroup(req)
	case *kmsg.HeartbeatRequest:
		return s.startHeartbeat(req)
	case *kmsg.LeaveGroupRequest:
		return s.startLeaveGroup(req)
	case *kmsg.OffsetCommitRequest:
		return s.startOffsetCommit(req)
	case *kmsg.OffsetFetchRequest:
		return s.startOffsetFetch(req)
	case *kmsg.OffsetDeleteRequest:
		return s.startOffsetDelete(req)
	case *kmsg.DescribeGroupsRequest:
		return s.startDescribeGroups(req)
	case *kmsg.ListGroupsRequest:
		return s.startListGroups(req)
	case *kmsg.DeleteGroupsRequest:
		return s.startDeleteGroups(req)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return s.startConsumerGroupHeartbeat(req, rc)
	case *kmsg.ConsumerGroupDescribeRequest:
		return s.startConsumerGroupDescribe(req)
	case *kmsg.ShareGroupHeartbeatRequest:
		return s.startShareGroupHeartbeat(req, rc)
	case *kmsg.ShareGroupDescribeRequest:
		return s.startShareGroupDescribe(req)
	}
	return nil
}

// startToolAPI starts a request of the APIs admin tools describe and
// steer the cluster with, then the share-group APIs (startShareAPI), or
// returns nil if req is of none of them.
func (s *Server) startToolAPI(req kmsg.Request, rc requestInfo) responder {
	received := rc.received
	switch req := req.(type) {
	case *kmsg.ListConfigResourcesRequest:
		return s.startListConfigResources(req, received)
	case *kmsg.DescribeTopicPartitionsRequest:
		return s.startDescribeTopicPartitions(req, received)
	case *kmsg.DescribeLogDirsRequest:
		return s.startDescribeLogDirs(req, received)
	case *kmsg.ElectLeadersRequest:
		return s.startElectLeaders(req, received)
	case *kmsg.DescribeProducersRequest:
		return s.startDescribeProducers(req, received)
	case *kmsg.DescribeQuorumRequest:
		return s.startDescribeQuorum(req, received)
	case *kmsg.DescribeClientQuotasRequest:
		return s.startDescribeClientQuotas(req, received)
	case *kmsg.AlterClientQuotasRequest:
		return s.startAlterClientQuotas(req, received)
	case *kmsg.UpdateFeaturesRequest:
		return s.startUpdateFeatures(req, received)
	}
	return s.startShareAPI(req, rc)
}

// answered wraps a response that is ready when the request starts.
func answered(resp kmsg.Response) responder {
	return func(context.Context) (kmsg.Response, error) { return resp, nil }
}
