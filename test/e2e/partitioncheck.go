package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
)

// Read is one record a consumer read while the cluster was under faults.
type Read struct {
	Topic     string
	Partition int32
	Offset    int64
	Value     []byte
}

// CheckReads reports, as StaleRead problems, every read record that the
// final logs do not hold at its offset with the same value: a consumer
// saw a record that was later lost or replaced, so it was served before
// it was committed. Reads of partitions or offsets the logs do not cover
// (below the log start) are not judged.
func CheckReads(reads []Read, logs []PartitionLog) []Problem {
	byTP := map[tpKey]*PartitionLog{}
	for i := range logs {
		byTP[tpKey{logs[i].Topic, logs[i].Partition}] = &logs[i]
	}
	var out []Problem
	for _, r := range reads {
		pl := byTP[tpKey{r.Topic, r.Partition}]
		if pl == nil || r.Offset < pl.Start {
			continue
		}
		id, _ := ParseValue(r.Value)
		i, found := slices.BinarySearchFunc(pl.Records, r.Offset, func(s Stored, off int64) int {
			switch {
			case s.Offset < off:
				return -1
			case s.Offset > off:
				return 1
			}
			return 0
		})
		switch {
		case !found:
			out = append(out, Problem{Kind: StaleRead, ID: id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
				Detail: fmt.Sprintf("read, but the final log ends at %d", pl.End)})
		case !bytes.Equal(pl.Records[i].Value, r.Value):
			other, _ := ParseValue(pl.Records[i].Value)
			out = append(out, Problem{Kind: StaleRead, ID: id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
				Detail: fmt.Sprintf("read, but the final log holds %v there", other)})
		}
	}
	return out
}

// Reader consumes every partition of a topic from the start while the
// run goes on, and keeps what it read for CheckReads.
type Reader struct {
	cons   *client.Consumer
	cancel context.CancelFunc
	done   chan struct{} // closed when the polling goroutine ends
	closed sync.Once     // closes cons once

	mu    sync.Mutex // guards reads
	reads []Read
}

// StartReader starts a Reader of topic's partitions on c's brokers.
func (c *Cluster) StartReader(topic string, partitions int) (*Reader, error) {
	assign := map[int32]client.Offset{}
	for p := range int32(partitions) {
		assign[p] = client.At(0)
	}
	cons, err := client.NewConsumer(client.Brokers(c.Seeds()...),
		client.ConsumePartitions(map[string]map[int32]client.Offset{topic: assign}),
		client.FetchMaxWait(100*time.Millisecond), client.RequestTimeout(3*time.Second))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reader{cons: cons, cancel: cancel, done: make(chan struct{})}
	go r.run(ctx)
	return r, nil
}

// run polls until ctx ends; errors are retried by the next Poll.
func (r *Reader) run(ctx context.Context) {
	defer close(r.done)
	for ctx.Err() == nil {
		recs, err := r.cons.Poll(ctx)
		if err != nil {
			continue
		}
		r.mu.Lock()
		for _, rec := range recs {
			r.reads = append(r.reads, Read{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Value: rec.Value})
		}
		r.mu.Unlock()
	}
}

// Stop ends the Reader and returns everything it read.
func (r *Reader) Stop() []Read {
	r.cancel()
	<-r.done
	r.closed.Do(func() { r.cons.Close() })
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reads)
}

// EpochConflict is two leaders named for one partition and leader epoch.
type EpochConflict struct {
	Topic     string
	Partition int32
	Epoch     int32
	Leaders   [2]int       // the first leader named, and another
	Nodes     [2]int       // the nodes whose Metadata named them
	At        [2]time.Time // when
}

func (e EpochConflict) String() string {
	return fmt.Sprintf("%s[%d] epoch %d: leader %d (node %d's Metadata at %s), then %d (node %d's at %s)", e.Topic, e.Partition, e.Epoch,
		e.Leaders[0], e.Nodes[0], e.At[0].Format("15:04:05.000"), e.Leaders[1], e.Nodes[1], e.At[1].Format("15:04:05.000"))
}

// EpochWatch polls every running node's Metadata for a topic and checks
// that no two answers name different leaders with the same leader epoch
// (each epoch's first conflict is reported).
type EpochWatch struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the polling goroutine ends

	mu        sync.Mutex // guards the fields below
	leaders   map[epochKey]sighting
	conflicts []EpochConflict
	reported  map[epochKey]bool // a conflict of this epoch is in conflicts
	answers   int
}

// sighting is the first leader named for an epoch.
type sighting struct {
	leader, node int
	at           time.Time
}

type epochKey struct {
	tp    tpKey
	epoch int32
}

// WatchEpochs starts an EpochWatch of topic, asking each node every
// interval. Stop it before the nodes stop.
func (c *Cluster) WatchEpochs(topic string, interval time.Duration) *EpochWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &EpochWatch{cancel: cancel, done: make(chan struct{}), leaders: map[epochKey]sighting{}, reported: map[epochKey]bool{}}
	go func() {
		defer close(w.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			for _, id := range c.Running() {
				if md, err := c.Metadata(ctx, id, topic); err == nil {
					w.record(id, topic, md.Topics)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// record notes the leaders one node's Metadata named.
func (w *EpochWatch) record(node int, topic string, topics []kmsg.MetadataResponseTopic) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers++
	for _, t := range topics {
		if t.Topic == nil || *t.Topic != topic || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader < 0 || p.ErrorCode != 0 {
				continue
			}
			k := epochKey{tpKey{topic, p.Partition}, p.LeaderEpoch}
			prev, seen := w.leaders[k]
			switch {
			case !seen:
				w.leaders[k] = sighting{int(p.Leader), node, time.Now()}
			case prev.leader != int(p.Leader) && !w.reported[k]:
				w.reported[k] = true
				w.conflicts = append(w.conflicts, EpochConflict{Topic: topic, Partition: p.Partition, Epoch: p.LeaderEpoch,
					Leaders: [2]int{prev.leader, int(p.Leader)}, Nodes: [2]int{prev.node, node}, At: [2]time.Time{prev.at, time.Now()}})
			}
		}
	}
}

// Stop ends the watch and returns the conflicts it found and the number
// of Metadata answers it checked.
func (w *EpochWatch) Stop() (conflicts []EpochConflict, answers int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.conflicts), w.answers
}

// ProbeResult is what became of one write sent only to an isolated
// leader.
type ProbeResult struct {
	Sent, Done time.Time
	Acks       int16
	Acked      bool  // the node acknowledged it
	Code       int16 // its error code, if it answered with one
	TimedOut   bool  // no answer
}

// IsolationWindow is a partition that isolated a leader: from Cut to
// Healed, every write sent to it only after Cut must not be acknowledged
// before Healed. Such a write can only be committed with a majority, and
// the isolated node has none until the heal; the leader lease only bounds
// how long it may still think itself leader (and answer with a timeout
// rather than NOT_LEADER_OR_FOLLOWER). An acknowledgement that comes after
// the heal may be genuine; it is in the history, so the checker proves it
// in the final log.
type IsolationWindow struct {
	Cut, Healed time.Time
}

// IsolatedAcks returns the probes of w acknowledged in violation of it.
func IsolatedAcks(w IsolationWindow, probes []ProbeResult) []ProbeResult {
	var bad []ProbeResult
	for _, p := range probes {
		if p.Acked && !p.Sent.Before(w.Cut) && p.Done.Before(w.Healed) {
			bad = append(bad, p)
		}
	}
	return bad
}
