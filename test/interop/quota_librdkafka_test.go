package interop

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// clientIDQuota is a quota source holding one producer_byte_rate for one
// client id.
type clientIDQuota struct {
	clientID string
	rate     float64
}

func (q clientIDQuota) ClientQuota(_, clientID, key string) (float64, bool) {
	if clientID == q.clientID && key == "producer_byte_rate" {
		return q.rate, true
	}
	return 0, false
}

// TestLibrdkafkaThrottled: librdkafka's producer (python3-confluent-kafka
// running quota_client.py) whose client id has producer_byte_rate=102400
// reads the throttle_time_ms of its Produce responses (throttle_cb),
// delivers every record without error while the node mutes its
// connection, and settles near the quota. librdkafka does not back off on
// its own (it has no KIP-219 client-side throttling:
// confluentinc/librdkafka#5592), so this is the node's muting at work, as
// with a Kafka broker. The tolerance is wider than franz-go's
// (TestClientQuotaProducerSettles): the script's clock is the delivery
// reports it polls for.
func TestLibrdkafkaThrottled(t *testing.T) {
	python := confluentPython(t)
	const quota = 102400
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.ClientQuotas = clientIDQuota{clientID: "rd-throttled", rate: quota}
		cfg.QuotaWindowNum = 6 // a span of 6 s instead of Kafka's 11: a shorter test
	})
	createTopic(t, c, "rdkafka-quota", 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// 6 s of warm-up (one span of the quota window), then two spans.
	cmd := exec.CommandContext(ctx, python, "quota_client.py", strings.Join(c.Seeds(), ","), "rdkafka-quota", "rd-throttled", "18", "6")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("quota_client.py: %v\n%s", err, out)
	}
	var res struct {
		Rate          float64  `json:"rate"`
		Throttles     int      `json:"throttles"`
		MaxThrottleMs float64  `json:"max_throttle_ms"`
		Errors        []string `json:"errors"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("quota_client.py printed %q: %v", out, err)
	}
	t.Logf("librdkafka: %.0f B/s, %d throttles (longest %.0f ms)", res.Rate, res.Throttles, res.MaxThrottleMs)
	if res.Throttles == 0 {
		t.Error("librdkafka reported no throttle")
	}
	if len(res.Errors) > 0 {
		t.Errorf("delivery errors: %v", res.Errors)
	}
	if res.Rate < quota*0.85 || res.Rate > quota*1.15 {
		t.Errorf("librdkafka produced %.0f B/s, want within 15%% of %d", res.Rate, quota)
	}
}
