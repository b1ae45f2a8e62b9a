package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/record"
)

// partitionProbeProducer names the records of writes sent only to an
// isolated leader.
const partitionProbeProducer = 1001

// partitionHold is how long a partition lasts at least: several election
// timeouts and leader leases (500 ms each by default), so the isolated
// side has certainly lost its leadership before the heal.
const partitionHold = 3 * time.Second

// partitionRun is a load on a partitionable cluster, with a consumer
// reading throughout (stale reads) and a watch of every node's Metadata
// (two leaders with one epoch).
type partitionRun struct {
	*load
	net    *Net
	parts  int32
	reader *Reader
	epochs *EpochWatch

	mu       sync.Mutex // guards probeSeq
	probeSeq int64
}

// startPartitionRun starts a partitionable cluster with extra node flags,
// a topic of parts partitions under load, a Reader and an EpochWatch.
func startPartitionRun(ctx context.Context, t *testing.T, topic string, parts int32, args ...string) *partitionRun {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := Start(sctx, t, Options{Binary: nodeBinary, Args: args, Partitionable: true})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	keepLogs(t, c)
	r := &partitionRun{net: c.Net(), parts: parts}
	r.load = startLoad(ctx, t, c, WorkloadConfig{Topic: topic, Producers: 3}, parts, 100)
	r.reader, err = c.StartReader(topic, int(parts))
	must(t, err)
	r.epochs = c.WatchEpochs(topic, 100*time.Millisecond)
	t.Cleanup(func() { r.epochs.Stop(); r.reader.Stop() }) // both may be stopped twice
	return r
}

// finish stops the load, the Reader and the watch, and verifies: nothing
// acknowledged lost or duplicated, no stale read, replicas identical, no
// epoch with two leaders.
func (r *partitionRun) finish(ctx context.Context, t *testing.T) {
	t.Helper()
	if refused := r.net.Refused(); refused > 0 {
		t.Errorf("the proxies refused %d connections or packets from addresses that are no node's", refused)
	}
	must(t, r.w.WaitAcked(ctx, -1, time.Now(), 50))
	stopWorkload(ctx, t, r.w)
	conflicts, answers := r.epochs.Stop()
	r.sum.Epochs(conflicts, answers)
	for _, c := range conflicts {
		t.Errorf("two leaders with one epoch: %v", c)
	}
	reads := r.reader.Stop()
	vctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	v, err := r.c.VerifyReads(vctx, r.h.Attempts(), reads, r.topic)
	r.sum.Verified(v)
	if v != nil {
		t.Logf("verified: %v; %d Metadata answers watched", v, answers)
	}
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if v.Report.Acked == 0 || v.Report.Reads == 0 {
		t.Fatalf("nothing acknowledged or read: the scenario proved nothing")
	}
}

// nextProbe returns the ID of a new probe record.
func (r *partitionRun) nextProbe() ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probeSeq++
	return ID{Producer: partitionProbeProducer, Key: "iso", Seq: r.probeSeq}
}

// prober writes to one node only, one probe at a time, until stopped.
type prober struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex // guards results and attempts
	results  []ProbeResult
	attempts []Attempt
}

// startProber sends probes of topic[p] to node's Kafka port, alternating
// acks=all and acks=1, each with a 2 s produce timeout.
func (r *partitionRun) startProber(node int, p int32) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	pr := &prober{cancel: cancel, done: make(chan struct{})}
	addr := r.c.Node(node).KafkaAddr
	go func() {
		defer close(pr.done)
		for i := 0; ctx.Err() == nil; i++ {
			acks := int16(-1)
			if i%2 == 1 {
				acks = 1
			}
			pr.probe(addr, r.topic, p, r.nextProbe(), acks)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return pr
}

// probe sends one record and waits up to 5 s for the answer.
func (pr *prober) probe(addr, topic string, p int32, id ID, acks int16) {
	batch, err := record.AppendBatch(nil, record.PlainBatch(record.CompressionNone),
		[]record.Record{{Timestamp: time.Now().UnixMilli(), Key: []byte(id.Key), Value: id.Value(0)}})
	if err != nil {
		return // cannot happen: a fixed, valid batch
	}
	req := produceRequest(topic, batch)
	req.Acks = acks
	req.TimeoutMillis = 2000
	req.Topics[0].Partitions[0].Partition = p
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := ProbeResult{Sent: time.Now(), Acks: acks}
	a := Attempt{ID: id, Topic: topic, Partition: p, Outcome: Unknown, Offset: -1, Sent: res.Sent}
	resp, err := Request(ctx, addr, req)
	res.Done = time.Now()
	a.Done = res.Done
	switch {
	case err != nil:
		res.TimedOut, a.Err = true, err
	default:
		pp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		res.Code = pp.ErrorCode
		if pp.ErrorCode == 0 {
			res.Acked, a.Outcome, a.Offset = true, Acked, pp.BaseOffset
		} else {
			// Unknown, NOT_LEADER_OR_FOLLOWER too: as in Kafka, a leader
			// that loses its leadership after appending answers with it,
			// and the next leader may still commit the record.
			a.Err = &client.KafkaError{Code: pp.ErrorCode}
		}
	}
	pr.mu.Lock()
	pr.results = append(pr.results, res)
	pr.attempts = append(pr.attempts, a)
	pr.mu.Unlock()
}

// stop ends the prober after its probe in flight.
func (pr *prober) stop() ([]ProbeResult, []Attempt) {
	pr.cancel()
	<-pr.done
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.results, pr.attempts
}

// firstAcks waits until each of parts acknowledged a record produced at
// or after t0 and returns the longest time from t0 to such an
// acknowledgement; ok is false if one did not come within d.
func (r *partitionRun) firstAcks(ctx context.Context, parts []int32, t0 time.Time, d time.Duration) (worst time.Duration, ok bool) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for _, q := range parts {
		if r.w.WaitAcked(wctx, q, t0, 1) != nil {
			return 0, false
		}
	}
	attempts := r.h.Attempts()
	for _, q := range parts {
		dq, found := FailoverTime(attempts, r.topic, q, t0)
		if !found {
			return 0, false
		}
		worst = max(worst, dq)
	}
	return worst, true
}

// others are the nodes other than id.
func others(id int) []int {
	var out []int
	for o := 1; o <= NodeCount; o++ {
		if o != id {
			out = append(out, o)
		}
	}
	return out
}

// leaderFault is a network fault aimed at the node leading a partition.
type leaderFault struct {
	kind  string
	apply func(n *Net, leader int) // cuts links; Heal undoes them
	// probe: the leader loses its majority, so writes sent only to it
	// must not be acknowledged until the heal.
	probe bool
	// healAfter, if set, heals that long after the cut, whatever has
	// happened (a heal during the election); else the heal comes after
	// the majority side acknowledged and partitionHold passed.
	healAfter time.Duration
	// noFailover: the fault need not move the leadership (gossip only);
	// the first acknowledgement is measured if it comes, not required.
	noFailover bool
}

// The network faults aimed at a partition's leader.
var (
	isolateLeader = leaderFault{kind: "partition-isolate-leader", probe: true,
		apply: func(n *Net, l int) { n.Isolate(l, BothChannels...) }}
	oneWayOut = leaderFault{kind: "partition-oneway-leader-out", probe: true,
		apply: func(n *Net, l int) {
			for _, o := range others(l) {
				n.Cut(l, o, BothChannels...)
			}
		}}
	oneWayIn = leaderFault{kind: "partition-oneway-leader-in", probe: true,
		apply: func(n *Net, l int) {
			for _, o := range others(l) {
				n.Cut(o, l, BothChannels...)
			}
		}}
	raftOnly = leaderFault{kind: "partition-raft-only", probe: true,
		apply: func(n *Net, l int) { n.Isolate(l, Raft) }}
	gossipOnly = leaderFault{kind: "partition-gossip-only", noFailover: true,
		apply: func(n *Net, l int) { n.Isolate(l, Gossip) }}
	healInElection = leaderFault{kind: "partition-heal-in-election", healAfter: 700 * time.Millisecond,
		apply: func(n *Net, l int) { n.Isolate(l, BothChannels...) }}
)

// partitionLeader applies f to the leader of topic[p] under load, probes
// the isolated leader if f says so, measures the time to the first
// acknowledgement of a record produced after the cut (on the partitions
// the leader led), heals and waits until the replicas agree.
func partitionLeader(ctx context.Context, t *testing.T, r *partitionRun, f leaderFault, p int32) {
	t.Helper()
	before, err := r.c.Leaders(ctx, r.topic)
	must(t, err)
	l := before[p].Node
	led := ledBy(before, l)
	must(t, r.w.WaitAcked(ctx, p, time.Now(), 1))

	t0 := time.Now()
	f.apply(r.net, l)
	r.sum.Fault(f.kind)
	var pr *prober
	if f.probe {
		pr = r.startProber(l, p)
	}
	var d time.Duration
	var acked bool
	if f.healAfter > 0 {
		sleepCtx(ctx, f.healAfter)
	} else {
		within := 30 * time.Second
		if f.noFailover {
			within = partitionHold
		}
		d, acked = r.firstAcks(ctx, led, t0, within)
		if !acked && !f.noFailover {
			r.net.Heal()
			t.Fatalf("%s of node %d: no acknowledgement on %s%v within %v", f.kind, l, r.topic, led, within)
		}
		sleepCtx(ctx, time.Until(t0.Add(partitionHold)))
	}
	healed := time.Now()
	r.net.Heal()
	if pr != nil {
		results, attempts := pr.stop()
		w := IsolationWindow{Cut: t0, Healed: healed}
		r.sum.Probes(w, results)
		for _, a := range attempts {
			r.h.Add(a)
		}
		for _, bad := range IsolatedAcks(w, results) {
			t.Errorf("%s: node %d acknowledged a write (acks=%d) sent %v after the cut, %v before the heal",
				f.kind, l, bad.Acks, bad.Sent.Sub(t0).Round(time.Millisecond), healed.Sub(bad.Done).Round(time.Millisecond))
		}
		if len(results) == 0 {
			t.Errorf("%s: no write was sent to the isolated node %d", f.kind, l)
		}
	}
	if f.healAfter > 0 {
		d, acked = r.firstAcks(ctx, led, t0, 30*time.Second)
		if !acked {
			t.Fatalf("%s of node %d: no acknowledgement on %s%v after the heal", f.kind, l, r.topic, led)
		}
	}
	if acked {
		r.sum.PartitionFailover(f.kind, d)
	}
	t.Logf("%s: node %d (led %s%v) cut for %v; first acknowledgement after the cut: %v (%v)",
		f.kind, l, r.topic, led, healed.Sub(t0).Round(time.Millisecond), d.Round(time.Millisecond), acked)
	r.rejoined(ctx, t, healed)
}

// rejoined waits, after the heal at healed, until every node's Metadata
// agrees on the leaders again (gossip sees every node alive), records how
// long that took, and then waits for the replicas to agree (heal).
func (r *partitionRun) rejoined(ctx context.Context, t *testing.T, healed time.Time) {
	t.Helper()
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := r.c.Leaders(lctx, r.topic); err != nil {
		t.Fatalf("a minute after the heal: %v", err)
	}
	r.sum.Rejoined(time.Since(healed))
	heal(ctx, t, r.c, r.w, r.topic)
}

// isolateController isolates the metadata group's leader (the
// controller) on both channels: the others must elect a new controller
// and the partitions it led must go on being written.
func isolateController(ctx context.Context, t *testing.T, r *partitionRun) {
	t.Helper()
	before, err := r.c.Leaders(ctx, r.topic)
	must(t, err)
	md, err := r.c.Metadata(ctx, 1)
	must(t, err)
	ctl := int(md.ControllerID)
	led := ledBy(before, ctl)
	if len(led) == 0 {
		led = []int32{0}
	}
	t0 := time.Now()
	r.net.Isolate(ctl, BothChannels...)
	r.sum.Fault("partition-isolate-controller")
	d, acked := r.firstAcks(ctx, led, t0, 30*time.Second)
	if !acked {
		r.net.Heal()
		t.Fatalf("controller %d isolated: no acknowledgement on %s%v", ctl, r.topic, led)
	}
	r.sum.PartitionFailover("partition-isolate-controller", d)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = poll(wctx, "a new controller on the majority side", func() (bool, error) {
		md, err := r.c.Metadata(wctx, others(ctl)[0])
		return err == nil && md.ControllerID >= 0 && int(md.ControllerID) != ctl, nil
	})
	if err != nil {
		t.Errorf("controller %d isolated: %v", ctl, err)
	}
	sleepCtx(ctx, time.Until(t0.Add(partitionHold)))
	healed := time.Now()
	r.net.Heal()
	t.Logf("controller %d isolated for %v; first acknowledgement on %s%v after %v",
		ctl, healed.Sub(t0).Round(time.Millisecond), r.topic, led, d.Round(time.Millisecond))
	r.rejoined(ctx, t, healed)
}

// movingSplit moves a one-node minority around the cluster without
// healing in between (a majorities ring on three nodes): each step cuts
// off the node leading the next partition, waits for the majority side to
// acknowledge there, then moves on.
func movingSplit(ctx context.Context, t *testing.T, r *partitionRun, steps int) {
	t.Helper()
	asked := r.c.Running() // the majority side of the last step
	for i := range steps {
		p := int32(i) % r.parts
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ls, err := r.c.LeadersAmong(lctx, r.topic, asked)
		cancel()
		if err != nil {
			r.net.Heal()
			t.Fatalf("moving split step %d: %v", i, err)
		}
		l := ls[p].Node
		t0 := time.Now()
		r.net.Heal()
		r.net.Isolate(l, BothChannels...)
		r.sum.Fault("partition-moving-split")
		d, acked := r.firstAcks(ctx, []int32{p}, t0, 30*time.Second)
		if !acked {
			r.net.Heal()
			t.Fatalf("moving split step %d: node %d cut off, no acknowledgement on %s[%d]", i, l, r.topic, p)
		}
		r.sum.PartitionFailover("partition-moving-split", d)
		t.Logf("moving split step %d: node %d cut off; first acknowledgement on %s[%d] after %v", i, l, r.topic, p, d.Round(time.Millisecond))
		// The minority's leaderships must be gone before the next step,
		// or the next leader asked for may be the one just cut off.
		asked = others(l)
		lctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		_, err = r.c.LeadersAmong(lctx, r.topic, asked)
		cancel()
		if err != nil {
			r.net.Heal()
			t.Fatalf("moving split step %d: %v", i, err)
		}
		sleepCtx(ctx, time.Second)
	}
	healed := time.Now()
	r.net.Heal()
	r.rejoined(ctx, t, healed)
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// TestIsolatedLeaderAcknowledgesNothing cuts a partition's leader off
// from both followers (Raft and gossip, both directions) while clients
// still reach it, and writes to it alone: nothing it is sent after the
// cut may be acknowledged before the heal (if the proxies let Raft
// through, it would stay leader and acknowledge). The followers elect a
// leader that acknowledges the workload's records; after the heal
// nothing acknowledged is lost or duplicated, no consumer read a record
// that was later lost, and the replicas converge.
func TestIsolatedLeaderAcknowledgesNothing(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	r := startPartitionRun(ctx, t, "isolated", 3)
	partitionLeader(ctx, t, r, isolateLeader, 0)
	partitionLeader(ctx, t, r, oneWayOut, 1)
	partitionLeader(ctx, t, r, oneWayIn, 2)
	r.finish(ctx, t)
	if r.sum.partitionProbes() == 0 {
		t.Fatal("no write was sent to an isolated leader")
	}
}

// TestPartitionScenarios runs the other partition scenarios on one
// cluster: Raft cut but not gossip, gossip cut but not Raft, the
// controller isolated, a heal during the election, and a minority that
// moves around the cluster.
func TestPartitionScenarios(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	r := startPartitionRun(ctx, t, "splits", 3)
	partitionLeader(ctx, t, r, raftOnly, 0)
	partitionLeader(ctx, t, r, gossipOnly, 1)
	isolateController(ctx, t, r)
	partitionLeader(ctx, t, r, healInElection, 2)
	movingSplit(ctx, t, r, rounds(3, 6))
	r.finish(ctx, t)
}
