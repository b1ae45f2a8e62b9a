package producerstate

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/minikafka/minikafka-go/record"
)

// model is a deliberately naive reference for Validate and Record: it
// keeps every batch a producer appended under its current epoch, looks
// only at the last window of them, and does sequence arithmetic in int64
// modulo 2^31 instead of with record.AddSequence.
type model struct {
	window int
	prods  map[int64]*modelProducer
}

type modelProducer struct {
	epoch   int16
	batches []Batch // every batch appended under epoch, oldest first
}

func newModel(window int) *model {
	return &model{window: window, prods: map[int64]*modelProducer{}}
}

const seqSpace = int64(1) << 31

func (m *model) retained(p *modelProducer) []Batch {
	return p.batches[max(0, len(p.batches)-m.window):]
}

func (m *model) validate(h record.Header) Result {
	if h.ProducerID < 0 {
		return Result{Verdict: Append}
	}
	p := m.prods[h.ProducerID]
	recorded := int16(-1)
	if p != nil {
		recorded = p.epoch
	}
	if h.ProducerEpoch < 0 || h.ProducerEpoch < recorded {
		return Result{Verdict: Fenced, Epoch: recorded}
	}
	same := p != nil && h.ProducerEpoch == p.epoch
	var expected int64
	if same {
		expected = (int64(p.batches[len(p.batches)-1].LastSeq) + 1) % seqSpace
	}
	first, n := int64(h.BaseSequence), int64(h.LastOffsetDelta)+1
	if first < 0 || n < 1 || n > math.MaxInt32 {
		return Result{Verdict: OutOfOrder, Expected: int32(expected)}
	}
	last := (first + n - 1) % seqSpace
	if same {
		for _, b := range m.retained(p) {
			if int64(b.FirstSeq) == first && int64(b.LastSeq) == last {
				return Result{Verdict: Duplicate, Original: b}
			}
		}
	}
	if first != expected {
		return Result{Verdict: OutOfOrder, Expected: int32(expected)}
	}
	return Result{Verdict: Append}
}

// record is called only after validate said Append.
func (m *model) record(h record.Header) {
	if h.ProducerID < 0 {
		return
	}
	p := m.prods[h.ProducerID]
	if p == nil || p.epoch != h.ProducerEpoch {
		p = &modelProducer{epoch: h.ProducerEpoch}
		m.prods[h.ProducerID] = p
	}
	n := int64(h.LastOffsetDelta) + 1
	p.batches = append(p.batches, Batch{
		FirstSeq:   h.BaseSequence,
		LastSeq:    int32((int64(h.BaseSequence) + n - 1) % seqSpace),
		BaseOffset: h.BaseOffset,
		Count:      int32(n),
	})
}

// simClient is what a producer believes about its own sequence.
type simClient struct {
	epoch int16
	next  int32
	sent  []record.Header
}

var simProducers = []int64{0, 1, 2, 3, 1 << 40}

// simulate feeds a random but reproducible history of produce attempts
// (in sequence, huge batches that wrap the sequence space, retries, gaps,
// overlaps, epoch bumps, stale epochs, malformed and plain batches) to a
// Table and to the model, failing on the first difference in a verdict or
// in a producer's retained window.
func simulate(t testing.TB, seed uint64, window, steps int) simResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	tab, m := New(window), newModel(window)
	clients := map[int64]*simClient{}
	sim := simResult{verdicts: map[Verdict]int{}}
	var leo int64
	for step := range steps {
		pid := simProducers[rng.IntN(len(simProducers))]
		c := clients[pid]
		if c == nil {
			c = &simClient{}
			clients[pid] = c
		}
		count := int32(1 + rng.IntN(4))
		h := record.Header{Magic: 2, ProducerID: pid, ProducerEpoch: c.epoch, BaseSequence: c.next}
		switch r := rng.IntN(100); {
		case r < 45: // in sequence
		case r < 50: // huge, to reach the wrap
			count = int32(1<<29 + rng.IntN(1<<29))
		case r < 65: // retry of anything sent before, any epoch
			if len(c.sent) > 0 {
				h = c.sent[rng.IntN(len(c.sent))]
				count = h.LastOffsetDelta + 1
			}
		case r < 72: // gap
			h.BaseSequence = record.AddSequence(c.next, int32(1+rng.IntN(3)))
		case r < 77: // overlap
			if c.next > 0 {
				h.BaseSequence = c.next - 1
			}
		case r < 82: // new epoch, usually starting at 0
			c.epoch++
			h.ProducerEpoch = c.epoch
			h.BaseSequence = 0
			if rng.IntN(5) == 0 {
				h.BaseSequence = int32(1 + rng.IntN(10))
			}
		case r < 86: // stale epoch, possibly negative
			h.ProducerEpoch = c.epoch - int16(1+rng.IntN(2))
		case r < 90: // malformed range
			if rng.IntN(2) == 0 {
				h.BaseSequence = -1 - int32(rng.IntN(5))
			} else {
				count = 0
			}
		default: // not idempotent
			h.ProducerID, h.ProducerEpoch, h.BaseSequence = record.NoProducerID, record.NoProducerEpoch, record.NoSequence
		}
		h.LastOffsetDelta, h.NumRecords, h.BaseOffset = count-1, count, 0

		got, want := tab.Validate(h), m.validate(h)
		if got != want {
			t.Fatalf("seed %d step %d: Validate(%+v) = %+v, model says %+v", seed, step, h, got, want)
		}
		sim.verdicts[got.Verdict]++
		if got.Verdict == Append {
			h.BaseOffset = leo
			leo = h.NextOffset()
			tab.Record(h)
			m.record(h)
			sim.log = append(sim.log, h)
			if h.Idempotent() && int64(h.BaseSequence)+int64(count) > math.MaxInt32 {
				sim.wraps++
			}
			if h.Idempotent() {
				c.epoch, c.next = h.ProducerEpoch, record.NextSequence(h.LastSequence())
			}
		}
		if h.Idempotent() {
			c.sent = append(c.sent, h)
		}
		for _, p := range simProducers {
			e, ok := tab.Lookup(p)
			mp, mok := m.prods[p]
			if ok != mok {
				t.Fatalf("seed %d step %d: producer %d known=%v, model %v", seed, step, p, ok, mok)
			}
			if ok && (e.Epoch != mp.epoch || !slices.Equal(e.Batches, m.retained(mp))) {
				t.Fatalf("seed %d step %d: producer %d = %+v, model epoch %d window %+v",
					seed, step, p, e, mp.epoch, m.retained(mp))
			}
		}
	}
	sim.table = tab
	return sim
}

type simResult struct {
	table    *Table
	log      []record.Header // the appended batches, BaseOffset set, in log order
	verdicts map[Verdict]int
	wraps    int // appended batches that reach past MaxInt32
}

// TestValidateMatchesModel: over many random histories and three window
// sizes, every verdict and every retained window equals the naive model's,
// and the histories reach every verdict and wrap the sequence space.
func TestValidateMatchesModel(t *testing.T) {
	verdicts, wraps := map[Verdict]int{}, 0
	for _, window := range []int{1, 3, DefaultWindow} {
		for seed := range uint64(100) {
			sim := simulate(t, seed, window, 300)
			for v, n := range sim.verdicts {
				verdicts[v] += n
			}
			wraps += sim.wraps
		}
	}
	t.Logf("verdicts %v, wrapping batches %d", verdicts, wraps)
	if wraps == 0 {
		t.Errorf("random histories never wrapped the sequence space")
	}
	for v := Append; v <= OutOfOrder; v++ {
		if verdicts[v] == 0 {
			t.Errorf("random histories never produced %v; the comparison proves little", v)
		}
	}
}
