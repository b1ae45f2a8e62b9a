package e2e

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// rec is a stored record carrying id.
func rec(offset int64, id ID) Stored {
	return Stored{Offset: offset, Key: []byte(id.Key), Value: id.Value(4)}
}

// acked is an attempt acknowledged at topic t, partition 0, offset.
func acked(id ID, offset int64) Attempt {
	return Attempt{ID: id, Topic: "t", Partition: 0, Outcome: Acked, Offset: offset}
}

// history and log of a clean run: producer 0 writes k0 seq 0..2 and k1
// seq 0..1, interleaved, all acknowledged at offsets 0..4.
func cleanRun() ([]Attempt, PartitionLog) {
	ids := []ID{{0, "k0", 0}, {0, "k1", 0}, {0, "k0", 1}, {0, "k1", 1}, {0, "k0", 2}}
	pl := PartitionLog{Topic: "t", Partition: 0, Start: 0, End: int64(len(ids))}
	var atts []Attempt
	for i, id := range ids {
		atts = append(atts, acked(id, int64(i)))
		pl.Records = append(pl.Records, rec(int64(i), id))
	}
	return atts, pl
}

func TestCheckCleanRun(t *testing.T) {
	atts, pl := cleanRun()
	r := Check(atts, []PartitionLog{pl})
	if err := r.Err(); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	if r.Attempts != 5 || r.Acked != 5 || r.Stored != 5 || r.Unknown != 0 {
		t.Fatalf("counts %+v", r)
	}
}

// TestCheckFindsEachProblem feeds the checker histories with one planted
// fault each and requires exactly that fault, and only it, reported.
func TestCheckFindsEachProblem(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(atts []Attempt, pl *PartitionLog) []Attempt
		kind   Kind
		want   error
		count  int
	}{
		{
			name: "lost acknowledged record",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				// The last record is acknowledged but was never stored.
				pl.Records, pl.End = pl.Records[:4], 4
				return atts
			},
			kind: Lost, want: ErrLost, count: 1,
		},
		{
			name: "duplicate",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				// k0/2 written twice: at its acked offset 4, and again at 5.
				pl.Records = append(pl.Records, rec(5, ID{0, "k0", 2}))
				pl.End = 6
				return atts
			},
			kind: Duplicated, want: ErrDuplicated, count: 1,
		},
		{
			name: "reorder",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				// k0/1 and k0/2 are stored swapped (offsets 2 and 4), and
				// acknowledged where they are stored.
				pl.Records[2], pl.Records[4] = rec(2, ID{0, "k0", 2}), rec(4, ID{0, "k0", 1})
				atts[2].Offset, atts[4].Offset = 4, 2
				return atts
			},
			kind: OutOfOrder, want: ErrOutOfOrder, count: 1,
		},
		{
			name: "acknowledged at another offset",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				atts[1].Offset = 3
				return atts
			},
			kind: Misplaced, want: ErrMisplaced, count: 1,
		},
		{
			name: "record in another partition than produced to",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				atts[1].Partition, atts[1].Offset, atts[1].Outcome = 1, -1, Unknown
				return atts
			},
			kind: Misplaced, want: ErrMisplaced, count: 1,
		},
		{
			name: "record never sent",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				return atts[:4] // k0/2 is stored, but nobody sent it
			},
			kind: Phantom, want: ErrPhantom, count: 1,
		},
		{
			name: "record Produce refused",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				atts[4] = Attempt{ID: atts[4].ID, Topic: "t", Partition: -1, Outcome: NotSent, Offset: -1, Err: errors.New("buffer full")}
				return atts
			},
			kind: Phantom, want: ErrPhantom, count: 1,
		},
		{
			name: "foreign value",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				pl.Records = append(pl.Records, Stored{Offset: 5, Key: []byte("x"), Value: []byte("hello")})
				pl.End = 6
				return atts
			},
			kind: Phantom, want: ErrPhantom, count: 1,
		},
		{
			name: "unknown outcome present twice",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				atts = append(atts, Attempt{ID: ID{1, "k0", 0}, Topic: "t", Partition: 0, Outcome: Unknown, Offset: -1})
				pl.Records = append(pl.Records, rec(5, ID{1, "k0", 0}), rec(6, ID{1, "k0", 0}))
				pl.End = 7
				return atts
			},
			kind: Duplicated, want: ErrDuplicated, count: 1,
		},
		{
			name: "gap in offsets",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				atts[4].Offset = 5
				pl.Records[4].Offset = 5
				pl.End = 6
				return atts
			},
			kind: Gap, want: ErrGap, count: 1,
		},
		{
			name: "read stopped short of the high watermark",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				pl.End = 9
				return atts
			},
			kind: Gap, want: ErrGap, count: 1,
		},
		{
			name: "same ID attempted twice",
			mutate: func(atts []Attempt, pl *PartitionLog) []Attempt {
				return append(atts, atts[0])
			},
			kind: BadHistory, want: ErrBadHistory, count: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			atts, pl := cleanRun()
			atts = tc.mutate(atts, &pl)
			r := Check(atts, []PartitionLog{pl})
			err := r.Err()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			var ce *CheckError
			if !errors.As(err, &ce) || ce.Report != r {
				t.Fatalf("error %T is not the report's *CheckError", err)
			}
			if got := r.Count(tc.kind); got != tc.count {
				t.Fatalf("%d %s problems, want %d: %v", got, tc.kind, tc.count, err)
			}
			if len(r.Problems) != tc.count {
				t.Fatalf("other problems reported too: %v", err)
			}
			for k := range numKinds {
				if k != tc.kind && errors.Is(err, k.Err()) {
					t.Fatalf("error also matches %v", k.Err())
				}
			}
		})
	}
}

func TestCheckUnknownOutcomes(t *testing.T) {
	atts, pl := cleanRun()
	// Two attempts of unknown outcome: one was written, one was not.
	atts[4].Outcome, atts[4].Offset = Unknown, -1
	atts = append(atts, Attempt{ID: ID{0, "k1", 2}, Topic: "t", Partition: 0, Outcome: Pending, Offset: -1})
	r := Check(atts, []PartitionLog{pl})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Unknown != 2 || r.UnknownPresent != 1 || r.Acked != 4 {
		t.Fatalf("counts %+v", r)
	}
}

func TestCheckAckWithoutOffset(t *testing.T) {
	atts, pl := cleanRun()
	atts[2].Offset = -1 // a duplicate the broker no longer placed
	r := Check(atts, []PartitionLog{pl})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.AckedNoOffset != 1 {
		t.Fatalf("AckedNoOffset %d", r.AckedNoOffset)
	}
	// Without the record, it is lost all the same.
	pl.Records, pl.End = pl.Records[:2], 2
	atts = atts[:3]
	if r := Check(atts, []PartitionLog{pl}); r.Count(Lost) != 1 || len(r.Problems) != 1 {
		t.Fatalf("missing record acknowledged without offset: %v", r.Err())
	}
}

func TestCheckIgnoresUnreadPartitions(t *testing.T) {
	atts, pl := cleanRun()
	atts = append(atts, acked(ID{3, "k9", 0}, 0))
	atts[len(atts)-1].Partition = 7 // not read: nothing to say about it
	if err := Check(atts, []PartitionLog{pl}).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckIsDeterministic(t *testing.T) {
	atts, pl := cleanRun()
	atts = atts[:1] // four phantoms, found in map order
	first := Check(atts, []PartitionLog{pl})
	for range 20 {
		if again := Check(atts, []PartitionLog{pl}); !reflect.DeepEqual(again, first) {
			t.Fatalf("reports differ:\n%v\n%v", again.Err(), first.Err())
		}
	}
	if first.Count(Phantom) != 4 {
		t.Fatalf("%d phantoms, want 4", first.Count(Phantom))
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, id := range []ID{{0, "k00", 0}, {12, "same", 123456789}, {1000, "probe", 3}} {
		for _, pad := range []int{0, 32} {
			got, ok := ParseValue(id.Value(pad))
			if !ok || got != id {
				t.Fatalf("ParseValue(Value(%v, %d)) = %v, %v", id, pad, got, ok)
			}
		}
	}
	for _, v := range []string{"", "hello", "e2e|", "e2e|x|k|1|", "e2e|1||1|", "e2e|1|k|x|", "e2e|1|k"} {
		if id, ok := ParseValue([]byte(v)); ok {
			t.Fatalf("ParseValue(%q) = %v, want not ok", v, id)
		}
	}
}

func TestFailoverTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(sent, done time.Duration, p int32, o Outcome) Attempt {
		return Attempt{Topic: "t", Partition: p, Outcome: o, Sent: t0.Add(sent), Done: t0.Add(done)}
	}
	atts := []Attempt{
		at(-time.Second, 100*time.Millisecond, 0, Acked),        // sent before the fault: the old leader may have answered
		at(10*time.Millisecond, 900*time.Millisecond, 1, Acked), // another partition
		at(20*time.Millisecond, 700*time.Millisecond, 0, Unknown),
		at(30*time.Millisecond, 1500*time.Millisecond, 0, Acked),
		at(40*time.Millisecond, 1200*time.Millisecond, 0, Acked),
	}
	d, ok := FailoverTime(atts, "t", 0, t0)
	if !ok || d != 1200*time.Millisecond {
		t.Fatalf("FailoverTime = %v, %v; want 1.2s", d, ok)
	}
	if _, ok := FailoverTime(atts, "t", 2, t0); ok {
		t.Fatal("failover measured on a partition without acknowledgements")
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for p, want := range map[float64]time.Duration{0: 1, 50: 3, 90: 5, 100: 5} {
		if got := Percentile(ds, p); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("Percentile of nothing")
	}
}

func TestSummaryCounts(t *testing.T) {
	var s Summary
	s.Fault("leader-kill")
	s.Fault("leader-kill")
	s.Fault("pause")
	s.Failover(time.Second)
	s.Failover(3 * time.Second)
	atts, pl := cleanRun()
	pl.Records, pl.End = pl.Records[:4], 4
	s.Verified(&Verification{Report: Check(atts, []PartitionLog{pl}), Partitions: 1, Replicas: 3})
	if s.Faults() != 3 {
		t.Fatalf("Faults %d", s.Faults())
	}
	out := s.String()
	for _, want := range []string{"faults injected:      3 (leader-kill=2, pause=1)", "records acknowledged: 5",
		"lost:                 1", "3 logs of 1 partitions", "p50 1s, max 3s"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// One producer's key in two partitions (the partition probes write to
// whichever partition the cut-off leader leads) keeps no order across
// them: a lower sequence in a later partition is no problem.
func TestCheckKeyOrderIsPerPartition(t *testing.T) {
	a := PartitionLog{Topic: "t", Partition: 0, Start: 0, End: 1, Records: []Stored{rec(0, ID{9, "iso", 5})}}
	b := PartitionLog{Topic: "t", Partition: 1, Start: 0, End: 1, Records: []Stored{rec(0, ID{9, "iso", 2})}}
	atts := []Attempt{
		{ID: ID{9, "iso", 5}, Topic: "t", Partition: 0, Outcome: Acked, Offset: 0},
		{ID: ID{9, "iso", 2}, Topic: "t", Partition: 1, Outcome: Acked, Offset: 0},
	}
	if r := Check(atts, []PartitionLog{a, b}); r.Count(OutOfOrder) != 0 {
		t.Fatalf("out of order across partitions: %+v", r.Problems)
	}
}

// CheckCompacted accepts an acknowledged record gone only behind a later
// record of its key in its partition; it reports the latest acknowledged
// value of a key gone, an older value after a newer one, and offsets that
// do not rise; the gaps a cleaning leaves are no problem.
func TestCheckCompacted(t *testing.T) {
	ids := []ID{{0, "a", 0}, {0, "a", 1}, {1, "a", 0}, {0, "b", 0}, {0, "c", 0}, {0, "c", 1}, {0, "d", 0}, {0, "d", 1}}
	var atts []Attempt
	for i, id := range ids {
		atts = append(atts, acked(id, int64(i)))
	}
	// a: only its latest (another producer's) is left; b: gone with nothing
	// after it; c: the older of two left; d: both, in the wrong order.
	pl := PartitionLog{Topic: "t", Partition: 0, Start: 0, End: 9,
		Records: []Stored{rec(2, ids[2]), rec(4, ids[4]), rec(6, ids[7]), rec(7, ids[6])}}
	// (d's records are stored at offsets 6 and 7 swapped: seq 1 then seq 0.)
	r := CheckCompacted(atts, []PartitionLog{pl})
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.Kind.String()+" "+p.ID.String())
	}
	want := []string{"lost p0/b/0", "lost p0/c/1", "misplaced p0/d/1", "misplaced p0/d/0", "out-of-order p0/d/0"}
	if !reflect.DeepEqual(got, want) || r.Superseded != 2 {
		t.Fatalf("problems %q, superseded %d; want %q, 2", got, r.Superseded, want)
	}
	// The same logs are full of gaps and losses for Check.
	if r := Check(atts, []PartitionLog{pl}); r.Count(Gap) == 0 || r.Count(Lost) != 4 {
		t.Fatalf("Check of a compacted log: %d gaps, %d lost; want gaps and 4 lost", r.Count(Gap), r.Count(Lost))
	}
	// Offsets that fall back are reported even in a compacted log.
	back := PartitionLog{Topic: "t", Partition: 0, Start: 0, End: 9, Records: []Stored{rec(5, ids[5]), rec(2, ids[2])}}
	if r := CheckCompacted(atts[:3], []PartitionLog{back}); r.Count(Gap) != 1 {
		t.Fatalf("offsets 5 then 2: %v", r.Problems)
	}
}

// A compacted log stored after the read may be thinner (a cleaning ran in
// between) but holds nothing that was not read there.
func TestStoredWithin(t *testing.T) {
	ids := []ID{{0, "a", 0}, {0, "b", 0}, {0, "a", 1}, {0, "b", 1}}
	read := PartitionLog{Topic: "t", End: 4}
	for i, id := range ids {
		read.Records = append(read.Records, rec(int64(i), id))
	}
	thinner := PartitionLog{Topic: "t", End: 4, Records: []Stored{rec(2, ids[2]), rec(3, ids[3])}}
	if err := storedWithin(read, thinner); err != nil {
		t.Fatalf("a thinner stored log: %v", err)
	}
	for name, bad := range map[string]PartitionLog{
		"other value": {Topic: "t", End: 4, Records: []Stored{rec(2, ids[3])}},
		"not read":    {Topic: "t", End: 5, Records: []Stored{rec(4, ID{0, "a", 2})}},
		"other end":   {Topic: "t", End: 3, Records: []Stored{rec(2, ids[2])}},
	} {
		if err := storedWithin(read, bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
