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
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	stalls := []Stall{
		{Start: at(150), Took: 120 * time.Millisecond}, // 150 to 270
		{Start: at(790), Took: 10 * time.Millisecond},  // 790 to 800
	}
	for _, tc := range []struct {
		windows []Window
		want    int
	}{
		{[]Window{{at(0), at(120)}}, 0},
		{[]Window{{at(100), at(200)}, {at(230), at(400)}}, 2},
		{[]Window{{at(300), at(400)}, {at(800), at(950)}}, 0}, // the second starts as the stall ends
		{[]Window{{at(700), at(850)}}, 1},
	} {
		if got := Overlapping(stalls, tc.windows); got != tc.want {
			t.Errorf("Overlapping(%v) = %d, want %d", tc.windows, got, tc.want)
		}
	}
	if _, err := Start(t.TempDir(), 0, time.Second); err == nil {
		t.Error("a zero interval was accepted")
	}
}
