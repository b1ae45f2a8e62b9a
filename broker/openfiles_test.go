package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// openUnder counts this process's descriptors open on files under dir
// and names a few of them.
func openUnder(t *testing.T, dir string) (int, []string) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var names []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			names = append(names, strings.TrimPrefix(target, dir))
		}
	}
	return len(names), names[:min(len(names), 5)]
}

// TestNodeOpenFilesBounded: a node with 120 partitions, each written and
// read, holds at most partition_max_open_files (16) descriptors on its
// partitions' files, plus the few a snapshot or an index sync opens for a
// moment. Without the bound it holds two per partition (segment and
// applied-index journal): 240.
func TestNodeOpenFilesBounded(t *testing.T) {
	t.Parallel()
	const parts, limit, transient = 120, 16, 8
	c := testcluster.Start(t, 1, func(cfg *broker.Config) { cfg.PartitionMaxOpenFiles = limit })
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "many", parts, 1)
	recs := make([]*kgo.Record, parts)
	for p := range recs {
		recs[p] = &kgo.Record{Topic: "many", Partition: int32(p), Value: fmt.Appendf(nil, "p%d", p)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.DataDir(1), "partitions")
	check := func(when string) {
		t.Helper()
		for range 5 {
			if n, some := openUnder(t, dir); n > limit+transient {
				t.Fatalf("%s: %d descriptors open on partition files (limit %d), e.g. %v", when, n, limit, some)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	check("after producing to every partition")
	got := consumeAll(t, c.Seeds(), "many", parts)
	for _, r := range got {
		if want := fmt.Sprintf("p%d", r.Partition); string(r.Value) != want {
			t.Fatalf("partition %d holds %q, want %q", r.Partition, r.Value, want)
		}
	}
	check("after reading every partition")
}
