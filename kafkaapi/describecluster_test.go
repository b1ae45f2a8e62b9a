package kafkaapi

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeCluster(t *testing.T) {
	h := startServer(t, Config{})
	c := h.dial()
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != "fake-cluster" || resp.ControllerID != 1 ||
			resp.ClusterAuthorizedOperations != -2147483648 || resp.ThrottleMillis != 0 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != "127.0.0.1" ||
			resp.Brokers[0].Port != h.fb.broker.Port || resp.Brokers[0].Rack != nil {
			t.Fatalf("v%d: brokers %+v", v, resp.Brokers)
		}
		if v >= 1 && resp.EndpointType != endpointBrokers {
			t.Fatalf("v1: endpoint type %d", resp.EndpointType)
		}
		req.IncludeClusterAuthorizedOperations = true
		resp = c.roundTrip(req).(*kmsg.DescribeClusterResponse)
		// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
		// ALTER_CONFIGS, IDEMPOTENT_WRITE: bits 5, 7-12.
		if resp.ClusterAuthorizedOperations != 0x1FA0 {
			t.Fatalf("v%d: authorized operations %#x, want 0x1fa0", v, resp.ClusterAuthorizedOperations)
		}
	}
	// KIP-919: a broker is not a controller endpoint.
	for _, tc := range []struct {
		endpoint int8
		want     *kerr.Error
	}{{endpointControllers, kerr.MismatchedEndpointType}, {7, kerr.UnsupportedEndpointType}} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = 1
		req.EndpointType = tc.endpoint
		resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != tc.want.Code || resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
			t.Fatalf("endpoint type %d: %+v, want %s", tc.endpoint, resp, tc.want.Message)
		}
	}
}

// A controller that is not among the live brokers is answered -1, as
// Kafka does, so that clients never look for a node they cannot reach.
func TestDescribeClusterUnlistedController(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.set(func(b *fakeBackend) { b.controllerID = 7 })
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 1
	if resp := h.dial().roundTrip(req).(*kmsg.DescribeClusterResponse); resp.ControllerID != -1 {
		t.Fatalf("controller %d, want -1", resp.ControllerID)
	}
}

// Metadata v8+ answers the authorized operations it is asked for: every
// supported one, as Kafka does without an authorizer.
func TestMetadataAuthorizedOperations(t *testing.T) {
	h := startServer(t, Config{})
	h.fb.addTopic("t", 1)
	c := h.dial()
	req := metadataRequest(10, false, "t", "missing")
	resp := metadata(t, c, req)
	if resp.AuthorizedOperations != -2147483648 || resp.Topics[0].AuthorizedOperations != -2147483648 {
		t.Fatalf("not asked: cluster %d topic %d, want the schema default", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations)
	}
	req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
	resp = metadata(t, c, req)
	// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
	// ALTER_CONFIGS: bits 3-8, 10, 11.
	if resp.AuthorizedOperations != 0x1FA0 || resp.Topics[0].AuthorizedOperations != 0xDF8 || resp.Topics[1].AuthorizedOperations != 0xDF8 {
		t.Fatalf("cluster %#x topics %#x %#x", resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations, resp.Topics[1].AuthorizedOperations)
	}
}

// withDownBrokers is the fake backend with registered brokers 0 and 3
// that gossip sees down.
type withDownBrokers struct{ *fakeBackend }

func (b withDownBrokers) Cluster() ClusterView {
	v := b.fakeBackend.Cluster()
	v.Down = []DownBroker{
		{NodeID: 3, Registered: Broker{NodeID: 3, Host: "node3.example", Port: 9094, Rack: "r3"}},
		{NodeID: 0, Registered: Broker{NodeID: 0, Host: "node0.example", Port: 9090}},
	}
	return v
}

// DescribeCluster v2 lists the fenced brokers (the registered brokers
// gossip sees down) only when asked, IsFenced, among the live ones by id.
func TestDescribeClusterFencedBrokers(t *testing.T) {
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend { return withDownBrokers{fb} })
	c := h.dial()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = 2
	resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse)
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].IsFenced {
		t.Fatalf("without IncludeFencedBrokers: %+v", resp.Brokers)
	}
	req.IncludeFencedBrokers = true
	resp = c.roundTrip(req).(*kmsg.DescribeClusterResponse)
	type listed struct {
		id     int32
		host   string
		fenced bool
	}
	var got []listed
	for _, b := range resp.Brokers {
		got = append(got, listed{b.NodeID, b.Host, b.IsFenced})
	}
	want := []listed{{0, "node0.example", true}, {1, "127.0.0.1", false}, {3, "node3.example", true}}
	if !slices.Equal(got, want) {
		t.Fatalf("with IncludeFencedBrokers: %+v, want %+v", got, want)
	}
	if r := resp.Brokers[2]; r.Port != 9094 || r.Rack == nil || *r.Rack != "r3" {
		t.Fatalf("fenced broker 3: %+v", r)
	}
	// v1 has no IncludeFencedBrokers: the flag is not on its wire.
	req.Version = 1
	if resp := c.roundTrip(req).(*kmsg.DescribeClusterResponse); len(resp.Brokers) != 1 {
		t.Fatalf("v1: %+v", resp.Brokers)
	}
}
