package report

import "fmt"

// Comparison is one figure of ours set against a peer's or a bound.
type Comparison struct {
	What        string  `json:"what"`
	RecordBytes int     `json:"record_bytes"`
	Ours        float64 `json:"ours"`
	Peer        float64 `json:"peer"` // the peer's figure, or the bound
	Unit        string  `json:"unit"`
	Ratio       float64 `json:"ratio"` // Ours/Peer
	Aim         string  `json:"aim"`
	Met         bool    `json:"met"`
	Missing     bool    `json:"missing,omitempty"` // a run was absent or failed
}

// aims of issue 6: throughput of our client at least this many times the peer's.
var aims = []struct {
	peer string
	min  float64
}{{JSAlways, 2.0}, {JSDefault, 1.3}, {Franz, 1.0}}

// P99AimMs is the aim for our client's p99 at half of its peak load.
const P99AimMs = 20.0

// Compare derives the comparisons the issue asks about, for every size
// measured, and stores them in r.Comparisons.
func (r *Report) Compare() {
	r.Comparisons = nil
	for _, size := range r.Sizes() {
		ours, okOurs := r.Find(Ours, Peak, size)
		okOurs = okOurs && ours.Error == ""
		for _, a := range aims {
			peer, ok := r.Find(a.peer, Peak, size)
			c := Comparison{
				What:        fmt.Sprintf("peak records/s: ours vs %s", r.SystemByKey(a.peer).Name),
				RecordBytes: size, Unit: "records/s", Aim: fmt.Sprintf(">= %.1fx", a.min),
			}
			if !okOurs || !ok || peer.Error != "" || peer.RecordsPerSec == 0 {
				c.Missing = true
			} else {
				c.Ours, c.Peer = ours.RecordsPerSec, peer.RecordsPerSec
				c.Ratio = c.Ours / c.Peer
				c.Met = c.Ratio >= a.min
			}
			r.Comparisons = append(r.Comparisons, c)
		}
		half, ok := r.Find(Ours, HalfLoad, size)
		what := "p99 latency of ours at half of our peak"
		if r.Settings.FixedRate > 0 {
			what = fmt.Sprintf("p99 latency of ours at %.0f records/s (forced by -rate)", r.Settings.FixedRate)
		}
		c := Comparison{
			What:        what,
			RecordBytes: size, Unit: "ms", Peer: P99AimMs, Aim: fmt.Sprintf("<= %.0f ms", P99AimMs),
		}
		if !ok || half.Error != "" || half.Records == 0 {
			c.Missing = true
		} else {
			c.Ours = half.P99ms
			c.Ratio = c.Ours / c.Peer
			c.Met = c.Ours <= P99AimMs
		}
		r.Comparisons = append(r.Comparisons, c)
	}
}
