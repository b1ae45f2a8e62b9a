package kafkaapi

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/acl"
)

func listConfigResources(t *testing.T, c *client, version int16, types ...kmsg.ConfigResourceType) *kmsg.ListConfigResourcesResponse {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.Version = version
	for _, typ := range types {
		req.ResourceTypes = append(req.ResourceTypes, int8(typ))
	}
	return c.roundTrip(req).(*kmsg.ListConfigResourcesResponse)
}

// listed is a response's resources as "type:name".
func listed(resp *kmsg.ListConfigResourcesResponse) []string {
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, kmsg.ConfigResourceType(r.Type).String()+":"+r.Name)
	}
	return out
}

// ListConfigResources lists topics and registered brokers (fenced ones
// too), no groups or client metrics; an unsupported type answers
// UNSUPPORTED_VERSION alone; v0 knows client metrics only.
func TestListConfigResources(t *testing.T) {
	h := startServerWith(t, Config{}, func(fb *fakeBackend) Backend { return withDownBrokers{fb} })
	h.fb.addTopic("b", 1)
	h.fb.addTopic("a", 2)
	c := h.dial()
	resp := listConfigResources(t, c, 1)
	want := []string{"TOPIC:a", "TOPIC:b", "BROKER:0", "BROKER:1", "BROKER:3"}
	if resp.ErrorCode != 0 || !slices.Equal(listed(resp), want) {
		t.Fatalf("all types: error %d %v, want %v", resp.ErrorCode, listed(resp), want)
	}
	resp = listConfigResources(t, c, 1, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeGroupConfig,
		kmsg.ConfigResourceTypeClientMetrics)
	if resp.ErrorCode != 0 || !slices.Equal(listed(resp), want[2:]) {
		t.Fatalf("brokers, groups, client metrics: error %d %v", resp.ErrorCode, listed(resp))
	}
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeBrokerLogger, 99} {
		resp = listConfigResources(t, c, 1, kmsg.ConfigResourceTypeTopic, typ)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ConfigResources) != 0 {
			t.Fatalf("type %d: %+v", typ, resp)
		}
	}
	if resp = listConfigResources(t, c, 0); resp.ErrorCode != 0 || len(resp.ConfigResources) != 0 {
		t.Fatalf("v0: %+v", resp)
	}
}

// It needs DESCRIBE_CONFIGS on the cluster.
func TestListConfigResourcesNeedsDescribeConfigs(t *testing.T) {
	h, ab := startAuthzServer(t, func(r acl.Request) bool {
		return r.Resource != acl.ResourceCluster || r.Operation != acl.OpDescribeConfigs
	})
	resp := listConfigResources(t, h.dial(), 1)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.ConfigResources) != 0 {
		t.Fatalf("%+v", resp)
	}
	ab.mu.Lock()
	ab.allowed = func(acl.Request) bool { return true }
	ab.mu.Unlock()
	if resp := listConfigResources(t, h.dial(), 1); resp.ErrorCode != 0 || !slices.Equal(listed(resp), []string{"TOPIC:t", "BROKER:1"}) {
		t.Fatalf("allowed: %+v", listed(resp))
	}
}
