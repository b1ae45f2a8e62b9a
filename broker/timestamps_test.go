package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// TestLogAppendTimeTopic: a topic with message.timestamp.type=LogAppendTime
// stores the leader's time, not the producer's, and consumers (kgo) see
// it as a LogAppendTime timestamp.
func TestLogAppendTimeTopic(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createWithConfigs(t, kadm.NewClient(cl), "lat", map[string]*string{
		"message.timestamp.type": kmsg.StringPtr("LogAppendTime")})
	before := time.Now().Add(-time.Second)
	produceAt(t, cl, "lat", 2, time.UnixMilli(1_000_000_000_000), "v") // 2001
	after := time.Now().Add(time.Second)
	for _, r := range consumeAll(t, c.Seeds(), "lat", 2) {
		if r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before) || r.Timestamp.After(after) {
			t.Fatalf("record at offset %d: timestamp %v (type %d), want the broker's time (type 1) between %v and %v",
				r.Offset, r.Timestamp, r.Attrs.TimestampType(), before, after)
		}
	}
}
