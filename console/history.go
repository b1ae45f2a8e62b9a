package console

import (
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/metrics"
)

// Bounds of one sample: past them a sample keeps the first entries it
// met (the node's state lists topics and groups sorted by name).
const (
	maxSampledTopics = 1000
	maxSampledLags   = 2000
)

// sample is what the sampler read of the node at one instant: the
// cumulative traffic of this node's replicas per topic, and each group's
// lag per topic.
type sample struct {
	At      time.Time
	Traffic map[string]metrics.TrafficCounts // by topic
	Lags    map[groupTopic]int64
}

type groupTopic struct{ Group, Topic string }

// history is a bounded ring of samples, oldest first.
type history struct {
	mu   sync.Mutex // guards ring, next and full
	ring []sample
	next int  // where the next sample goes
	full bool // ring has wrapped
}

func newHistory(n int) *history { return &history{ring: make([]sample, n)} }

func (h *history) add(s sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.next] = s
	h.next = (h.next + 1) % len(h.ring)
	if h.next == 0 {
		h.full = true
	}
}

// samples returns the samples held, oldest first. They are never changed
// after add, so the caller may read them without the lock.
func (h *history) samples() []sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]sample(nil), h.ring[:h.next]...)
	}
	return append(append([]sample(nil), h.ring[h.next:]...), h.ring[:h.next]...)
}

// takeSample reads src: the traffic of its replicas summed by topic, and
// the groups' lag summed by topic from offsets (lag is counted only where
// the partition's end is known).
func takeSample(now time.Time, st metrics.State, offsets []metrics.GroupOffset) sample {
	s := sample{At: now, Traffic: map[string]metrics.TrafficCounts{}, Lags: map[groupTopic]int64{}}
	for _, r := range st.Replicas {
		c, ok := s.Traffic[r.Topic]
		if !ok && len(s.Traffic) >= maxSampledTopics {
			continue
		}
		c.ProducedRecords += r.Traffic.ProducedRecords
		c.ProducedBytes += r.Traffic.ProducedBytes
		c.FetchedRecords += r.Traffic.FetchedRecords
		c.FetchedBytes += r.Traffic.FetchedBytes
		s.Traffic[r.Topic] = c
	}
	for _, o := range offsets {
		k := groupTopic{o.Group, o.Topic}
		if _, ok := s.Lags[k]; !ok && len(s.Lags) >= maxSampledLags {
			continue
		}
		lag := int64(0)
		if o.End >= 0 {
			lag = max(o.End-o.Committed, 0)
		}
		s.Lags[k] += lag
	}
	return s
}

// sampleOnce adds one sample of the node to the history.
func (c *Console) sampleOnce(now time.Time) {
	st := c.cfg.Source.State()
	offsets := st.Groups
	if c.cfg.GroupOffsets != nil {
		offsets = c.cfg.GroupOffsets()
	}
	c.hist.add(takeSample(now, st, offsets))
}

// ratePoint is the traffic per second between two samples.
type ratePoint struct {
	At     int64      `json:"at"` // Unix milliseconds
	Values [4]float64 `json:"v"`  // records in, bytes in, records out, bytes out
}

// rates turns cumulative samples into per-second rates over the topics
// visible says may be shown. A counter that went down (a replica closed
// and reopened) counts from zero.
func rates(ss []sample, visible func(topic string) bool) []ratePoint {
	var out []ratePoint
	for i := 1; i < len(ss); i++ {
		prev, cur := ss[i-1], ss[i]
		secs := cur.At.Sub(prev.At).Seconds()
		if secs <= 0 {
			continue
		}
		var d [4]int64
		for topic, c := range cur.Traffic {
			if !visible(topic) {
				continue
			}
			p := prev.Traffic[topic]
			d[0] += delta(c.ProducedRecords, p.ProducedRecords)
			d[1] += delta(c.ProducedBytes, p.ProducedBytes)
			d[2] += delta(c.FetchedRecords, p.FetchedRecords)
			d[3] += delta(c.FetchedBytes, p.FetchedBytes)
		}
		pt := ratePoint{At: cur.At.UnixMilli()}
		for j := range d {
			pt.Values[j] = float64(d[j]) / secs
		}
		out = append(out, pt)
	}
	return out
}

func delta(cur, prev int64) int64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// lagPoint is a group's lag on one topic at one instant.
type lagPoint struct {
	At  int64 `json:"at"` // Unix milliseconds
	Lag int64 `json:"lag"`
}

// lagHistory is group's lag summed over the visible topics, per sample
// that holds the group.
func lagHistory(ss []sample, group string, visible func(topic string) bool) []lagPoint {
	var out []lagPoint
	for _, s := range ss {
		total, seen := int64(0), false
		for k, lag := range s.Lags {
			if k.Group == group && visible(k.Topic) {
				total += lag
				seen = true
			}
		}
		if seen {
			out = append(out, lagPoint{At: s.At.UnixMilli(), Lag: total})
		}
	}
	return out
}
