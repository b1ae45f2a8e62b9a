package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/internal/testcluster"
)

// getJSON fetches url (with the cookies of cl's jar) and decodes a JSON
// answer into v; it returns the status.
func getJSON(t *testing.T, cl *http.Client, url string, v any) int {
	t.Helper()
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v: %s", url, err, body)
		}
	}
	return resp.StatusCode
}

// eventually polls cond every 100 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// knownState makes the cluster state the console test looks for: topic
// orders (3 partitions), three records of known timestamps on partition
// 0 (JSON, text with a header, binary), and group billing committed at
// offset 1 of orders-0 (lag 2 there). It returns the first record's
// timestamp.
func knownState(t *testing.T, c *testcluster.Cluster) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client(t))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	recs := []*kgo.Record{
		{Key: []byte("k0"), Value: []byte(`{"id":1,"item":"book"}`)},
		{Value: []byte("plain text order"), Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("web")}}},
		{Key: []byte("k2"), Value: []byte{0x00, 0x01, 0xff}},
	}
	for i, r := range recs {
		r.Topic, r.Partition, r.Timestamp = "orders", 0, t0.Add(time.Duration(i)*time.Second)
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(1); p < 3; p++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: p, Value: []byte("other")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "billing", offsets); err != nil {
		t.Fatal(err)
	}
	committedTransaction(ctx, t, c, adm)
	return t0
}

// committedTransaction writes one record to topic txn in a committed
// transaction: the partition ends with the commit marker, which a browse
// never shows.
func committedTransaction(ctx context.Context, t *testing.T, c *testcluster.Cluster, adm *kadm.Client) {
	t.Helper()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "txn"); err != nil {
		t.Fatal(err)
	}
	tx := c.Client(t, kgo.TransactionalID("console-test"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "txn", Value: []byte("in a transaction")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// browseBounds checks where browses stop: at the record cap (with the
// next offset to go on from), and at a partition's end even when the end
// is a transaction marker, which shows no record.
func browseBounds(t *testing.T, url string) {
	t.Helper()
	var r struct {
		Records []struct {
			Offset int64 `json:"offset"`
		} `json:"records"`
		End    int64 `json:"end"`
		Next   int64 `json:"next"`
		Capped bool  `json:"capped"`
	}
	if code := getJSON(t, http.DefaultClient, url+"/console/api/records?topic=orders&partition=0&offset=0&limit=2", &r); code != http.StatusOK ||
		len(r.Records) != 2 || !r.Capped || r.Next != 2 {
		t.Errorf("browse with limit 2: %d %+v, want 2 records, capped, next 2", code, r)
	}
	r.Records, r.Capped = nil, false
	start := time.Now()
	if code := getJSON(t, http.DefaultClient, url+"/console/api/records?topic=txn&partition=0&offset=0", &r); code != http.StatusOK ||
		len(r.Records) != 1 || r.Capped || r.End != 2 {
		t.Errorf("browse of a transaction: %d %+v, want its one record before the end 2, not capped", code, r)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("browse of a transaction took %v: the marker at the end held it", d)
	}
}

type overviewJSON struct {
	Brokers []struct {
		ID int32 `json:"id"`
		Up bool  `json:"up"`
	} `json:"brokers"`
}

// TestConsolePagesInChromium opens every page of the console of node 1 of
// a 3-node cluster whose node 3 was killed, in headless Chromium: each
// loads without console errors, and its DOM holds the known state (the
// dead broker, the topic's partitions and configs, the records browsed by
// offset and by time, the group with lag and its lag chart, the throughput
// charts). Screenshots of each page go to shotsDir.
func TestConsolePagesInChromium(t *testing.T) {
	b := newBrowser(t)
	c := testcluster.Start(t, 3, longShareSessions)
	t0 := knownState(t, c)
	modernGroups(t, c)
	migratingGroup(t, c)
	srv := httptest.NewServer(c.Node(1).AdminHandler())
	t.Cleanup(srv.Close)
	c.HaltNode(3)
	// Wait for the node's view: node 3 down, and the group's lag sampled.
	eventually(t, 30*time.Second, "broker 3 listed down", func() bool {
		var o overviewJSON
		getJSON(t, http.DefaultClient, srv.URL+"/console/api/overview", &o)
		return slices.ContainsFunc(o.Brokers, func(b struct {
			ID int32 `json:"id"`
			Up bool  `json:"up"`
		}) bool {
			return b.ID == 3 && !b.Up
		})
	})
	base := srv.URL + "/console/#/"

	overviewShown(t, b, base, srv.URL)
	topicsShown(t, b, base)
	recordsBrowsed(t, b, base, t0)
	browseBounds(t, srv.URL)
	groupsListed(t, b, base)
	groupKindsListed(t, b, base)
	groupLagCharted(t, b, base)
	consumerGroupShown(t, b, base)
	shareGroupShown(t, b, base)
	migratingGroupShown(t, b, base)

	throughputCharted(t, b, base)

	b.open(base+"reassignments", "reassignments")
	if got := b.texts(`[...document.querySelectorAll("#reassignments tbody tr.empty")].map(r => r.innerText)`); len(got) != 1 {
		t.Errorf("reassignments table: %v, want the one 'none in progress' row", got)
	}
	b.shot("reassignments")
	b.noErrors("reassignments")
	t.Logf("screenshots in %s", b.shots)
}

// overviewShown checks the overview: brokers 1 and 2 up, 3 down with
// since when, and the console read-only (no console_admin_key).
func overviewShown(t *testing.T, b *browser, base, url string) {
	t.Helper()
	b.open(base, "overview")
	if got := b.cells("brokers", 2); !slices.Equal(got, []string{"up", "up", "down"}) {
		t.Errorf("broker states %v, want up, up, down", got)
	}
	if got := b.texts(`[...document.querySelectorAll("#brokers tr.down")].map(r => r.dataset.broker)`); !slices.Equal(got, []string{"3"}) {
		t.Errorf("brokers marked down: %v, want [3]", got)
	}
	if got := b.cells("brokers", 3); len(got) != 3 || got[2] == "–" || got[0] != "–" {
		t.Errorf("down-since column %q: want a time for broker 3 alone", got)
	}
	// No console_admin_key: read-only, and the writes are refused.
	if got := b.texts(`[document.getElementById("mode").innerText, String(document.querySelectorAll("#unlock").length)]`); got[0] != "Read-only." || got[1] != "0" {
		t.Errorf("footer %q and %s unlock forms, want Read-only. and none", got[0], got[1])
	}
	if code := post(t, url+"/console/api/topics", "anything-at-all-here", "application/json", `{"name":"x"}`); code != http.StatusForbidden {
		t.Errorf("a write on a read-only console: %d, want 403", code)
	}
	b.shot("overview")
	b.noErrors("overview")
}

// topicsShown checks the topic list and orders' page.
func topicsShown(t *testing.T, b *browser, base string) {
	t.Helper()
	b.open(base+"topics", "topics")
	if got := b.cells("topics", 0); !slices.Contains(got, "orders") {
		t.Errorf("topics %v lack orders", got)
	}
	b.shot("topics")
	b.noErrors("topics")

	// Leaderships move off node 3: the end offsets may be unknown ("–")
	// for a moment.
	b.openUntil(base+"topic/orders", "topic", func() bool {
		return slices.Equal(b.cells("partitions", 6), []string{"3", "1", "1"})
	})
	if got := b.cells("partitions", 0); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("partitions of orders: %v", got)
	}
	if got := b.cells("partitions", 6); !slices.Equal(got, []string{"3", "1", "1"}) {
		t.Errorf("end offsets of orders: %v, want 3 1 1", got)
	}
	if got := b.cells("configs", 0); !slices.Contains(got, "cleanup.policy") {
		t.Errorf("configs of orders lack cleanup.policy: %v", got)
	}
	b.shot("topic")
	b.noErrors("topic")
}

// recordsBrowsed browses orders-0 from offset 0 and from the second
// record's time.
func recordsBrowsed(t *testing.T, b *browser, base string, t0 time.Time) {
	t.Helper()
	b.open(base+"messages?topic=orders&partition=0&offset=0", "messages")
	if got := b.cells("records", 0); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("records browsed from offset 0: offsets %v", got)
	}
	kinds := b.texts(`[...document.querySelectorAll("#records tbody tr")].map(r => r.cells[3].className)`)
	values := b.cells("records", 3)
	if !slices.Equal(kinds, []string{"kind-json", "kind-text", "kind-hex"}) {
		t.Errorf("value kinds %v, want json, text, hex", kinds)
	}
	if want := "{\n  \"id\": 1,\n  \"item\": \"book\"\n}"; len(values) != 3 || values[0] != want || values[1] != "plain text order" || values[2] != "0001ff" {
		t.Errorf("values shown %q", values)
	}
	if got := b.cells("records", 4); len(got) != 3 || got[1] != "source: web" {
		t.Errorf("headers shown %q", got)
	}
	b.shot("messages")
	b.noErrors("messages")

	b.open(fmt.Sprintf("%smessages?topic=orders&partition=0&time=%d", base, t0.Add(time.Second).UnixMilli()), "messages")
	if got := b.cells("records", 0); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("records browsed from the second record's time: offsets %v, want 1 2", got)
	}
	b.noErrors("messages by time")
}

// groupsListed checks billing's lag in the group list.
func groupsListed(t *testing.T, b *browser, base string) {
	t.Helper()
	var names, lags []string
	b.openUntil(base+"groups", "groups", func() bool {
		names, lags = b.cells("groups", 0), b.cells("groups", 6)
		i := slices.Index(names, "billing")
		return i >= 0 && lags[i] == "2"
	})
	if i := slices.Index(names, "billing"); i < 0 || lags[i] != "2" {
		t.Errorf("groups %v with lags %v: want billing with lag 2", names, lags)
	}
	b.shot("groups")
	b.noErrors("groups")
}

// groupLagCharted opens billing's page until the lag chart has a sample
// (the node samples every few seconds).
func groupLagCharted(t *testing.T, b *browser, base string) {
	t.Helper()
	points := func() []string {
		return b.texts(`[...document.querySelectorAll("#lag-chart circle")].map(c => c.dataset.v)`)
	}
	b.openUntil(base+"group/billing", "group", func() bool { return len(points()) > 0 })
	if got := points(); len(got) == 0 || got[len(got)-1] != "2" {
		t.Errorf("lag chart points %v, want the last at lag 2", got)
	}
	tps, lags := b.cells("offsets", 0), b.cells("offsets", 4)
	if len(tps) != 1 || tps[0] != "orders" || lags[0] != "2" {
		t.Errorf("billing's offsets: topics %v lags %v, want orders with lag 2", tps, lags)
	}
	b.shot("group")
	b.noErrors("group")
}

// throughputCharted produces through node 1 and opens the throughput page
// until both charts show in and out traffic.
func throughputCharted(t *testing.T, b *browser, base string) {
	t.Helper()
	series := func() []string {
		return b.texts(`[...document.querySelectorAll("svg.chart polyline")].map(p => p.parentNode.id + ":" + p.dataset.series)`)
	}
	b.openUntil(base+"throughput", "throughput", func() bool { return len(series()) == 4 })
	if got := series(); !slices.Equal(got, []string{"records-chart:in", "records-chart:out", "bytes-chart:in", "bytes-chart:out"}) {
		t.Errorf("throughput lines %v", got)
	}
	if got := b.texts(`[...document.querySelectorAll("svg.chart")].map(s => s.id)`); !slices.Equal(got, []string{"records-chart", "bytes-chart"}) {
		t.Errorf("charts %v", got)
	}
	b.shot("throughput")
	b.noErrors("throughput")
}
