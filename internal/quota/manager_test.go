package quota

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeSource holds quotas by client id alone; safe for concurrent use.
type fakeSource struct {
	mu sync.Mutex
	q  map[string]float64 // clientID + "/" + key -> quota
}

func (f *fakeSource) set(clientID string, k Kind, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.q == nil {
		f.q = map[string]float64{}
	}
	f.q[clientID+"/"+k.Key()] = v
}

func (f *fakeSource) ClientQuota(_, clientID, key string) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.q[clientID+"/"+key]
	return v, ok
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time                { return c.t }
func (c *fakeClock) add(d time.Duration)           { c.t = c.t.Add(d) }
func newClock() *fakeClock                         { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }
func newManager(src Source, c *fakeClock) *Manager { return New(src, Config{Now: c.now}) }

func TestRecordWithinQuotaIsNotThrottled(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	src.set("c", Produce, 1000)
	m := newManager(src, clk)
	for range 20 {
		if d := m.Record(Produce, "u", "c", 500); d != 0 {
			t.Fatalf("throttled %v at 500 B/s under a 1000 B/s quota", d)
		}
		clk.add(time.Second)
	}
	if d := m.Record(Produce, "u", "other", 1e9); d != 0 {
		t.Fatalf("a client id without a quota was throttled %v", d)
	}
}

// TestThrottleFormula checks Kafka's (rate - quota) / quota × window, with
// the window never shorter than samples-1 windows.
func TestThrottleFormula(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	src.set("c", Produce, 1000)
	m := newManager(src, clk)
	// 22,000 bytes at once: the window counts as 10 s, the rate 2,200 B/s.
	if d, want := m.Record(Produce, "u", "c", 22000), 12*time.Second; d != want {
		t.Fatalf("throttle %v, want %v", d, want)
	}
	// 10.5 s later the first window is still live: 11,000 more bytes make
	// 33,000 over 10.5 s = 3142.857 B/s, (3142.857-1000)/1000 × 10,500 ms.
	clk.add(10500 * time.Millisecond)
	want := time.Duration(math.Round((33000/10.5-1000)/1000*10500)) * time.Millisecond
	if d := m.Record(Produce, "u", "c", 11000); d != want {
		t.Fatalf("throttle %v, want %v", d, want)
	}
	// Eleven quiet windows later every sample has expired.
	clk.add(11 * time.Second)
	if d := m.Record(Produce, "u", "c", 1000); d != 0 {
		t.Fatalf("throttle %v after the samples expired", d)
	}
}

// TestThrottledClientSettlesAtQuota plays a client that sends as fast as
// its throttles let it: its rate over a long span comes to the quota.
func TestThrottledClientSettlesAtQuota(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	const quota = 102400
	src.set("c", Produce, quota)
	m := newManager(src, clk)
	const batch = 16384
	var sent float64
	var start time.Time
	for i := 0; ; i++ {
		if i == 200 { // warm-up done
			start, sent = clk.t, 0
		}
		d := m.Record(Produce, "u", "c", batch)
		sent += batch
		clk.add(5*time.Millisecond + d) // the request's round trip, then the throttle
		if !start.IsZero() && clk.t.Sub(start) >= time.Minute {
			break
		}
	}
	rate := sent / clk.t.Sub(start).Seconds()
	if rate < quota*0.9 || rate > quota*1.1 {
		t.Fatalf("settled at %.0f B/s, want within 10%% of %d", rate, quota)
	}
}

func TestRequestThrottleCappedAtOneWindow(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	src.set("c", Request, 1) // 1% of a thread
	m := newManager(src, clk)
	if d := m.Record(Request, "u", "c", RequestPercent(5*time.Second)); d != DefaultWindow {
		t.Fatalf("request throttle %v, want the cap %v", d, DefaultWindow)
	}
	if p := RequestPercent(10 * time.Millisecond); p != 1 {
		t.Fatalf("10ms is %v%%, want 1", p)
	}
}

func TestUnrecordAndMaxValue(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	src.set("c", Fetch, 1000)
	m := newManager(src, clk)
	if d := m.Record(Fetch, "u", "c", 30000); d == 0 {
		t.Fatal("30,000 bytes at once were not throttled")
	}
	m.Unrecord(Fetch, "u", "c", 30000)
	if d := m.Record(Fetch, "u", "c", 5000); d != 0 {
		t.Fatalf("throttled %v after unrecording", d)
	}
	if v, ok := m.MaxValueInWindow(Fetch, "u", "c"); !ok || v != 10000 {
		t.Fatalf("max value %v %v, want 10000 (10 windows of 1000)", v, ok)
	}
	if _, ok := m.MaxValueInWindow(Fetch, "u", "none"); ok {
		t.Fatal("a max value without a quota")
	}
}

func TestStrictMutation(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	src.set("c", ControllerMutation, 10) // burst 110
	m := newManager(src, clk)
	q := m.Mutation("u", "c", true)
	for _, n := range []int{100, 20} { // the bucket had tokens: both accepted, now -10
		if err := q.Check(); err != nil {
			t.Fatal(err)
		}
		q.Record(n)
	}
	if q.Throttle() != 0 {
		t.Fatalf("throttle %v before any refusal", q.Throttle())
	}
	if err := q.Check(); !errors.Is(err, ErrThrottlingQuotaExceeded) {
		t.Fatalf("Check on an empty bucket: %v", err)
	}
	if d := q.Throttle(); d != time.Second { // 10 tokens at 10/s
		t.Fatalf("throttle %v, want 1s", d)
	}
	clk.add(400 * time.Millisecond)
	if d := q.Throttle(); d != 600*time.Millisecond {
		t.Fatalf("throttle %v 400ms later, want 600ms", d)
	}
	clk.add(600 * time.Millisecond)
	if err := m.Mutation("u", "c", true).Check(); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}

func TestPermissiveMutation(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	src.set("c", ControllerMutation, 10)
	m := newManager(src, clk)
	q := m.Mutation("u", "c", false)
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	q.Record(130)
	if d := q.Throttle(); d != 2*time.Second { // 20 tokens short at 10/s
		t.Fatalf("throttle %v, want 2s", d)
	}
	none := m.Mutation("u", "none", true)
	none.Record(1000)
	if err := none.Check(); err != nil || none.Throttle() != 0 {
		t.Fatalf("no quota: %v, throttle %v", err, none.Throttle())
	}
	var nilq *Mutation
	nilq.Record(1)
	if nilq.Check() != nil || nilq.Throttle() != 0 {
		t.Fatal("a nil Mutation limits")
	}
}

func TestEntitiesBoundedAndExpire(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	m := New(src, Config{Now: clk.now, MaxEntities: 3})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		m.Record(Produce, "u", id, 1)
	}
	stats := m.Stats()
	if len(stats) != 4 {
		t.Fatalf("%d entities, want 3 and the overflow", len(stats))
	}
	var overflow float64
	for _, s := range stats {
		if s.User == OverflowUser {
			overflow = s.ProduceByteRate
		}
	}
	if overflow != 0.2 { // d and e: 2 bytes over 10 s
		t.Fatalf("overflow rate %v, want 0.2", overflow)
	}
	clk.add(DefaultIdleExpiry)
	if n := len(m.Stats()); n != 0 {
		t.Fatalf("%d entities after an idle hour", n)
	}
}

func TestStatsThrottleAverage(t *testing.T) {
	src, clk := &fakeSource{}, newClock()
	m := newManager(src, clk)
	m.RecordThrottle(Fetch, "u", "c", 100*time.Millisecond)
	m.RecordThrottle(Fetch, "u", "c", 300*time.Millisecond)
	m.RecordThrottle(Fetch, "u", "c", 0) // not a throttle
	st := m.Stats()
	if len(st) != 1 || st[0].ThrottleMs[Fetch] != 200 || st[0].ThrottleMs[Produce] != 0 {
		t.Fatalf("stats %+v, want a 200ms fetch average", st)
	}
}

// userQuota is a ScopedSource with one user-level quota (Kafka's
// /users/<user>): it names the user, not the client id.
type userQuota struct {
	user string
	k    Kind
	v    float64
}

func (u userQuota) ClientQuota(user, clientID, key string) (float64, bool) {
	v, _, _, ok := u.ClientQuotaScope(user, clientID, key)
	return v, ok
}

func (u userQuota) ClientQuotaScope(user, _, key string) (float64, bool, bool, bool) {
	if user != u.user || key != u.k.Key() {
		return 0, false, false, false
	}
	return u.v, true, false, true
}

// TestUserQuotaIsShared: the client ids of a user under a user-level quota
// share one rate, as Kafka's sensors named by the user do; another user's
// client is not charged with it.
func TestUserQuotaIsShared(t *testing.T) {
	clk := newClock()
	m := newManager(userQuota{user: "alice", k: Produce, v: 1000}, clk)
	// 6,000 bytes from each of two client ids in the first window: 12,000
	// shared over the 10 s minimum span is 1,200 B/s, over the quota.
	if d := m.Record(Produce, "alice", "a", 6000); d != 0 {
		t.Fatalf("first client throttled %v at 600 B/s", d)
	}
	if d := m.Record(Produce, "alice", "b", 6000); d != 2*time.Second {
		t.Fatalf("second client of the same user throttled %v, want 2s (the user's shared rate 1,200 B/s)", d)
	}
	if d := m.Record(Produce, "bob", "a", 6000); d != 0 {
		t.Fatalf("another user's client throttled %v", d)
	}
	var shared bool
	for _, st := range m.Stats() {
		if st.User == "alice" && st.ClientID == "" && st.ProduceByteRate > 0 {
			shared = true
		}
	}
	if !shared {
		t.Fatalf("no shared entity for alice in %+v", m.Stats())
	}
}
