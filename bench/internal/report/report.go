// Package report turns benchmark runs into what a reader sees: the table
// printed on stdout (with ratios ours/peer and the aims of issues 14 and 15), the
// JSON file of every figure, and a chart of throughput and latency per
// system.
//
// A caller's duties: fill a Report with one Run per measured run (Add
// converts a load.Result; Fail records a system that could not be set
// up), call Compare to derive the comparisons, then
// WriteTable, WriteJSON and WriteChart. Everything here is a pure function
// of the Report: equal reports give equal outputs.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/bench/internal/load"
)

// System keys, in the order tables and charts list them.
const (
	Ours       = "ours"        // MiniKafka, our client package
	Franz      = "franz"       // MiniKafka, franz-go's kgo producer
	FranzTxn   = "franz-txn"   // MiniKafka, franz-go's transactional producer
	OursCached = "ours-cached" // MiniKafka, topic with write.caching=true, our client
	OursTLS    = "ours-tls"    // MiniKafka secured as configs/secure (SASL_SSL, mTLS between nodes), our client
	JSAlways   = "js-always"   // JetStream, sync_interval: always
	JSDefault  = "js-default"  // JetStream, default sync (every 2 min)
)

// SystemOrder is the order of systems in every output.
var SystemOrder = []string{Ours, Franz, FranzTxn, OursCached, OursTLS, JSAlways, JSDefault}

// minikafka reports whether a system key is one of our cluster's whose
// stalls the aims judge. FranzTxn's are shown, not judged: its records are
// acknowledged a transaction at a time.
func minikafka(key string) bool {
	return key == Ours || key == Franz || key == OursCached || key == OursTLS
}

// Modes of a run.
const (
	Peak     = "peak"      // closed loop: as fast as the window allows
	HalfLoad = "half-load" // open loop at half of our client's peak rate
)

// System describes one system under test.
type System struct {
	Key        string `json:"key"`
	Name       string `json:"name"`
	Client     string `json:"client"`
	Durability string `json:"durability"` // what an ack promises
}

// Run is one measured run.
type Run struct {
	System      string  `json:"system"` // a System key
	Mode        string  `json:"mode"`
	RecordBytes int     `json:"record_bytes"`
	Partitions  int     `json:"partitions"`                        // of the topic, or JetStream streams
	OfferedRate float64 `json:"offered_records_per_sec,omitempty"` // HalfLoad only
	Window      int     `json:"window_records"`
	// Leaders is how many partitions (streams) each server led when the
	// topic (streams) had been created, by node id (server name).
	Leaders map[string]int `json:"leaders_per_node,omitempty"`

	MeasuredFrom  time.Time `json:"measured_from"`
	Seconds       float64   `json:"seconds"` // measured window
	Records       uint64    `json:"records"`
	RecordsPerSec float64   `json:"records_per_sec"`
	MBPerSec      float64   `json:"mb_per_sec"` // value bytes, 10^6
	P50ms         float64   `json:"p50_ms"`
	P99ms         float64   `json:"p99_ms"`
	P999ms        float64   `json:"p99_9_ms"`
	MaxMs         float64   `json:"max_ms"`
	MeanMs        float64   `json:"mean_ms"`
	ServerCPU     float64   `json:"server_cpu_seconds"`
	ClientCPU     float64   `json:"client_cpu_seconds"`
	// OtherCPU is what the rest of the machine used during the run.
	OtherCPU float64 `json:"other_cpu_seconds"`
	// ServerCPUPerRecordUs is server CPU microseconds per acknowledged record.
	ServerCPUPerRecordUs float64 `json:"server_cpu_us_per_record"`
	// Elections is how many times leadership of the topic's partitions
	// changed during the run (from the leader epochs); -1 when unknown.
	Elections int64  `json:"elections"`
	Errors    uint64 `json:"errors"`
	// AckGaps is how many times the measured period went more than 100 ms
	// without an acknowledgement (each such gap holds a 100 ms window,
	// wherever it starts, without one); LongestGapMs the longest.
	AckGaps      int     `json:"ack_gaps_over_100ms"`
	LongestGapMs float64 `json:"longest_ack_gap_ms"`
	// DiskMaxSyncMs is the slowest 4 KiB fdatasync a probe made on the
	// servers' disk during the measured window (every 50 ms; 0 when not
	// probed), DiskStalls how many took 50 ms or more, and
	// AckGapsOnDiskStall how many of those gaps such a sync overlapped.
	DiskMaxSyncMs      float64 `json:"disk_max_sync_ms,omitempty"`
	DiskStalls         int     `json:"disk_stalls,omitempty"`
	AckGapsOnDiskStall int     `json:"ack_gaps_on_disk_stall,omitempty"`
	// Timeline is [records acked, slowest ack in ms] per 100ms of the
	// measured window: stalls show up here.
	Timeline [][2]float64 `json:"timeline_100ms,omitempty"`
	Error    string       `json:"error,omitempty"` // first failure or run error
}

// Settings are the knobs the whole report ran with.
type Settings struct {
	Warmup      string  `json:"warmup"`
	Duration    string  `json:"duration"`
	WindowBytes int     `json:"window_bytes"`
	Partitions  []int   `json:"partitions"` // partition counts measured, ascending
	Servers     int     `json:"servers"`
	Replicas    int     `json:"replicas"`
	Quick       bool    `json:"quick"`
	FixedRate   float64 `json:"fixed_rate,omitempty"` // records/s of the half-load runs when forced by -rate
	NodeArgs    string  `json:"node_args,omitempty"`
	OurClient   string  `json:"our_client_options,omitempty"` // options beyond the defaults
	// TxnProducers and TxnRecords shape franz-txn: transactional clients
	// at each size (in the order of the sizes measured), transactions of
	// that many records.
	TxnProducers []int `json:"txn_producers,omitempty"`
	TxnRecords   int   `json:"txn_records,omitempty"`
	// CachedTopicConfigs are the topic configs of ours-cached's topic.
	CachedTopicConfigs map[string]string `json:"cached_topic_configs,omitempty"`
}

// Report is everything one bench invocation measured.
type Report struct {
	Started     time.Time    `json:"started"`
	Host        Host         `json:"host"`
	Settings    Settings     `json:"settings"`
	Systems     []System     `json:"systems"`
	Runs        []Run        `json:"runs"`
	Comparisons []Comparison `json:"comparisons"`
	// Scaling is, per system and size, peak records/s with more than one
	// partition over the figure with one, from the same invocation.
	Scaling []Scaling `json:"partition_scaling,omitempty"`
	// SetupErrors are systems that could not be measured at all (a cluster
	// that did not start, a topic the nodes refused), one line each.
	SetupErrors []string `json:"setup_errors,omitempty"`
}

// Host describes the machine.
type Host struct {
	GoVersion string `json:"go_version"`
	CPUs      int    `json:"cpus"`
	OS        string `json:"os"`
	Note      string `json:"note"`
	// PageReporting is set when this VM hands freed memory, in blocks of
	// PageReportingOrder and larger, back to its host (proc.PageReporting).
	PageReporting      bool `json:"page_reporting,omitempty"`
	PageReportingOrder int  `json:"page_reporting_order,omitempty"`
}

// RunInfo is what the caller knows of a run besides its load.Result.
type RunInfo struct {
	System, Mode string
	Size         int // record value bytes
	Partitions   int
	Window       int
	Offered      float64 // records/s, HalfLoad only
	Elections    int64   // -1 when unknown
	Leaders      map[string]int
	Disk         DiskProbe // what the disk probe saw, if one ran
}

// DiskProbe is what a disk probe saw during a run (see Run).
type DiskProbe struct {
	MaxSync     time.Duration
	Stalls      int
	GapsOnStall int
}

// Add appends a run built from a load result; runErr is the error load.Run
// returned, if any.
func (r *Report) Add(in RunInfo, res load.Result, runErr error) {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	run := Run{
		System: in.System, Mode: in.Mode, RecordBytes: in.Size, Partitions: max(in.Partitions, 1),
		OfferedRate: in.Offered, Window: in.Window, Leaders: in.Leaders,
		MeasuredFrom: res.Start.UTC(), Seconds: res.Elapsed.Seconds(), Records: res.Records,
		RecordsPerSec: res.RecordsPerSec(), MBPerSec: res.MBPerSec(),
		P50ms: ms(res.Latency.Quantile(0.50)), P99ms: ms(res.Latency.Quantile(0.99)),
		P999ms: ms(res.Latency.Quantile(0.999)), MaxMs: ms(res.Latency.Max), MeanMs: ms(res.Latency.Mean()),
		ServerCPU: res.ServerCPU, ClientCPU: res.ClientCPU, OtherCPU: res.OtherCPU, Errors: res.Errors,
		Elections: in.Elections, AckGaps: res.StallCount, LongestGapMs: ms(res.LongestGap),
		DiskMaxSyncMs: ms(in.Disk.MaxSync), DiskStalls: in.Disk.Stalls, AckGapsOnDiskStall: in.Disk.GapsOnStall,
	}
	for _, sl := range res.Timeline {
		run.Timeline = append(run.Timeline, [2]float64{float64(sl.Records), ms(sl.Max)})
	}
	if res.Records > 0 {
		run.ServerCPUPerRecordUs = res.ServerCPU * 1e6 / float64(res.Records)
	}
	switch {
	case runErr != nil:
		run.Error = runErr.Error()
	case res.FirstErr != nil:
		run.Error = res.FirstErr.Error()
	}
	r.Runs = append(r.Runs, run)
}

// Fail records that system could not be measured at all with that many
// partitions, and why.
func (r *Report) Fail(system string, partitions int, err error) {
	r.SetupErrors = append(r.SetupErrors, fmt.Sprintf("%s, %d partition(s): %v", r.SystemByKey(system).Name, partitions, err))
}

// Find returns the run of system in mode at size with that many partitions.
func (r *Report) Find(system, mode string, size, partitions int) (Run, bool) {
	for _, run := range r.Runs {
		if run.System == system && run.Mode == mode && run.RecordBytes == size && run.Partitions == partitions {
			return run, true
		}
	}
	return Run{}, false
}

// PartitionCounts returns the partition counts measured, ascending.
func (r *Report) PartitionCounts() []int {
	var ps []int
	for _, run := range r.Runs {
		if !slices.Contains(ps, run.Partitions) {
			ps = append(ps, run.Partitions)
		}
	}
	slices.Sort(ps)
	return ps
}

// Stalled reports whether the run had a 100ms window without an ack.
func (run Run) Stalled() bool { return run.AckGaps > 0 }

// Sizes returns the record sizes measured, largest first.
func (r *Report) Sizes() []int {
	var s []int
	for _, run := range r.Runs {
		if !slices.Contains(s, run.RecordBytes) {
			s = append(s, run.RecordBytes)
		}
	}
	slices.Sort(s)
	slices.Reverse(s)
	return s
}

// SystemByKey returns the description of a system.
func (r *Report) SystemByKey(key string) System {
	for _, s := range r.Systems {
		if s.Key == key {
			return s
		}
	}
	return System{Key: key, Name: key}
}

// WriteJSON writes the report, indented, to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
