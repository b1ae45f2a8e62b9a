package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// topic describe shows every topic's cleanup.policy and, for a compacted
// topic, each partition's dirty ratio from its leader: 0 once cleaned (or
// empty), more once new duplicates wait under min.cleanable.dirty.ratio.
func TestCLITopicDescribeCleanup(t *testing.T) {
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.CleanerBackoff = 100 * time.Millisecond
		cfg.LeaderRebalanceInterval = 0 // a new leader sees everything dirty until it cleans
	})
	g := []string{"--brokers", strings.Join(c.Seeds(), ","), "--timeout", "20s"}
	cmd := func(args ...string) []string { return append(args, g...) }
	mustRun(t, "", cmd("topic", "create", "kv", "--partitions", "2", "--replication-factor", "3",
		"--config", "cleanup.policy=compact", "--config", "min.cleanable.dirty.ratio=0.9")...)
	mustRun(t, "", cmd("topic", "create", "plain", "--partitions", "1", "--replication-factor", "3")...)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Lingering, each produce is one batch: a cleaning never falls
	// between its records.
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("kv"),
		kgo.ProducerLinger(100*time.Millisecond))
	produce := func(keys ...string) {
		t.Helper()
		var recs []*kgo.Record
		for _, k := range keys {
			recs = append(recs, &kgo.Record{Partition: 0, Key: []byte(k), Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for k := range 200 {
		keys = append(keys, fmt.Sprintf("k%03d", k), "k000")
	}
	produce(keys...)

	plain := regexp.MustCompile(`(?m)^plain +delete +- +-$`)
	ratio := func(out string, p int) float64 {
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^kv +compact +%d +([0-9.]+|\?)$`, p)).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("describe shows no cleanup row for kv partition %d:\n%s", p, out)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return -1 // ?: the leader did not say
		}
		return v
	}
	describe := func(what string, within time.Duration, ok func(out string) bool) bool {
		t.Helper()
		var out string
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out = mustRun(t, "", cmd("topic", "describe", "kv", "plain")...).stdout; ok(out) {
				return true
			}
		}
		t.Logf("%s: not within %v; last describe:\n%s", what, within, out)
		return false
	}
	if !describe("kv cleaned", 30*time.Second, func(out string) bool {
		return plain.MatchString(out) && ratio(out, 0) == 0 && ratio(out, 1) == 0
	}) {
		t.Fatal("the cleaned and the empty partition never showed a dirty ratio of 0")
	}
	// A few new duplicates: a small share of the log's bytes, left dirty
	// under 0.9. A leader change meanwhile cleans them; then more follow.
	for attempt := 0; ; attempt++ {
		produce("k001", "k001", "k001")
		if describe("new duplicates", 5*time.Second, func(out string) bool {
			r := ratio(out, 0)
			return r > 0 && r < 0.9 && ratio(out, 1) == 0
		}) {
			return
		}
		if attempt == 3 {
			t.Fatal("partition 0 never showed the dirty ratio of its new duplicates")
		}
	}
}
