package metrics_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/broker"
	"github.com/minikafka/minikafka-go/internal/testcluster"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/record"
)

// scrape is one /metrics answer: the exposition text and its samples by
// series ("name{label="v",...}" with labels in the exposed order, which is
// sorted by name).
type scrape struct {
	text    string
	samples map[string]float64
}

func getScrape(t *testing.T, url string) scrape {
	t.Helper()
	body, code := get(t, url+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d: %s", code, body)
	}
	s := scrape{text: body, samples: map[string]float64{}}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("unparsable sample %q: %v", line, err)
		}
		s.samples[line[:i]] = v
	}
	return s
}

func get(t *testing.T, url string) (string, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), resp.StatusCode
}

// partitionSeries names a per-partition series.
func partitionSeries(name, topic string, p int) string {
	return fmt.Sprintf(`minikafka_%s{partition="%d",topic="%s"}`, name, p, topic)
}

// sum adds a series over every node's scrape (only the leader or the
// coordinator reports most of them).
func sum(scrapes []scrape, series string) float64 {
	var total float64
	for _, s := range scrapes {
		total += s.samples[series]
	}
	return total
}

// adminServers serves every running node's admin handler over HTTP.
func adminServers(t *testing.T, c *testcluster.Cluster) []string {
	var urls []string
	for _, n := range c.Running() {
		srv := httptest.NewServer(n.AdminHandler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls
}

// needTool returns the path of a command the test needs. Where it is
// missing the test skips, except on CI (CI set), where make test-deps has
// installed it and its absence is a failure.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found: install the Debian package %s (make test-deps does)", name, pkg)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestMetricsCountProduceAndConsume produces records of known size to one
// partition, consumes them and commits part of them as a group, and finds
// the counts, bytes, offsets and lag in the scrapes; promtool accepts the
// exposition.
func TestMetricsCountProduceAndConsume(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, records, committed = "metered", 25, 10

	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 2, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	var wantBytes int
	for i := range records {
		r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte(strings.Repeat("v", 10+i)), Timestamp: time.UnixMilli(1_700_000_000_000)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		// Each ProduceSync sends a batch of one record, of this size.
		b, err := record.AppendBatch(nil, record.BatchOptions{}, []record.Record{{Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}})
		if err != nil {
			t.Fatal(err)
		}
		wantBytes += len(b)
	}

	consumer := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	got := 0
	for got < records {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if got != records {
		t.Fatalf("consumed %d records, want %d", got, records)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "metered-group", offsets); err != nil {
		t.Fatal(err)
	}

	urls := adminServers(t, c)
	var scrapes []scrape
	for _, u := range urls {
		scrapes = append(scrapes, getScrape(t, u))
	}
	want := map[string]float64{
		partitionSeries("partition_produced_records_total", topic, 0):                           records,
		partitionSeries("partition_produced_bytes_total", topic, 0):                             float64(wantBytes),
		partitionSeries("partition_fetched_records_total", topic, 0):                            records,
		partitionSeries("partition_fetched_bytes_total", topic, 0):                              float64(wantBytes),
		partitionSeries("partition_produced_records_total", topic, 1):                           0,
		partitionSeries("partition_fetched_records_total", topic, 1):                            0,
		partitionSeries("partition_leader", topic, 0):                                           1,
		`minikafka_group_committed_offset{group="metered-group",partition="0",topic="metered"}`: committed,
		`minikafka_group_lag_records{group="metered-group",partition="0",topic="metered"}`:      records - committed,
	}
	for series, v := range want {
		if got := sum(scrapes, series); got != v {
			t.Errorf("%s summed over the nodes = %v, want %v", series, got, v)
		}
	}
	for i, s := range scrapes {
		// Every node holds a replica: its log holds the batches as sent.
		for series, v := range map[string]float64{
			partitionSeries("partition_log_end_offset", topic, 0):   records,
			partitionSeries("partition_log_start_offset", topic, 0): 0,
			partitionSeries("partition_log_size_bytes", topic, 0):   float64(wantBytes),
			partitionSeries("partition_log_end_offset", topic, 1):   0,
		} {
			if got, ok := s.samples[series]; !ok || got != v {
				t.Errorf("node %d: %s = %v (present %v), want %v", i+1, series, got, ok, v)
			}
		}
		for _, series := range []string{
			`minikafka_raft_commit_duration_seconds_count`,
			`minikafka_kafka_connections_accepted_total`,
			`minikafka_raft_leader_changes_total`,
			`go_goroutines`,
		} {
			if _, ok := s.samples[series]; !ok {
				t.Errorf("node %d: no series %s", i+1, series)
			}
		}
		if s.samples[`minikafka_ready`] != 1 {
			t.Errorf("node %d: minikafka_ready = %v, want 1", i+1, s.samples[`minikafka_ready`])
		}
	}
	if got := sum(scrapes, `minikafka_kafka_request_duration_seconds_count{api="Produce"}`); got < records {
		t.Errorf("Produce requests observed: %v, want at least %d", got, records)
	}
	if got := sum(scrapes, `minikafka_raft_commit_duration_seconds_count`); got < records {
		t.Errorf("Raft commits observed: %v, want at least one per produced batch (%d)", got, records)
	}
	if got := sum(scrapes, `minikafka_kafka_request_duration_seconds_count{api="Fetch"}`); got < 1 {
		t.Errorf("Fetch requests observed: %v, want at least 1", got)
	}
	// The test's three clients are still connected.
	if open, accepted := sum(scrapes, `minikafka_kafka_connections`), sum(scrapes, `minikafka_kafka_connections_accepted_total`); open < 3 || accepted < open {
		t.Errorf("connections open %v, accepted %v; want at least 3 open, accepted at least as many", open, accepted)
	}
	// Every group gained a leader once at least: the metadata group and
	// the topic's two partitions, besides __consumer_offsets'.
	if got := sum(scrapes, `minikafka_raft_leader_changes_total`); got < 3 {
		t.Errorf("leader changes %v, want at least 3", got)
	}
	if got := sum(scrapes, `minikafka_leader_partitions`); got < 2 {
		t.Errorf("partitions led %v, want at least the topic's 2", got)
	}
	if got := sum(scrapes, `minikafka_log_fsync_duration_seconds_count`) + sum(scrapes, `minikafka_raft_wal_fsync_duration_seconds_count`); got == 0 {
		t.Error("no fsync observed")
	}
	if got := sum(scrapes, `minikafka_raft_log_budget_limit_bytes`); got <= 0 {
		t.Errorf("Raft log budget %v, want the node's (a quarter of its memtable)", got)
	}
	if got := sum(scrapes, `minikafka_raft_log_budget_bytes`); got <= 0 {
		t.Errorf("Raft log bytes held %v, want some after producing", got)
	}
	for _, name := range []string{"minikafka_raft_log_write_stalls_total ", "minikafka_raft_log_write_stall_seconds_total ",
		"minikafka_raft_log_budget_trims_total "} {
		if !strings.Contains(scrapes[0].text, "\n"+name) {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	checkPromtool(t, scrapes[0].text)
}

// checkPromtool runs promtool check metrics on an exposition.
func checkPromtool(t *testing.T, text string) {
	t.Helper()
	promtool := needTool(t, "promtool", "prometheus")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestUnderReplicatedByMatchIndex stops a follower: once the partition's
// commit index moves past what it matched for longer than the lag limit,
// the leader reports the partition under-replicated, and no longer once
// the follower is back and has caught up.
// It runs with AppendEntries one at a time and pipelined: the transport
// sees the answers on both paths.
func TestUnderReplicatedByMatchIndex(t *testing.T) {
	for _, inflight := range []int{0, 8} {
		t.Run(fmt.Sprintf("inflight=%d", inflight), func(t *testing.T) { testUnderReplicated(t, inflight) })
	}
}

func testUnderReplicated(t *testing.T, inflight int) {
	c := testcluster.Start(t, 3, func(cfg *broker.Config) {
		cfg.Tuning.ReplicaLagMax = 300 * time.Millisecond
		cfg.PartitionRaft.MaxInflightAppends = inflight
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "urp"
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	leader, _ := c.Leader(topic, 0, 10*time.Second)
	follower := 1 + int(leader)%3 // another node
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func() {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce()
	srv := httptest.NewServer(c.Node(int(leader)).AdminHandler())
	defer srv.Close()
	urp := partitionSeries("partition_under_replicated", topic, 0)
	lag := fmt.Sprintf(`minikafka_partition_replica_lag_entries{partition="0",replica="%d",topic="%s"}`, follower, topic)
	waitFor := func(what string, cond func(scrape) bool) scrape {
		t.Helper()
		for {
			s := getScrape(t, srv.URL)
			if cond(s) {
				return s
			}
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s; last scrape:\n%s", what, grep(s.text, "under_replicated", "replica_lag"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor("in sync", func(s scrape) bool { return s.samples[urp] == 0 && s.samples[lag] == 0 })

	c.StopNode(follower)
	produce()
	s := waitFor("under-replicated", func(s scrape) bool { return s.samples[urp] == 1 })
	if s.samples[lag] < 1 || s.samples[`minikafka_under_replicated_partitions`] < 1 {
		t.Errorf("under-replicated but lag %v, count %v", s.samples[lag], s.samples[`minikafka_under_replicated_partitions`])
	}
	c.StartNode(follower)
	waitFor("caught up", func(s scrape) bool { return s.samples[urp] == 0 && s.samples[lag] == 0 })
}

func grep(text string, words ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestReadyz: /livez answers at once; /readyz is 503 while the node waits
// for the rest of its cluster and 200 once it has joined and opened its
// replicas, and 503 again once it shuts down.
func TestReadyz(t *testing.T) {
	base := t.TempDir()
	cfg := func(id int32) broker.Config {
		c := broker.DefaultConfig()
		c.NodeID = id
		c.DataDir = fmt.Sprintf("%s/%d", base, id)
		c.KafkaAddr, c.RaftAddr, c.GossipAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		c.BootstrapExpect = 2
		c.DefaultReplicationFactor = 2
		c.OffsetsTopicPartitions = 2
		c.PartitionRaft, c.MetaRaft = testcluster.Timing(), testcluster.Timing()
		return c
	}
	c1 := cfg(1)
	c1.Join = []string{"127.0.0.1:1"} // found by node 2
	n1, err := broker.Start(context.Background(), c1)
	if err != nil {
		t.Fatal(err)
	}
	defer n1.Shutdown(context.Background())
	srv := httptest.NewServer(n1.AdminHandler())
	defer srv.Close()

	if body, code := get(t, srv.URL+"/livez"); code != http.StatusOK {
		t.Fatalf("/livez: %d %s", code, body)
	}
	body, code := get(t, srv.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, broker.ErrNotJoined.Error()) {
		t.Fatalf("/readyz of a node alone of 2: %d %q, want 503 saying %q", code, body, broker.ErrNotJoined)
	}

	c2 := cfg(2)
	c2.Join = []string{n1.GossipAddr()}
	n2, err := broker.Start(context.Background(), c2)
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Shutdown(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for {
		body, code = get(t, srv.URL+"/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %q after the second node joined", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := n1.Ready(); err != nil {
		t.Fatalf("readyz answered 200, Ready: %v", err)
	}
	n1.Shutdown(context.Background())
	if body, code := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz after shutdown: %d %q, want 503", code, body)
	}
}

// TestReadyzWaitsForLocalReplicas: a partition assigned to the node whose
// replica cannot open (its disk refuses to create files) keeps /readyz at
// 503 until the replica opens.
func TestReadyzWaitsForLocalReplicas(t *testing.T) {
	ff := vfs.Faulty(nil)
	c := testcluster.Start(t, 1, func(cfg *broker.Config) {
		cfg.PartitionFS = ff
		cfg.Tuning.ReconcileRetry = 50 * time.Millisecond
	})
	node := c.Node(1)
	srv := httptest.NewServer(node.AdminHandler())
	defer srv.Close()
	// A metadata entry committed but not yet applied is a moment's 503.
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		body, code := get(t, srv.URL+"/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("/readyz of a started node: %d %q", code, body)
		}
	}
	ff.Fail(vfs.OpCreate, syscall.EIO)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	cctx, ccancel := context.WithTimeout(ctx, time.Second) // the answer waits for a leader
	_, _ = adm.CreateTopic(cctx, 1, 1, nil, "unopened")
	ccancel()
	for !errors.Is(node.Ready(), broker.ErrReplicasNotOpen) {
		if ctx.Err() != nil {
			t.Fatalf("Ready with a replica that cannot open: %v, want ErrReplicasNotOpen", node.Ready())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if body, code := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, broker.ErrReplicasNotOpen.Error()) {
		t.Fatalf("/readyz: %d %q, want 503 saying %q", code, body, broker.ErrReplicasNotOpen)
	}
	ff.Heal()
	for node.Ready() != nil {
		if ctx.Err() != nil {
			t.Fatalf("Ready after the disk healed: %v", node.Ready())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
