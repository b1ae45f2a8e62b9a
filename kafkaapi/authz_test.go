package kafkaapi

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

// authzBackend adds authorization and stored ACLs to the fake backend:
// allowed decides every request and records what was asked.
type authzBackend struct {
	*fakeBackend
	mu      sync.Mutex // guards allowed, asked and set
	allowed func(acl.Request) bool
	asked   []acl.Request
	set     acl.Set
}

func (b *authzBackend) Authorize(r acl.Request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, r)
	return b.allowed(r)
}

func (b *authzBackend) AuthorizeAny(principal, host string, op acl.Operation, rt acl.ResourceType) bool {
	return b.Authorize(acl.Request{Principal: principal, Host: host, Operation: op, Resource: rt, Name: "<any>"})
}

func (b *authzBackend) ACLs() (acl.Set, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.set, nil
}

// stored is the bindings stored.
func (b *authzBackend) stored() acl.Set {
	set, _ := b.ACLs()
	return set
}

func (b *authzBackend) CreateACLs(_ context.Context, bs []acl.Binding) ([]error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set = b.set.With(bs)
	return make([]error, len(bs)), nil
}

func (b *authzBackend) DeleteACLs(_ context.Context, fs []acl.Filter) ([][]acl.Binding, []error, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var removed [][]acl.Binding
	b.set, removed = b.set.Without(fs)
	return removed, make([]error, len(fs)), nil
}

func startAuthzServer(t *testing.T, allowed func(acl.Request) bool) (*harness, *authzBackend) {
	var ab *authzBackend
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend {
		ab = &authzBackend{fakeBackend: fb, allowed: allowed}
		return ab
	})
	h.fb.addTopic("t", 1)
	return h, ab
}

// Each API answers a denied client with Kafka's error code, from the
// principal of a plaintext connection (User:ANONYMOUS) and its address.
func TestAuthorizationDeniedPerAPI(t *testing.T) {
	h, ab := startAuthzServer(t, func(acl.Request) bool { return false })
	part := h.fb.addTopic("p", 1)[0]
	coord := &fakeCoordinator{}
	h.fb.set(func(b *fakeBackend) { b.groups.coord = coord })
	c := h.dial()
	txn := "tx"
	cases := []struct {
		name string
		req  kmsg.Request
		code func(kmsg.Response) int16
		want *kerr.Error
	}{
		{"produce", produceRequest(9, -1, "p", map[int32][]byte{0: makeBatch(1, "a")}),
			func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"transactional produce", txnProduceRequest(&txn, map[int32][]byte{0: makeBatch(1, "a")}),
			func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"fetch", fetchRequest(12, "t", 0, 0, 0),
			func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"list offsets", listOffsetsRequest(7, "t", -1, -1),
			func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"offset for leader epoch", offsetForLeaderEpochRequest(4, "t", -1, 0),
			func(r kmsg.Response) int16 {
				return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.TopicAuthorizationFailed},
		{"metadata named", metadataRequest(12, false, "t"),
			func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"create topics", createTopicsRequest(7, false, topicAsk{"new", 1, 1}),
			func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"delete topics (not even DESCRIBE)", deleteTopicsRequest("t"),
			func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }, kerr.UnknownTopicOrPartition},
		{"create partitions", createPartitionsRequest("t", 2),
			func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"delete records", deleteRecordsRequest("t", 0),
			func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"describe topic configs", describeConfigsRequest(4, false, false, configResource(kmsg.ConfigResourceTypeTopic, "t")),
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"describe broker configs", describeConfigsRequest(4, false, false, configResource(kmsg.ConfigResourceTypeBroker, "1")),
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"alter topic configs", incrementalAlterRequest("t"),
			func(r kmsg.Response) int16 {
				return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
			}, kerr.TopicAuthorizationFailed},
		{"find group coordinator", findCoordinatorRequest(0, "g"),
			func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"find txn coordinator", findCoordinatorRequest(1, "tx"),
			func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"join group", joinGroupRequest("g"),
			func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"offset fetch", offsetFetchRequest("g"),
			func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"describe groups", describeGroupsRequest("g"),
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"init producer id, transactional", initProducerIDRequest(4, &txn),
			func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"init producer id, idempotent", initProducerIDRequest(4, nil),
			func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"write txn markers", writeTxnMarkersRequest(1, 1000, 0, true, "t", 0),
			func(r kmsg.Response) int16 {
				return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
			}, kerr.ClusterAuthorizationFailed},
		{"end txn", endTxnRequest("tx"),
			func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"add partitions to txn", addPartitionsToTxnRequest("tx", "t"),
			func(r kmsg.Response) int16 {
				return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.TransactionalIDAuthorizationFailed},
		{"add partitions to txn, brokers' form", addPartitionsToTxnBrokersRequest("tx", "t"),
			func(r kmsg.Response) int16 { return r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"add offsets to txn", addOffsetsToTxnRequest("tx", "g"),
			func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"txn offset commit", txnOffsetCommitRequest("tx", "g", "t"),
			func(r kmsg.Response) int16 {
				return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.TransactionalIDAuthorizationFailed},
		{"describe transactions", describeTransactionsRequest("tx"),
			func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
			}, kerr.TransactionalIDAuthorizationFailed},
		{"delete groups", deleteGroupsRequest("g"),
			func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"heartbeat", heartbeatRequest("g"),
			func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"create acls", createACLsRequest(acl.Binding{ResourceType: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral,
			Principal: "User:a", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}),
			func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"describe acls", describeAllACLsRequest(),
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"alter partition reassignments", kmsg.NewPtrAlterPartitionAssignmentsRequest(),
			func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"list partition reassignments", kmsg.NewPtrListPartitionReassignmentsRequest(),
			func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
	}
	for _, tc := range cases {
		if got := tc.code(c.roundTrip(tc.req)); got != tc.want.Code {
			t.Errorf("%s: error %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	if r := c.roundTrip(lg).(*kmsg.ListGroupsResponse); len(r.Groups) != 0 {
		t.Fatalf("list groups lists one not describable: %+v", r.Groups)
	}
	if coord.joinClient != "" || len(coord.fetched) != 0 {
		t.Fatal("a denied group request reached the coordinator")
	}
	// Nothing was written, and the checks saw the connection's principal.
	if part.produceCount() != 0 {
		t.Fatal("a denied produce reached the partition")
	}
	ab.mu.Lock()
	defer ab.mu.Unlock()
	if len(ab.asked) == 0 || ab.asked[0].Principal != acl.Anonymous || ab.asked[0].Host != "127.0.0.1" {
		t.Fatalf("asked %+v", ab.asked)
	}
}

// A metadata request for all topics lists only those the client may
// DESCRIBE; DeleteTopics of a topic it may DESCRIBE but not DELETE is
// TOPIC_AUTHORIZATION_FAILED.
func TestAuthorizationFiltersAndDescribeOnly(t *testing.T) {
	h, _ := startAuthzServer(t, func(r acl.Request) bool {
		return r.Resource == acl.ResourceTopic && r.Name == "t" && r.Operation == acl.OpDescribe
	})
	h.fb.addTopic("hidden", 1)
	c := h.dial()
	md := c.roundTrip(metadataRequest(12, false)).(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 || *md.Topics[0].Topic != "t" {
		t.Fatalf("all topics: %+v", md.Topics)
	}
	dt := c.roundTrip(deleteTopicsRequest("t")).(*kmsg.DeleteTopicsResponse)
	if dt.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("delete a describable topic: %v", kerr.ErrorForCode(dt.Topics[0].ErrorCode))
	}
}

// CreateAcls validates each binding as Kafka does (INVALID_REQUEST) and
// stores the valid ones; DescribeAcls groups them by resource; DeleteAcls
// returns what it removed.
func TestACLAPIs(t *testing.T) {
	h, ab := startAuthzServer(t, func(acl.Request) bool { return true })
	c := h.dial()
	good := acl.Binding{ResourceType: acl.ResourceTopic, Name: "t", Pattern: acl.PatternLiteral,
		Principal: "User:a", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow}
	good2 := good
	good2.Operation = acl.OpWrite
	badCluster := good
	badCluster.ResourceType, badCluster.Name = acl.ResourceCluster, "c"
	badHost := good
	badHost.Host = "not-an-ip"
	cr := c.roundTrip(createACLsRequest(good, badCluster, good2, badHost)).(*kmsg.CreateACLsResponse)
	codes := []int16{cr.Results[0].ErrorCode, cr.Results[1].ErrorCode, cr.Results[2].ErrorCode, cr.Results[3].ErrorCode}
	if codes[0] != 0 || codes[1] != kerr.InvalidRequest.Code || codes[2] != 0 || codes[3] != kerr.InvalidRequest.Code {
		t.Fatalf("create codes %v", codes)
	}
	if ab.stored().Len() != 2 {
		t.Fatalf("stored %v", ab.stored().All())
	}
	dr := c.roundTrip(describeAllACLsRequest()).(*kmsg.DescribeACLsResponse)
	if dr.ErrorCode != 0 || len(dr.Resources) != 1 || len(dr.Resources[0].ACLs) != 2 || dr.Resources[0].ResourceName != "t" {
		t.Fatalf("describe %+v", dr)
	}
	bad := describeAllACLsRequest()
	bad.Operation = 0 // UNKNOWN
	if dr := c.roundTrip(bad).(*kmsg.DescribeACLsResponse); dr.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown filter: %v", kerr.ErrorForCode(dr.ErrorCode))
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	delResp := c.roundTrip(del).(*kmsg.DeleteACLsResponse)
	if len(delResp.Results) != 1 || len(delResp.Results[0].MatchingACLs) != 1 || delResp.Results[0].MatchingACLs[0].Operation != kmsg.ACLOperationWrite {
		t.Fatalf("delete %+v", delResp)
	}
	if ab.stored().Len() != 1 {
		t.Fatalf("after delete %v", ab.stored().All())
	}

	// One request is bounded: more than acl.MaxFilters filters (or
	// acl.MaxBindings creations) is INVALID_REQUEST for each, and does
	// nothing.
	many := kmsg.NewPtrDeleteACLsRequest()
	many.Version = 3
	for range acl.MaxFilters + 1 {
		many.Filters = append(many.Filters, f)
	}
	mr := c.roundTrip(many).(*kmsg.DeleteACLsResponse)
	if len(mr.Results) != acl.MaxFilters+1 || mr.Results[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("too many filters: %d results, first %v", len(mr.Results), kerr.ErrorForCode(mr.Results[0].ErrorCode))
	}
	bs := make([]acl.Binding, acl.MaxBindings+1)
	for i := range bs {
		bs[i] = good
	}
	cr = c.roundTrip(createACLsRequest(bs...)).(*kmsg.CreateACLsResponse)
	if len(cr.Results) != len(bs) || cr.Results[0].ErrorCode != kerr.InvalidRequest.Code || ab.stored().Len() != 1 {
		t.Fatalf("too many creations: first %v, %d stored", kerr.ErrorForCode(cr.Results[0].ErrorCode), ab.stored().Len())
	}
}

func createACLsRequest(bs ...acl.Binding) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, b := range bs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(b.ResourceType), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
		c.Principal, c.Host, c.Operation, c.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		req.Creations = append(req.Creations, c)
	}
	return req
}

func describeAllACLsRequest() *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = 3
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return req
}

func deleteTopicsRequest(names ...string) *kmsg.DeleteTopicsRequest {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 5
	req.TopicNames = names
	req.TimeoutMillis = 5000
	return req
}

func createPartitionsRequest(topic string, count int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = topic, count
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 5000
	return req
}

func deleteRecordsRequest(topic string, partition int32) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = 2
	t := kmsg.NewDeleteRecordsRequestTopic()
	t.Topic = topic
	p := kmsg.NewDeleteRecordsRequestTopicPartition()
	p.Partition, p.Offset = partition, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 5000
	return req
}

func incrementalAlterRequest(topic string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("1000")
	r.Configs = append(r.Configs, cfg)
	req.Resources = append(req.Resources, r)
	return req
}

func findCoordinatorRequest(keyType int8, key string) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorKey, req.CoordinatorType = key, keyType
	return req
}

func joinGroupRequest(group string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	return req
}

func offsetFetchRequest(group string) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	return req
}

func describeGroupsRequest(groups ...string) *kmsg.DescribeGroupsRequest {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = groups
	return req
}

func endTxnRequest(id string) *kmsg.EndTxnRequest {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, 1000, 0
	return req
}

// Partial grants: auto-creation needs CREATE; a group one may READ
// commits only the topics one may READ; OffsetFetch of all topics leaves out the others; an
// idempotent producer is allowed by WRITE on some topic.
func TestAuthorizationPartialGrants(t *testing.T) {
	h, _ := startAuthzServer(t, func(r acl.Request) bool {
		switch r.Resource {
		case acl.ResourceTopic:
			return r.Name == "new" && r.Operation == acl.OpDescribe || r.Name == "made" && r.Operation == acl.OpCreate ||
				r.Name == "t" && (r.Operation == acl.OpRead || r.Operation == acl.OpDescribe) ||
				r.Name == "<any>" && r.Operation == acl.OpWrite
		case acl.ResourceGroup:
			return r.Name == "g" && (r.Operation == acl.OpRead || r.Operation == acl.OpDescribe)
		}
		return false
	})
	h.fb.set(func(b *fakeBackend) { b.autoCreate = true })
	coord := &fakeCoordinator{}
	h.fb.set(func(b *fakeBackend) { b.groups.coord = coord })
	c := h.dial()

	md := c.roundTrip(metadataRequest(12, true, "new")).(*kmsg.MetadataResponse)
	if md.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || h.fb.createCount() != 0 {
		t.Fatalf("auto-create without CREATE: %v, %d created", kerr.ErrorForCode(md.Topics[0].ErrorCode), h.fb.createCount())
	}

	mreq := metadataRequest(12, false, "t")
	mreq.IncludeTopicAuthorizedOperations = true
	md = c.roundTrip(mreq).(*kmsg.MetadataResponse)
	if want := operationBits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe); md.Topics[0].AuthorizedOperations != want {
		t.Fatalf("authorized operations on t: %b, want %b", md.Topics[0].AuthorizedOperations, want)
	}

	// CREATE on a topic without DESCRIBE_CONFIGS creates it, without
	// its configs.
	ct := c.roundTrip(createTopicsRequest(7, false, topicAsk{"made", 1, 1})).(*kmsg.CreateTopicsResponse)
	if st := ct.Topics[0]; st.ErrorCode != 0 || st.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || st.Configs != nil {
		t.Fatalf("create without DESCRIBE_CONFIGS: %+v", st)
	}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation, oc.MemberID = 8, "g", -1, ""
	for _, topic := range []string{"t", "secret"} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = 1
		rt.Partitions = append(rt.Partitions, p)
		oc.Topics = append(oc.Topics, rt)
	}
	ocr := c.roundTrip(oc).(*kmsg.OffsetCommitResponse)
	codes := map[string]int16{}
	for _, rt := range ocr.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	// The fake coordinator answers no topics: only the denied one is
	// answered, by the server.
	if len(codes) != 1 || codes["secret"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("offset commit codes %v", codes)
	}

	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version, all.Group, all.Topics = 7, "g", nil
	of := c.roundTrip(all).(*kmsg.OffsetFetchResponse)
	if of.ErrorCode != 0 || len(of.Topics) != 0 { // the fake answers topic "all", which is not describable
		t.Fatalf("offset fetch of all topics: %+v", of)
	}

	ip := c.roundTrip(initProducerIDRequest(4, nil)).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 {
		t.Fatalf("idempotent producer with WRITE on some topic: %v", kerr.ErrorForCode(ip.ErrorCode))
	}
}

func addPartitionsToTxnRequest(id, topic string) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, 1000, 0
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic, t.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, t)
	return req
}

func addPartitionsToTxnBrokersRequest(id, topic string) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, 1000, 0, true
	t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	t.Topic, t.Partitions = topic, []int32{0}
	tx.Topics = append(tx.Topics, t)
	req.Transactions = append(req.Transactions, tx)
	return req
}

func addOffsetsToTxnRequest(id, group string) *kmsg.AddOffsetsToTxnRequest {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, 1000, 0, group
	return req
}

func txnOffsetCommitRequest(id, group, topic string) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, group, 1000, 0, -1
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Offset = 1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func describeTransactionsRequest(ids ...string) *kmsg.DescribeTransactionsRequest {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = ids
	return req
}

func deleteGroupsRequest(groups ...string) *kmsg.DeleteGroupsRequest {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = 2
	req.Groups = groups
	return req
}

func heartbeatRequest(group string) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.Generation, req.MemberID = group, 1, "m-1"
	return req
}
