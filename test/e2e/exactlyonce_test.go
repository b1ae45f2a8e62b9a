package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minikafka/minikafka-go/metadata"
)

const (
	// eosGroup is the consumer group of the pipeline's instances.
	eosGroup = "e2e-eos"
	// eosIn and eosOut are the pipeline's input and output topics.
	eosIn, eosOut = "eos-in", "eos-out"
	// eosPartitions is the partitions of each.
	eosPartitions = 3
	// eosInstances is the pipeline's instances, each its own
	// transactional id, sharing the group.
	eosInstances = 2
	// eosAbortEvery: every 5th transaction of an instance aborts on
	// purpose, after its records are written.
	eosAbortEvery = 5
	// eosPauseAtLeast is how long a paused node stays paused at least:
	// four election timeouts.
	eosPauseAtLeast = 2 * time.Second
)

func eosTxnID(instance int) string { return fmt.Sprintf("e2e-eos-%d", instance) }

func eosName(instance int) string { return fmt.Sprintf("copier%d", instance) }

// TestExactlyOnceUnderFaults: two instances of a consume-transform-produce
// pipeline (franz-go GroupTransactSessions, one consumer group, a
// transactional id each, read_committed) copy an input topic, which an
// idempotent producer keeps filling, to an output topic, one output per
// input record, aborting every 5th transaction on purpose. Meanwhile the
// node coordinating an instance's transactional id, the node coordinating
// the group and the leader of an output partition are killed -9, and a
// transaction coordinator is paused (SIGSTOP) past the election timeout;
// after each fault the pipeline must commit a new transaction, a killed
// node still down, a paused one resumed once another took over. When the input is copied, a read_committed reader of the
// output must see every input record's output exactly once, in input
// order per partition, every committed transaction's records and no
// aborted one (CheckTxn); a read_uncommitted reader must see aborted
// records, or the check could not fail. The long version repeats the
// faults four times and also pauses the group coordinator and an output
// leader.
func TestExactlyOnceUnderFaults(t *testing.T) {
	ctx := testContext(t, time.Duration(rounds(3, 20))*time.Minute)
	c := startCluster(ctx, t)
	keepLogs(t, c)
	must(t, c.CreateTopic(ctx, eosOut, eosPartitions, 3))
	// 12 keys spread the input over every partition.
	l := startLoad(ctx, t, c, WorkloadConfig{Topic: eosIn, Producers: 1, Keys: 12}, eosPartitions, 100)
	e := startEOS(ctx, t, c, l)
	faults := []eosFault{
		{role: txnCoordinator}, {role: groupCoordinator}, {role: outputLeader}, {role: txnCoordinator, pause: true},
	}
	if longRun() {
		faults = append(faults, eosFault{role: groupCoordinator, pause: true}, eosFault{role: outputLeader, pause: true})
	}
	for r := range rounds(1, 4) {
		for _, f := range faults {
			e.fault(ctx, t, r, f)
		}
	}
	e.finish(ctx, t)
}

// eosRole is the part a faulted node plays for the pipeline.
type eosRole uint8

const (
	txnCoordinator   eosRole = iota // coordinates an instance's transactional id
	groupCoordinator                // coordinates the pipeline's group
	outputLeader                    // leads an output partition
)

func (r eosRole) String() string {
	return [...]string{"txn-coordinator", "group-coordinator", "output-leader"}[r]
}

// eosFault is one fault: a kill -9, or a pause, of the node in a role.
type eosFault struct {
	role  eosRole
	pause bool
}

func (f eosFault) String() string {
	if f.pause {
		return f.role.String() + "-pause"
	}
	return f.role.String() + "-kill"
}

// eosRun is TestExactlyOnceUnderFaults' state.
type eosRun struct {
	c *Cluster
	l *load // the workload filling eosIn
	h TxnHistory

	mu    sync.Mutex // guards pipes
	pipes []*Pipeline
}

// startEOS starts the pipeline's instances and waits until each input
// partition was copied in a committed transaction.
func startEOS(ctx context.Context, t *testing.T, c *Cluster, l *load) *eosRun {
	t.Helper()
	e := &eosRun{c: c, l: l}
	t.Cleanup(func() { e.closePipelines(t) })
	for i := range eosInstances {
		cfg := PipelineConfig{Brokers: c.Seeds(), Group: eosGroup, TxnID: eosTxnID(i),
			Name: eosName(i), In: eosIn, Out: eosOut, AbortEvery: eosAbortEvery}
		if dir := os.Getenv("MINIKAFKA_E2E_KGO_LOGS"); dir != "" {
			f, err := os.Create(filepath.Join(dir, cfg.Name+".log"))
			must(t, err)
			t.Cleanup(func() { f.Close() })
			cfg.Logger = kgo.BasicLogger(f, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000 ") })
		}
		p, err := StartPipeline(cfg, &e.h)
		must(t, err)
		e.mu.Lock()
		e.pipes = append(e.pipes, p)
		e.mu.Unlock()
	}
	for p := range int32(eosPartitions) {
		e.waitCommit(ctx, t, time.Time{}, "", p, "at the start")
	}
	return e
}

// waitCommit waits until a transaction begun at or after t0, of instance
// (empty: any) and holding input of partition (-1: any), commits, and
// returns how long after t0 it did.
func (e *eosRun) waitCommit(ctx context.Context, t *testing.T, t0 time.Time, instance string, partition int32, when string) time.Duration {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var d time.Duration
	err := poll(wctx, "a committed transaction", func() (ok bool, _ error) {
		d, ok = e.h.FirstCommitSince(t0, instance, partition)
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: no transaction of %q with input of partition %d committed: %v (pipeline errors: %v)",
			when, instance, partition, err, e.pipelineErrors())
	}
	return d
}

// eosTarget is the node a fault hits, what it does there, and whose
// progress shows the pipeline survived the fault.
type eosTarget struct {
	role      eosRole
	node      int
	key       string // the transactional id or group coordinated
	what      string
	instance  string // the instance that must commit again; empty: any
	partition int32  // the input partition a commit must hold; -1: any
}

// victim finds the node in role for round r: the coordinator of instance
// r's transactional id (checked to lead its __transaction_state
// partition), the group's coordinator (checked to lead its
// __consumer_offsets partition), or the leader of output partition r.
func (e *eosRun) victim(ctx context.Context, t *testing.T, r int, role eosRole) eosTarget {
	t.Helper()
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v := eosTarget{role: role, partition: -1}
	var err error
	switch role {
	case txnCoordinator:
		i := r % eosInstances
		v.key, v.instance = eosTxnID(i), eosName(i)
		v.what = "transactional id " + v.key
		v.node, err = e.coordinatorLeading(vctx, coordinatorTxn, v.key)
	case groupCoordinator:
		v.key, v.what = eosGroup, "group "+eosGroup
		v.node, err = e.coordinatorLeading(vctx, coordinatorGroup, v.key)
	default:
		v.partition = int32(r % eosPartitions)
		v.what = fmt.Sprintf("%s[%d]", eosOut, v.partition)
		var l PartitionLeader
		l, err = e.c.Leader(vctx, eosOut, v.partition)
		v.node = l.Node
	}
	if err != nil {
		t.Fatalf("finding the %s: %v", role, err)
	}
	return v
}

// coordinatorLeading waits until FindCoordinator for key names the leader
// of key's partition of the internal topic, and returns that node.
func (e *eosRun) coordinatorLeading(ctx context.Context, keyType int8, key string) (int, error) {
	var coord int
	var leader PartitionLeader
	err := poll(ctx, "coordinator of "+key+" leading its partition", func() (bool, error) {
		var err error
		if coord, err = e.c.coordinator(ctx, keyType, key); err != nil {
			return false, err
		}
		if keyType == coordinatorTxn {
			_, leader, err = e.c.TxnStatePartitionLeader(ctx, key)
		} else {
			_, leader, err = e.c.OffsetsPartitionLeader(ctx, key)
		}
		return err == nil && leader.Node == coord, err
	})
	if err != nil {
		return 0, fmt.Errorf("coordinator %d, partition leader %v: %w", coord, leader, err)
	}
	return coord, nil
}

// fault kills or pauses the node in f's role and waits until another node
// took the role over. A killed node stays down until the pipeline
// committed a transaction begun after the fault; a paused one is resumed
// first. Then it restarts the killed node and heals the cluster.
func (e *eosRun) fault(ctx context.Context, t *testing.T, r int, f eosFault) {
	t.Helper()
	v := e.victim(ctx, t, r, f.role)
	t0 := time.Now()
	if f.pause {
		must(t, e.c.Pause(ctx, v.node))
	} else {
		must(t, e.c.Kill(v.node))
	}
	e.l.sum.Fault(f.String())
	next := e.takenOver(ctx, t, v)
	elected := time.Since(t0)
	if f.pause {
		// Resumed once another node took over, and at least
		// eosPauseAtLeast later: the pipeline's clients, stuck on
		// connections to the paused node until their request timeouts,
		// then meet it as a stale coordinator or leader.
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(t0.Add(eosPauseAtLeast))):
		}
		must(t, e.c.Resume(v.node))
	}
	d := e.waitCommit(ctx, t, t0, v.instance, v.partition, fmt.Sprintf("after %s of node %d (%s)", f, v.node, v.what))
	e.l.sum.TxnFailover(d)
	if !f.pause {
		must(t, e.c.StartNode(ctx, v.node))
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	must(t, e.c.WaitReady(rctx, eosIn, eosOut, metadata.ConsumerOffsetsTopic, metadata.TransactionStateTopic))
	heal(ctx, t, e.c, e.l.w, eosIn)
	t.Logf("%s of node %d (%s): node %d took over after %v, first transaction begun after it committed after %v",
		f, v.node, v.what, next, elected.Round(time.Millisecond), d.Round(time.Millisecond))
}

// takenOver waits until another running node plays v's role and returns it.
func (e *eosRun) takenOver(ctx context.Context, t *testing.T, v eosTarget) int {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var node int
	var err error
	switch v.role {
	case txnCoordinator:
		node, err = e.c.TxnCoordinator(tctx, v.key)
	case groupCoordinator:
		node, err = e.c.GroupCoordinator(tctx, v.key)
	default:
		var l PartitionLeader
		l, err = e.c.Leader(tctx, eosOut, v.partition)
		node = l.Node
	}
	if err != nil {
		t.Fatalf("nobody took over %s from node %d: %v", v.what, v.node, err)
	}
	if node == v.node {
		t.Fatalf("%s still on node %d", v.what, v.node)
	}
	return node
}

// finish stops the input's producer, waits until the pipeline committed
// all of the input, closes it, and checks the output with a
// read_committed reader (every problem fails the test) and with a
// read_uncommitted one (it must see aborted records). Then it verifies
// the input as every scenario does, and compares the output's replicas.
func (e *eosRun) finish(ctx context.Context, t *testing.T) {
	t.Helper()
	stopWorkload(ctx, t, e.l.w)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	in, err := e.c.ReadPartitions(rctx, eosIn)
	must(t, err)
	e.drain(rctx, t, in)
	e.closePipelines(t)
	// Read again: a record whose outcome was unknown to the producer may
	// have landed since.
	in, err = e.c.ReadPartitions(rctx, eosIn)
	must(t, err)
	must(t, WriteEndMarkers(rctx, e.c.Seeds(), eosOut, eosPartitions))
	committed, err := ReadToEndMarkers(rctx, e.c.Seeds(), eosOut, eosPartitions, kgo.ReadCommitted())
	must(t, err)
	uncommitted, err := ReadToEndMarkers(rctx, e.c.Seeds(), eosOut, eosPartitions, kgo.ReadUncommitted())
	must(t, err)
	txns := e.h.Txns()
	r := CheckTxn(in, committed, txns)
	control := CheckTxn(in, uncommitted, txns)
	e.l.sum.ExactlyOnce(r, control.Count(TxnAbortedSeen))
	t.Logf("exactly-once, read_committed: %v", r)
	t.Logf("read_uncommitted control: %v", control)
	if err := r.Err(); err != nil {
		t.Errorf("read_committed: %v", err)
	}
	if r.Inputs == 0 || r.Committed == 0 || r.Deliberate == 0 {
		t.Errorf("the scenario proved nothing: %d inputs, %d transactions committed, %d aborted on purpose", r.Inputs, r.Committed, r.Deliberate)
	}
	if control.Count(TxnAbortedSeen) == 0 {
		t.Errorf("read_uncommitted saw no record of the %d aborted transactions: the check could not fail", r.Aborted)
	}
	must(t, e.c.WaitReplicasInSync(rctx, eosOut, eosPartitions))
	vctx, vcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer vcancel()
	verify(vctx, t, e.c, &e.l.h, e.l.sum, eosIn) // stops every node
	e.compareOutputReplicas(t)
}

// drain waits until committed transactions cover every input record, as
// the pipeline saw its commits or, should the last outcome be unknown, as
// the group's committed offsets say.
func (e *eosRun) drain(ctx context.Context, t *testing.T, in []PartitionLog) {
	t.Helper()
	covered := func(offs map[int32]int64) bool {
		for _, pl := range in {
			if offs[pl.Partition] < pl.End {
				return false
			}
		}
		return true
	}
	var asked time.Time
	err := poll(ctx, "the input copied", func() (bool, error) {
		if covered(e.h.CommittedThrough()) {
			return true, nil
		}
		if time.Since(asked) < time.Second {
			return false, nil
		}
		asked = time.Now()
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		offs, _, err := e.c.FetchCommitted(fctx, &GroupHistory{}, eosGroup, eosIn, eosPartitions)
		return err == nil && covered(offs), nil
	})
	if err != nil {
		t.Fatalf("the pipeline did not copy the whole input: committed through %v, input ends %v: %v (pipeline errors: %v)",
			e.h.CommittedThrough(), ends(in), err, e.pipelineErrors())
	}
}

func ends(logs []PartitionLog) map[int32]int64 {
	out := map[int32]int64{}
	for _, pl := range logs {
		out[pl.Partition] = pl.End
	}
	return out
}

// closePipelines closes every instance and logs its errors and sessions.
func (e *eosRun) closePipelines(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	ps := e.pipes
	e.pipes = nil
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range ps {
		if err := p.Close(ctx); err != nil {
			t.Errorf("%v", err)
		}
		t.Logf("pipeline %s: %d sessions; errors: %v", p.Name(), p.Sessions(), p.Errors())
	}
}

// pipelineErrors lists the errors of every running instance.
func (e *eosRun) pipelineErrors() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, p := range e.pipes {
		for _, s := range p.Errors() {
			out = append(out, p.Name()+" "+s)
		}
	}
	return out
}

// compareOutputReplicas compares, offline, every replica of every output
// partition byte for byte (control batches included). The nodes must be
// stopped.
func (e *eosRun) compareOutputReplicas(t *testing.T) {
	t.Helper()
	for p := range int32(eosPartitions) {
		var reps []Replica
		for id := 1; id <= NodeCount; id++ {
			data, err := ReadReplicaLog(e.c.Node(id).DataDir, eosOut, p)
			if err != nil {
				t.Errorf("node %d: %v", id, err)
				continue
			}
			reps = append(reps, Replica{Node: id, Data: data})
		}
		if err := CompareReplicas(eosOut, p, reps); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// keepLogs copies, with MINIKAFKA_E2E_KGO_LOGS=dir, every node's log into
// dir at the end of the test.
func keepLogs(t *testing.T, c *Cluster) {
	dir := os.Getenv("MINIKAFKA_E2E_KGO_LOGS")
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		for id := 1; id <= NodeCount; id++ {
			if err := copyFile(c.Node(id).LogFile, filepath.Join(dir, fmt.Sprintf("node%d.log", id))); err != nil {
				t.Logf("keep node %d's log: %v", id, err)
			}
		}
	})
}
