package console

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/minikafka/minikafka-go/metrics"
)

// Bytes are shown as JSON pretty-printed, text, or hex; nil as null; a
// long value is cut at maxShownBytes and says so.
func TestShow(t *testing.T) {
	long := strings.Repeat("a", maxShownBytes+10)
	for _, tc := range []struct {
		in        []byte
		kind      string
		text      string
		truncated bool
	}{
		{nil, "null", "", false},
		{[]byte{}, "text", "", false},
		{[]byte(`{"a":[1,2]}`), "json", "{\n  \"a\": [\n    1,\n    2\n  ]\n}", false},
		{[]byte(` [true] `), "json", "[\n  true\n]", false},
		{[]byte(`{"a":`), "text", `{"a":`, false}, // not valid JSON: text
		{[]byte("42"), "text", "42", false},       // a JSON scalar stays text
		{[]byte("héllo\tworld\n"), "text", "héllo\tworld\n", false},
		{[]byte("bell\x07"), "hex", "62656c6c07", false},
		{[]byte{0xff, 0xfe}, "hex", "fffe", false},
		{[]byte(long), "text", long[:maxShownBytes], true},
		// A rune cut by the limit still reads as text.
		{[]byte(strings.Repeat("a", maxShownBytes-1) + "é"), "text", strings.Repeat("a", maxShownBytes-1) + "\xc3", true},
	} {
		f := show(tc.in)
		if f.Kind != tc.kind || f.Text != tc.text || f.Truncated != tc.truncated || (tc.in != nil && f.Bytes != len(tc.in)) {
			t.Errorf("show(%.20q) = %s %.30q truncated=%v bytes=%d, want %s %.30q truncated=%v",
				tc.in, f.Kind, f.Text, f.Truncated, f.Bytes, tc.kind, tc.text, tc.truncated)
		}
	}
}

// Rates are per second between samples, over the visible topics only; a
// counter that went down (a replica reopened) counts from zero.
func TestRates(t *testing.T) {
	at := time.Unix(1000, 0)
	tc := func(recs, bytes int64) metrics.TrafficCounts {
		return metrics.TrafficCounts{ProducedRecords: recs, ProducedBytes: bytes, FetchedRecords: recs / 2, FetchedBytes: bytes / 2}
	}
	ss := []sample{
		{At: at, Traffic: map[string]metrics.TrafficCounts{"a": tc(100, 1000), "hidden": tc(1e6, 1e9)}},
		{At: at.Add(2 * time.Second), Traffic: map[string]metrics.TrafficCounts{"a": tc(120, 1400), "hidden": tc(2e6, 2e9)}},
		{At: at.Add(4 * time.Second), Traffic: map[string]metrics.TrafficCounts{"a": tc(10, 100)}}, // reopened
	}
	got := rates(ss, func(topic string) bool { return topic == "a" })
	want := []ratePoint{
		{At: at.Add(2 * time.Second).UnixMilli(), Values: [4]float64{10, 200, 5, 100}},
		{At: at.Add(4 * time.Second).UnixMilli(), Values: [4]float64{5, 50, 2.5, 25}},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("rates = %+v, want %+v", got, want)
	}
}

// The lag history sums a group's lag over the visible topics, from the
// committed offsets of every sample that holds the group.
func TestLagHistory(t *testing.T) {
	at := time.Unix(1000, 0)
	st := metrics.State{}
	s1 := takeSample(at, st, []metrics.GroupOffset{
		{Group: "g", Topic: "a", Partition: 0, Committed: 5, End: 9},
		{Group: "g", Topic: "a", Partition: 1, Committed: 7, End: 6}, // a stale end: no negative lag
		{Group: "g", Topic: "b", Partition: 0, Committed: 0, End: 100},
		{Group: "g", Topic: "a", Partition: 2, Committed: 1, End: -1}, // end unknown
		{Group: "other", Topic: "a", Partition: 0, Committed: 0, End: 9},
	})
	s2 := takeSample(at.Add(time.Second), st, nil)
	s3 := takeSample(at.Add(2*time.Second), st, []metrics.GroupOffset{{Group: "g", Topic: "a", Partition: 0, Committed: 9, End: 9}})
	got := lagHistory([]sample{s1, s2, s3}, "g", func(topic string) bool { return topic == "a" })
	want := []lagPoint{{At: at.UnixMilli(), Lag: 4}, {At: at.Add(2 * time.Second).UnixMilli(), Lag: 0}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("lagHistory = %+v, want %+v", got, want)
	}
}

// The history keeps the newest samples, oldest first.
func TestHistoryRing(t *testing.T) {
	h := newHistory(3)
	for i := range 5 {
		h.add(sample{At: time.Unix(int64(i), 0)})
	}
	ss := h.samples()
	if len(ss) != 3 || ss[0].At.Unix() != 2 || ss[2].At.Unix() != 4 {
		t.Errorf("samples %v, want 2, 3, 4", ss)
	}
}

// A full session table ends the least recently used session; an idle
// session is refused at once and closed by expire.
func TestSessions(t *testing.T) {
	now := time.Unix(1000, 0)
	ss := newSessions(2, time.Minute)
	acc := func() *access {
		a, err := newAccess(Kafka{Addr: "127.0.0.1:1"}, credentials{})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	req := func(s *session) *http.Request {
		r := httptest.NewRequest("GET", "/console/api/topics", nil)
		r.AddCookie(&http.Cookie{Name: cookieName, Value: s.id})
		return r
	}
	a := ss.add(acc(), now)
	b := ss.add(acc(), now.Add(time.Second))
	if ss.fromRequest(req(a), now.Add(2*time.Second)) != a { // a is now the most recent
		t.Fatal("session a not found")
	}
	c := ss.add(acc(), now.Add(3*time.Second))
	if ss.fromRequest(req(b), now.Add(3*time.Second)) != nil {
		t.Error("b, the least recently used, survived a third session")
	}
	if ss.fromRequest(req(a), now.Add(3*time.Second)) != a || ss.fromRequest(req(c), now.Add(3*time.Second)) != c {
		t.Error("a or c lost")
	}
	later := now.Add(5 * time.Minute)
	if ss.fromRequest(req(c), later) != nil {
		t.Error("an idle session still served")
	}
	ss.expire(later)
	if len(ss.byID) != 0 {
		t.Errorf("%d sessions after expire, want 0", len(ss.byID))
	}
	if a.id == c.id || len(a.id) < 40 {
		t.Errorf("session ids %q %q: want distinct and long", a.id, c.id)
	}
	ss.closeAll()
	late := acc()
	defer late.close() // the caller's to close when refused
	if ss.add(late, later) != nil {
		t.Error("a session started after closeAll")
	}
}

// Browse parameters are checked and the count capped.
func TestParseBrowse(t *testing.T) {
	parse := func(q string) (browseReq, error) {
		return parseBrowse(httptest.NewRequest("GET", "/console/api/records?"+q, nil), 200)
	}
	b, err := parse("topic=t&partition=2&offset=7&limit=1000")
	if err != nil || b.Topic != "t" || b.Partition != 2 || b.Offset != 7 || b.Time != -1 || b.Limit != 200 {
		t.Errorf("parse = %+v, %v", b, err)
	}
	if b, err := parse("topic=t&time=1700000000000"); err != nil || b.Time != 1700000000000 || b.Limit != 50 {
		t.Errorf("parse by time = %+v, %v", b, err)
	}
	for _, q := range []string{"", "topic=t&partition=-1", "topic=t&offset=x", "topic=t&partition=99999999999"} {
		if _, err := parse(q); statusOf(err) != http.StatusBadRequest {
			t.Errorf("parse(%q): %v, want a bad request", q, err)
		}
	}
}

// A consumer group's offset rows: a held partition without a commit lags
// from the log start, a committed one from its commit, a partition whose
// end was not listed says so, and a partition OffsetFetch lists without a
// commit or a holder is left out; the total counts the known lags.
func TestConsumerLagOf(t *testing.T) {
	d := kadm.DescribedConsumerGroup{Members: []kadm.ConsumerGroupMember{{MemberID: "m",
		Assignment: kadm.TopicsSet{"t": {0: {}, 1: {}}}}}}
	committed := kadm.OffsetResponses{
		"t": {1: {Offset: kadm.Offset{Topic: "t", Partition: 1, At: 7}}, 2: {Offset: kadm.Offset{Topic: "t", Partition: 2, At: -1}}},
		"u": {0: {Offset: kadm.Offset{Topic: "u", Partition: 0, At: 4}}},
	}
	starts := kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 2}}}
	ends := kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 5}, 1: {Topic: "t", Partition: 1, Offset: 10}}}
	o := lagOf(d, committed, starts, ends)
	want := []offsetRow{
		{Topic: "t", Partition: 0, Committed: -1, End: 5, Lag: 3, Member: "m"},
		{Topic: "t", Partition: 1, Committed: 7, End: 10, Lag: 3, Member: "m"},
		{Topic: "u", Partition: 0, Committed: 4, End: -1, Lag: -1, Error: errNotListed.Error()},
	}
	if !slices.Equal(o.rows, want) || o.total != 6 || o.err != nil {
		t.Errorf("lagOf = %+v total %d, want %+v total 6", o.rows, o.total, want)
	}
}
