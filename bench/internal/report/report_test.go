package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/hist"
	"github.com/minikafka/minikafka-go/bench/internal/load"
)

// result makes a load.Result of n records of size bytes over one second,
// every latency equal to lat.
func result(n uint64, size int, lat time.Duration) load.Result {
	h := hist.New()
	for range n {
		h.Record(lat)
	}
	return load.Result{Records: n, Bytes: n * uint64(size), Elapsed: time.Second, Latency: h.Snapshot(), ServerCPU: 2, OtherCPU: 0.05}
}

func sample() *Report {
	r := &Report{Settings: Settings{Warmup: "1s", Duration: "1s", WindowBytes: 4 << 20, Partitions: []int{1, 12}, Servers: 3, Replicas: 3},
		Host: Host{CPUs: 2}, Systems: []System{{Key: Ours, Name: "minikafka", Durability: "fsync"}, {Key: JSAlways, Name: "js-a", Durability: "fsync too"},
			{Key: OursCached, Name: "ours-cached", Durability: "durable in memory"}, {Key: "none", Name: "not-run", Durability: "never run"}}}
	add := func(system, mode string, size, parts int, offered float64, elections int64, res load.Result, err error) {
		r.Add(RunInfo{System: system, Mode: mode, Size: size, Partitions: parts, Window: 4 << 20 / size,
			Offered: offered, Elections: elections}, res, err)
	}
	add(Ours, Peak, 1024, 1, 0, 0, result(3000, 1024, 4*time.Millisecond), nil)
	add(JSAlways, Peak, 1024, 1, 0, -1, result(1000, 1024, 8*time.Millisecond), nil)
	add(JSDefault, Peak, 1024, 1, 0, -1, result(2500, 1024, 2*time.Millisecond), nil)
	add(OursCached, Peak, 1024, 1, 0, 0, result(3500, 1024, 2*time.Millisecond), nil)
	add(Franz, Peak, 1024, 1, 0, 1, result(3000, 1024, 2*time.Millisecond), nil)
	add(FranzTxn, Peak, 1024, 1, 0, 0, result(1800, 1024, 20*time.Millisecond), nil)
	add(Ours, HalfLoad, 1024, 1, 1500, 0, result(1500, 1024, 30*time.Millisecond), nil)
	add(JSAlways, HalfLoad, 1024, 1, 1500, -1, result(1500, 1024, 10*time.Millisecond), nil)
	add(Ours, Peak, 100, 1, 0, 0, result(100, 100, time.Millisecond), nil)
	add(JSAlways, Peak, 100, 1, 0, -1, result(10, 100, time.Millisecond), os.ErrDeadlineExceeded)
	many := result(7500, 1024, 5*time.Millisecond)
	many.StallCount, many.LongestGap = 3, 420*time.Millisecond
	r.Add(RunInfo{System: Ours, Mode: Peak, Size: 1024, Partitions: 12, Window: 4096,
		Leaders: map[string]int{"1": 4, "2": 5, "3": 3},
		Disk:    DiskProbe{MaxSync: 380 * time.Millisecond, Stalls: 2, GapsOnStall: 3}}, many, nil)
	r.Compare()
	return r
}

func TestAddDerivesFigures(t *testing.T) {
	r := sample()
	run, ok := r.Find(Ours, Peak, 1024, 1)
	if !ok {
		t.Fatal("ours peak 1 KiB missing")
	}
	if run.RecordsPerSec != 3000 || run.MBPerSec != 3000*1024/1e6 || run.ServerCPUPerRecordUs != 2e6/3000 {
		t.Fatalf("derived figures %+v", run)
	}
	if run.P99ms < 3.9 || run.P99ms > 4.1 {
		t.Fatalf("p99 %v ms, want 4", run.P99ms)
	}
	if f, _ := r.Find(JSAlways, Peak, 100, 1); f.Error == "" {
		t.Fatal("a run error must be kept")
	}
	if got := r.Sizes(); len(got) != 2 || got[0] != 1024 || got[1] != 100 {
		t.Fatalf("sizes %v, want [1024 100]", got)
	}
}

func TestCompareAgainstAims(t *testing.T) {
	r := sample()
	type key struct {
		size int
		what string
	}
	type verdict struct {
		ratio  float64
		status string
	}
	// Systems the report does not describe are named by their key.
	want := map[key]verdict{
		{1024, "peak records/s: minikafka vs js-a"}:                                           {3, "met"},           // aim 1.5x
		{1024, "peak records/s: ours-cached vs js-default"}:                                   {1.4, "met"},         // aim 1.3x
		{1024, "peak records/s: minikafka vs franz"}:                                          {1, "met"},           // aim 1.0x, equal counts
		{1024, "transactional peak records/s: minikafka/kgo-txn vs idempotent minikafka/kgo"}: {0.6, "SHORT"},       // aim 0.7x
		{1024, "p99 latency of minikafka at half of its peak"}:                                {30.0 / 20, "SHORT"}, // 30ms > 20ms
		{100, "peak records/s: minikafka vs js-a"}:                                            {0, "failed"},        // the peer's run failed
		{100, "peak records/s: minikafka vs js-default"}:                                      {0, "not run"},       // aim 3x
		{100, "peak records/s: minikafka vs franz"}:                                           {0, "not run"},       // not run
		{100, "p99 latency of minikafka at half of its peak"}:                                 {0, "not run"},       //
		{0, "100 ms windows without an ack, every minikafka run"}:                             {0, "SHORT"},         // the 12-partition run stalled
		{1024, "peak records/s of minikafka: 12 partitions vs 1"}:                             {2.5, "met"},         // 7500 vs 3000
		{100, "peak records/s of minikafka: 12 partitions vs 1"}:                              {0, "not run"},       //
		{1024, "SASL_SSL clients and mutual TLS between nodes: minikafka-tls vs minikafka"}:   {0, "not run"},       // aim 0.85x
	}
	got := map[key]verdict{}
	for _, c := range r.Comparisons {
		got[key{c.RecordBytes, c.What}] = verdict{c.Ratio, c.Status}
		if c.Met != (c.Status == "met") || c.Missing != (c.Status == "not run" || c.Status == "failed") {
			t.Errorf("%s: met %v missing %v but status %s", c.What, c.Met, c.Missing, c.Status)
		}
	}
	if len(got) != len(r.Comparisons) || len(r.Comparisons) != 13 {
		t.Errorf("%d comparisons, want the 13 aims once each: %+v", len(r.Comparisons), r.Comparisons)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("no comparison %v in %+v", k, r.Comparisons)
			continue
		}
		if g.status != w.status || math.Abs(g.ratio-w.ratio) > 0.02 {
			t.Errorf("%v: got %+v, want %+v", k, g, w)
		}
	}
}

// Scaling lists our 12-partition peak against the 1-partition one, and
// nothing for systems measured with one partition only.
func TestScaling(t *testing.T) {
	r := sample()
	if len(r.Scaling) != 1 {
		t.Fatalf("scaling %+v, want ours at 1 KiB only", r.Scaling)
	}
	if s := r.Scaling[0]; s.System != Ours || s.RecordBytes != 1024 || s.Partitions != 12 || s.Ratio != 2.5 {
		t.Fatalf("scaling %+v", s)
	}
}

// Without the stalled run the stall aim is met; with no MiniKafka run at
// all it was not run.
func TestStallAim(t *testing.T) {
	r := sample()
	r.Runs = slices.DeleteFunc(r.Runs, func(run Run) bool { return run.Partitions == 12 })
	r.Compare()
	if c := r.stallAim(); c.Status != "met" || c.Figure != "0 gap(s) over 100 ms in 0 of 5 runs; longest 0 ms" {
		t.Fatalf("no stalls: %+v", c)
	}
	r.Runs = slices.DeleteFunc(r.Runs, func(run Run) bool { return minikafka(run.System) })
	if c := r.stallAim(); c.Status != "not run" {
		t.Fatalf("no minikafka runs: %+v", c)
	}
}

func TestTableShowsRatiosAndVerdicts(t *testing.T) {
	var buf bytes.Buffer
	r := sample()
	r.Fail(OursCached, 12, errors.New("refused"))
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"3.00x",         // ours/js-always at 1 KiB peak
		"1.20x",         // ours/js-default
		"js-a (FAILED)", // the failed run is marked
		"failed",        // and its comparison too
		"not run",       // an aim whose runs were not made
		"SHORT", "met",
		"HALF LOAD",
		"fsync too",         // durability is stated
		"durable in memory", // of every system with runs
		"4/5/3",             // leaders per node
		"3 STALL",           // the stalled run is flagged in its row
		"STALLS: 1 run(s)",
		"1 and 12 partition(s)",
		"longest gap 420 ms",
		"disk: slowest probe sync 380 ms, 3 of 3 gap(s) during a sync of 50 ms or more", // the disk beside it
		"NOT RUN: ours-cached, 12 partition(s): refused",                                // a system that could not be set up
		"PARTITIONS:", "2.50x", // the scaling of ours
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A run that shared the machine with other work is flagged.
func TestTableWarnsAboutBusyMachine(t *testing.T) {
	r := sample()
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "never run") {
		t.Fatalf("a system without runs is described:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "WARNING") {
		t.Fatalf("quiet runs flagged:\n%s", buf.String())
	}
	r.Runs[2].OtherCPU = 0.5 // of 2 CPUs x 1s
	buf.Reset()
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "WARNING: in 1 run(s)") {
		t.Fatalf("busy run not flagged:\n%s", buf.String())
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := sample()
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != len(r.Runs) || back.Runs[0].RecordsPerSec != 3000 || len(back.Comparisons) != len(r.Comparisons) {
		t.Fatalf("round trip lost data: %+v", back)
	}
}

func TestChartFiles(t *testing.T) {
	dir := t.TempDir()
	r := sample()
	if err := r.WriteChart(filepath.Join(dir, "c.png")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "c.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
		t.Fatalf("png is %v", b)
	}
	if err := r.WriteChart(filepath.Join(dir, "c.svg")); err != nil {
		t.Fatal(err)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "c.svg"))
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("minikafka")) {
		t.Fatal("svg lacks its root element or the system names")
	}
	if err := r.WriteChart(filepath.Join(dir, "c.gif")); err == nil {
		t.Fatal("unknown format accepted")
	}
	if err := (&Report{}).WriteChart(filepath.Join(dir, "e.png")); err == nil {
		t.Fatal("empty report charted")
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int]string{100: "100 B", 1024: "1 KiB", 4 << 20: "4 MiB", 1500: "1500 B"} {
		if got := SizeLabel(n); got != want {
			t.Errorf("SizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTableNamesFreePageReporting(t *testing.T) {
	r := sample()
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "free page reporting") {
		t.Fatalf("named on a machine without it:\n%s", buf.String())
	}
	r.Host.PageReporting, r.Host.PageReportingOrder = true, 9
	buf.Reset()
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "free page reporting, order 9") {
		t.Fatalf("not named:\n%s", buf.String())
	}
}
