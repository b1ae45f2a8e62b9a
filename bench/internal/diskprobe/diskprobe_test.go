package diskprobe

import (
	"os"
	"testing"
	"time"
)

func TestProbeSyncsAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(dir, time.Millisecond, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	res := p.Stop()
	if res.Syncs == 0 || res.Max <= 0 || len(res.Stalls) != res.Syncs {
		t.Fatalf("a 1 ns threshold keeps every sync as a stall: %+v", res)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("probe file left behind: %v", ents)
	}
}

func TestOverlapping(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := 100 * time.Millisecond
	stalls := []Stall{
		{Start: t0.Add(150 * time.Millisecond), Took: 120 * time.Millisecond}, // slots 1 and 2
		{Start: t0.Add(790 * time.Millisecond), Took: 10 * time.Millisecond},  // ends at slot 8's start
	}
	for _, tc := range []struct {
		empty []int
		want  int
	}{
		{[]int{0}, 0},
		{[]int{1, 2}, 2},
		{[]int{3, 8}, 0},
		{[]int{7}, 1},
	} {
		if got := Overlapping(stalls, t0, w, tc.empty); got != tc.want {
			t.Errorf("Overlapping(%v) = %d, want %d", tc.empty, got, tc.want)
		}
	}
	if _, err := Start(t.TempDir(), 0, time.Second); err == nil {
		t.Error("a zero interval was accepted")
	}
}
