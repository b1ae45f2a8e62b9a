package e2e

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// A step records one event of a scripted group run.
type step func(h *GroupHistory)

func assign(round int, m string, gen int32, ps ...int32) step {
	return func(h *GroupHistory) { h.Assigned(round, m, gen, ps) }
}

func revoke(round int, m string, gen int32, ps ...int32) step {
	return func(h *GroupHistory) { h.Revoked(round, m, gen, ps) }
}

func lose(round int, m string, gen int32, ps ...int32) step {
	return func(h *GroupHistory) { h.Lost(round, m, gen, ps) }
}

// gid is the ID of the scripted record at partition p, offset o.
func gid(p int32, o int64) ID { return ID{Producer: 0, Key: fmt.Sprintf("p%d", p), Seq: o} }

func deliver(round int, m string, p int32, o int64) step {
	return func(h *GroupHistory) { h.Delivered(round, m, p, o, gid(p, o).Value(2)) }
}

func commit(round int, m string, p int32, o int64) step {
	return func(h *GroupHistory) { h.Committed(round, m, p, o, time.Now()) }
}

// observe is an OffsetFetch sent now.
func observe(round int, offs map[int32]int64) step {
	return func(h *GroupHistory) { h.Observed(round, h.Len(), offs) }
}

// observeAt is an OffsetFetch sent when the history held asOf events.
func observeAt(round, asOf int, offs map[int32]int64) step {
	return func(h *GroupHistory) { h.Observed(round, asOf, offs) }
}

// cleanGroupRun is a correct run on partitions 0 (offsets 0-4) and 1
// (offsets 0-2): m1 reads both; m2 joins and takes partition 1; m1 loses
// partition 0 after reading offset 2 without committing it, and m2
// re-reads it (at-least-once, allowed); every member of round 0 closes;
// m3, in round 1, resumes both partitions at the committed offsets.
func cleanGroupRun() []step {
	return []step{
		assign(0, "m1", 1, 0, 1), // 0
		deliver(0, "m1", 0, 0),   // 1
		deliver(0, "m1", 0, 1),
		commit(0, "m1", 0, 2),
		deliver(0, "m1", 1, 0),
		commit(0, "m1", 1, 1), // 5
		revoke(0, "m1", 1, 1),
		assign(0, "m2", 2, 1),
		deliver(0, "m2", 1, 1),
		commit(0, "m2", 1, 2),
		observe(0, map[int32]int64{0: 2, 1: 2}), // 10: mid-run
		deliver(0, "m1", 0, 2),
		lose(0, "m1", 2, 0),
		assign(0, "m2", 3, 0),
		deliver(0, "m2", 0, 2), // re-delivered above the last commit
		deliver(0, "m2", 0, 3), // 15
		commit(0, "m2", 0, 4),
		revoke(0, "m2", 3, 0, 1),
		observe(1, map[int32]int64{0: 4, 1: 2}), // 18: the resume point
		assign(1, "m3", 4, 0, 1),
		deliver(1, "m3", 0, 4), // 20
		deliver(1, "m3", 1, 2),
		commit(1, "m3", 0, 5),
		commit(1, "m3", 1, 3),
		observe(1, map[int32]int64{0: 5, 1: 3}),
	}
}

// cleanAttempts acknowledges every scripted record of cleanGroupRun.
func cleanAttempts() []Attempt {
	var atts []Attempt
	for p, n := range []int64{5, 3} {
		for o := range n {
			atts = append(atts, Attempt{ID: gid(int32(p), o), Topic: "t", Partition: int32(p), Outcome: Acked, Offset: o})
		}
	}
	return atts
}

func runSteps(steps []step) []GroupEvent {
	var h GroupHistory
	for _, s := range steps {
		s(&h)
	}
	return h.Events()
}

func TestCheckGroupCleanRun(t *testing.T) {
	r := CheckGroup("t", cleanAttempts(), runSteps(cleanGroupRun()))
	if err := r.Err(); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	want := GroupReport{Acked: 8, Deliveries: 9, Consumed: 8, Redelivered: 1, Commits: 6, Rebalances: 4,
		Members: 3, Rounds: 2, Observed: 3, ResumeChecked: 2}
	if !reflect.DeepEqual(*r, want) {
		t.Fatalf("report %+v, want %+v", *r, want)
	}
	for _, s := range []string{"records produced (acked) 8", "lost 0", "re-delivered below commit 0", "offset regressions 0", "commits 6", "rebalances 4"} {
		if !strings.Contains(r.String(), s) {
			t.Errorf("summary %q lacks %q", r, s)
		}
	}
}

// insert puts s before steps[i].
func insert(steps []step, i int, s ...step) []step { return slices.Insert(steps, i, s...) }

// TestCheckGroupFindsEachProblem plants one fault in the clean run and
// requires exactly it, and only it, reported.
func TestCheckGroupFindsEachProblem(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(steps []step, atts []Attempt) ([]step, []Attempt)
		kind   GroupKind
		want   error
		count  int
	}{
		{
			name: "acknowledged record never delivered",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				return steps, append(atts, Attempt{ID: gid(1, 3), Topic: "t", Partition: 1, Outcome: Acked, Offset: 3})
			},
			kind: GroupLost, want: ErrGroupLost, count: 1,
		},
		{
			name: "new owner starts below the commit in force",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				// m2 takes partition 0 (committed 2) and reads offset 1.
				return insert(steps, 14, deliver(0, "m2", 0, 1)), atts
			},
			kind: BelowCommit, want: ErrBelowCommit, count: 1,
		},
		{
			name: "member reads below its own commit",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				// m1 committed 2 on partition 0, then is handed offset 0 again.
				return insert(steps, 4, deliver(0, "m1", 0, 0)), atts
			},
			kind: BelowCommit, want: ErrBelowCommit, count: 1,
		},
		{
			name: "acknowledged commit lower than an earlier one",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				return insert(steps, 10, commit(0, "m2", 1, 1)), atts
			},
			kind: Regression, want: ErrRegression, count: 1,
		},
		{
			name: "OffsetFetch answers less than acknowledged",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				steps[10] = observe(0, map[int32]int64{0: 2, 1: 1})
				return steps, atts
			},
			kind: Regression, want: ErrRegression, count: 1,
		},
		{
			name: "OffsetFetch forgets a partition",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				steps[10] = observe(0, map[int32]int64{0: 2})
				return steps, atts
			},
			kind: Regression, want: ErrRegression, count: 1,
		},
		{
			name: "next round does not start at the fetched offset",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				// A commit of 5 of unknown outcome took effect: the
				// resume point says 5, round 1 starts at 4.
				steps[18] = observe(1, map[int32]int64{0: 5, 1: 2})
				return steps, atts
			},
			kind: ResumeMismatch, want: ErrResumeMismatch, count: 1,
		},
		{
			name: "next round skips the committed offset",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				// m3 reads partition 0 from 5, and only then 4.
				steps = insert(steps, 20, deliver(1, "m3", 0, 5))
				steps[len(steps)-1] = observe(1, map[int32]int64{0: 6, 1: 3})
				steps = insert(steps, len(steps)-1, commit(1, "m3", 0, 6))
				return steps, append(atts, Attempt{ID: gid(0, 5), Topic: "t", Partition: 0, Outcome: Acked, Offset: 5})
			},
			kind: ResumeMismatch, want: ErrResumeMismatch, count: 1,
		},
		{
			name: "no OffsetFetch before the next round",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				steps = slices.Delete(steps, 18, 19)
				return slices.Delete(steps, 10, 11), atts
			},
			kind: ResumeMismatch, want: ErrResumeMismatch, count: 2,
		},
		{
			name: "delivered from a partition never assigned",
			mutate: func(steps []step, atts []Attempt) ([]step, []Attempt) {
				return insert(steps, 1, deliver(0, "m9", 1, 0)), atts
			},
			kind: BadGroupHistory, want: ErrBadGroupHistory, count: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			steps, atts := tc.mutate(cleanGroupRun(), cleanAttempts())
			r := CheckGroup("t", atts, runSteps(steps))
			err := r.Err()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			var ge *GroupCheckError
			if !errors.As(err, &ge) || ge.Report != r {
				t.Fatalf("error %T is not the report's *GroupCheckError", err)
			}
			if got := r.Count(tc.kind); got != tc.count || len(r.Problems) != tc.count {
				t.Fatalf("%d %s problems of %d, want %d: %v", got, tc.kind, len(r.Problems), tc.count, err)
			}
			for k := range numGroupKinds {
				if k != tc.kind && errors.Is(err, k.Err()) {
					t.Fatalf("error also matches %v", k.Err())
				}
			}
		})
	}
}

// TestCheckGroupAllowed lists histories Kafka allows that a careless
// checker would flag.
func TestCheckGroupAllowed(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(steps []step) []step
	}{
		{
			// A fetch sent before a commit was acknowledged may miss it.
			name: "OffsetFetch sent before the commit was acknowledged",
			mutate: func(steps []step) []step {
				steps[10] = observeAt(0, 9, map[int32]int64{0: 2, 1: 1})
				return steps
			},
		},
		{
			// A commit whose answer was lost may have taken effect.
			name: "OffsetFetch above every acknowledged commit",
			mutate: func(steps []step) []step {
				steps[10] = observe(0, map[int32]int64{0: 3, 1: 2})
				return steps
			},
		},
		{
			// The same offset committed twice.
			name:   "commit repeated",
			mutate: func(steps []step) []step { return insert(steps, 10, commit(0, "m2", 1, 2)) },
		},
		{
			// A member that lost a partition without committing: the next
			// owner starts at the last commit, below what was delivered.
			name: "re-delivery of everything after the last commit",
			mutate: func(steps []step) []step {
				return insert(steps, 11, deliver(0, "m1", 0, 3))
			},
		},
		{
			// The member is assigned a partition nobody committed: it
			// starts from the beginning, again.
			name: "no commit yet: start from the reset offset",
			mutate: func(steps []step) []step {
				return insert(steps, 1, deliver(0, "m1", 0, 0), lose(0, "m1", 1, 0, 1), assign(0, "m1", 1, 0, 1))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckGroup("t", cleanAttempts(), runSteps(tc.mutate(cleanGroupRun())))
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCheckGroupIgnoresOtherTopicsAndOutcomes(t *testing.T) {
	atts := append(cleanAttempts(),
		Attempt{ID: gid(0, 9), Topic: "other", Partition: 0, Outcome: Acked, Offset: 9},
		Attempt{ID: gid(1, 9), Topic: "t", Partition: 1, Outcome: Unknown, Offset: -1},
		Attempt{ID: gid(1, 8), Topic: "t", Partition: -1, Outcome: NotSent, Offset: -1})
	r := CheckGroup("t", atts, runSteps(cleanGroupRun()))
	if err := r.Err(); err != nil || r.Acked != 8 {
		t.Fatalf("acked %d: %v", r.Acked, err)
	}
}

func TestCheckGroupIsDeterministic(t *testing.T) {
	// Many problems of every kind, found from maps.
	steps := cleanGroupRun()
	steps[10] = observe(0, map[int32]int64{})
	steps[18] = observe(1, map[int32]int64{0: 7, 1: 7})
	events := runSteps(insert(steps, 14, deliver(0, "m2", 0, 0), deliver(0, "m2", 0, 1)))
	atts := append(cleanAttempts(), Attempt{ID: gid(1, 5), Topic: "t", Partition: 1, Outcome: Acked, Offset: 5})
	first := CheckGroup("t", atts, events)
	if len(first.Problems) < 6 {
		t.Fatalf("only %d problems: %v", len(first.Problems), first.Err())
	}
	for range 20 {
		if again := CheckGroup("t", atts, events); !reflect.DeepEqual(again, first) {
			t.Fatalf("reports differ:\n%v\n%v", again.Err(), first.Err())
		}
	}
}

func TestGroupHistoryProgress(t *testing.T) {
	var h GroupHistory
	for _, s := range cleanGroupRun() {
		s(&h)
	}
	committed, delivered, ids := h.Progress()
	if !reflect.DeepEqual(committed, map[int32]int64{0: 5, 1: 3}) || !reflect.DeepEqual(delivered, map[int32]int64{0: 5, 1: 3}) || len(ids) != 8 {
		t.Fatalf("committed %v delivered %v, %d ids", committed, delivered, len(ids))
	}
	ev := h.Events()
	if !h.CommittedSince([]int32{0, 1}, ev[16].Time) || h.CommittedSince([]int32{0, 1}, ev[23].Time.Add(1)) {
		t.Fatal("CommittedSince")
	}
	if d, ok := h.FirstCommitAfter(ev[21].Time); !ok || d != ev[22].Time.Sub(ev[21].Time) {
		t.Fatalf("FirstCommitAfter = %v, %v", d, ok)
	}
	if _, ok := h.FirstCommitAfter(ev[23].Time.Add(1)); ok {
		t.Fatal("FirstCommitAfter found a commit sent before")
	}
}

func TestSummaryGroups(t *testing.T) {
	var s Summary
	s.Fault("coordinator-kill")
	s.CoordinatorFailover(2 * time.Second)
	s.Grouped(CheckGroup("t", cleanAttempts(), runSteps(cleanGroupRun())))
	atts := append(cleanAttempts(), Attempt{ID: gid(1, 3), Topic: "t", Partition: 1, Outcome: Acked, Offset: 3})
	s.Grouped(CheckGroup("t", atts, runSteps(cleanGroupRun())))
	out := s.String()
	for _, want := range []string{"consumer groups:      2 checked", "records produced (acked) 17", "lost 1", "commits 12",
		"coordinator kill -> first commit sent after it acknowledged: 1 measured, p50 2s"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
