package kafkaapi

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/quota"
)

// quotaSource holds quotas by client id; safe for concurrent use.
type quotaSource struct {
	mu sync.Mutex
	q  map[string]float64 // clientID + "/" + key
	// users records the users asked about.
	users map[string]bool
}

func (f *quotaSource) set(clientID string, k quota.Kind, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.q == nil {
		f.q = map[string]float64{}
	}
	f.q[clientID+"/"+k.Key()] = v
}

func (f *quotaSource) ClientQuota(user, clientID, key string) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == nil {
		f.users = map[string]bool{}
	}
	f.users[user] = true
	v, ok := f.q[clientID+"/"+key]
	return v, ok
}

func startThrottleServer(t *testing.T) (*harness, *quotaSource) {
	t.Helper()
	src := &quotaSource{}
	return startServer(t, Config{Quotas: quota.New(src, quota.Config{})}), src
}

// sendAs writes req with the given client id.
func (c *client) sendAs(clientID string, req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	c.write(f.AppendRequest(nil, req, c.corr))
	return c.corr
}

func (c *client) roundTripAs(clientID string, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.sendAs(clientID, req)
	resp := req.ResponseKind()
	if got := c.read(resp); got != corr {
		c.t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	return resp
}

// TestProduceOverQuotaThrottledAndMuted: a Produce past producer_byte_rate
// is answered at once with throttle_time_ms, and the connection reads
// nothing more until that time has passed; another client id is not
// throttled, and the user asked about is the anonymous one.
func TestProduceOverQuotaThrottledAndMuted(t *testing.T) {
	h, src := startThrottleServer(t)
	h.fb.addTopic("t", 1)
	src.set("slow", quota.Produce, 1000)
	c := h.dial()
	big := makeBatch(1, strings.Repeat("x", 12000)) // ~12 kB: 1.2 kB/s over 10 s
	// The mute starts when the server reads the request, so the wait is
	// measured from before it was sent, not from the answer.
	sent := time.Now()
	resp := c.roundTripAs("slow", produceRequest(9, -1, "t", map[int32][]byte{0: big})).(*kmsg.ProduceResponse)
	if resp.ThrottleMillis <= 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("throttle %d ms, error %d; want a throttle and no error", resp.ThrottleMillis, resp.Topics[0].Partitions[0].ErrorCode)
	}
	c.roundTripAs("slow", apiVersionsRequest(3))
	if waited := time.Since(sent); waited < time.Duration(resp.ThrottleMillis)*time.Millisecond {
		t.Fatalf("next request answered after %v, within the %d ms throttle", waited, resp.ThrottleMillis)
	}
	other := h.dial().roundTripAs("fast", produceRequest(9, -1, "t", map[int32][]byte{0: big})).(*kmsg.ProduceResponse)
	if other.ThrottleMillis != 0 {
		t.Fatalf("another client id throttled %d ms", other.ThrottleMillis)
	}
	if !src.users["ANONYMOUS"] {
		t.Fatalf("users asked %v, want ANONYMOUS", src.users)
	}
}

// TestFetchOverQuotaAnswersNoData: a Fetch past consumer_byte_rate gets
// its throttle and no records (Kafka's throttled fetch), and its bytes are
// not charged; its MaxBytes is capped at ten windows of the quota.
func TestFetchOverQuotaAnswersNoData(t *testing.T) {
	h, src := startThrottleServer(t)
	parts := h.fb.addTopic("t", 1)
	parts[0].append(makeBatch(1, strings.Repeat("y", 12000)))
	src.set("reader", quota.Fetch, 1000)
	c := h.dial()
	req := fetchRequest(11, "t", 0, 1, 0)
	req.MaxBytes = 1 << 20
	resp := c.roundTripAs("reader", req).(*kmsg.FetchResponse)
	if resp.ThrottleMillis <= 0 || len(resp.Topics) != 0 {
		t.Fatalf("throttle %d ms, %d topics; want a throttle and no data", resp.ThrottleMillis, len(resp.Topics))
	}
	if n := len(h.srv.cfg.Quotas.(*quota.Manager).Stats()); n != 1 {
		t.Fatalf("%d entities, want 1", n)
	}
	for _, st := range h.srv.cfg.Quotas.(*quota.Manager).Stats() {
		if st.FetchByteRate != 0 || st.ThrottleMs[quota.Fetch] <= 0 {
			t.Fatalf("fetch rate %v throttle %v: the bytes stay charged or the throttle is not counted", st.FetchByteRate, st.ThrottleMs)
		}
	}
}

// TestCreateTopicsMutationQuota: v6+ refuses the topics past an exceeded
// controller_mutation_rate with THROTTLING_QUOTA_EXCEEDED; older versions
// create them and are throttled (KIP-599).
func TestCreateTopicsMutationQuota(t *testing.T) {
	h, src := startThrottleServer(t)
	src.set("admin", quota.ControllerMutation, 1) // burst of 11 partitions
	c := h.dial()
	create := func(version int16, parts ...int32) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = version
		req.TimeoutMillis = 5000
		for i, n := range parts {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = "v" + string(rune('0'+version)) + "-" + string(rune('a'+i))
			rt.NumPartitions, rt.ReplicationFactor = n, 1
			req.Topics = append(req.Topics, rt)
		}
		return c.roundTripAs("admin", req).(*kmsg.CreateTopicsResponse)
	}
	resp := create(7, 10, 3, 1)
	codes := []int16{resp.Topics[0].ErrorCode, resp.Topics[1].ErrorCode, resp.Topics[2].ErrorCode}
	if codes[0] != 0 || codes[1] != 0 || codes[2] != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("codes %v, want 0, 0, THROTTLING_QUOTA_EXCEEDED", codes)
	}
	if resp.ThrottleMillis < 1500 || resp.ThrottleMillis > 2000 { // 2 tokens short at 1/s
		t.Fatalf("throttle %d ms, want about 2000", resp.ThrottleMillis)
	}
	h2, src2 := startThrottleServer(t)
	src2.set("admin", quota.ControllerMutation, 1)
	c = h2.dial()
	resp = create(5, 10, 3, 1)
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("v5 topic %s: error %d, want created", rt.Topic, rt.ErrorCode)
		}
	}
	if resp.ThrottleMillis < 2500 || resp.ThrottleMillis > 3000 { // 3 short
		t.Fatalf("v5 throttle %d ms, want about 3000", resp.ThrottleMillis)
	}
}

// TestRequestPercentageThrottle: a client past request_percentage gets a
// throttle of at most one window on any response with the field.
func TestRequestPercentageThrottle(t *testing.T) {
	h, src := startThrottleServer(t)
	src.set("busy", quota.Request, 1e-9)
	c := h.dial()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	resp := c.roundTripAs("busy", req).(*kmsg.MetadataResponse)
	if resp.ThrottleMillis <= 0 || resp.ThrottleMillis > 1000 {
		t.Fatalf("throttle %d ms, want within (0, 1000]", resp.ThrottleMillis)
	}
}

// TestMuteLongerThanIdleCloses: a connection muted for longer than
// ConnectionsMaxIdle is closed once that idle time has passed.
func TestMuteLongerThanIdleCloses(t *testing.T) {
	src := &quotaSource{}
	h := startServer(t, Config{Quotas: quota.New(src, quota.Config{}), ConnectionsMaxIdle: 200 * time.Millisecond})
	h.fb.addTopic("t", 1)
	src.set("slow", quota.Produce, 1)
	c := h.dial()
	resp := c.roundTripAs("slow", produceRequest(9, -1, "t", map[int32][]byte{0: makeBatch(1, "abc")})).(*kmsg.ProduceResponse)
	if resp.ThrottleMillis < 1000 {
		t.Fatalf("throttle %d ms, want seconds", resp.ThrottleMillis)
	}
	c.sendAs("slow", apiVersionsRequest(3))
	c.requireClosed()
}
