package partition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/fsm"
	"github.com/minikafka/minikafka-go/internal/vfs"
	"github.com/minikafka/minikafka-go/multiraft"
	"github.com/minikafka/minikafka-go/record"
)

// A full disk under a replica over real raft: the committed entry that
// cannot be stored waits, later produce gets KAFKA_STORAGE_ERROR at once,
// reads go on; when space returns the waiting entry applies, new produce
// succeeds and the log holds every batch once, in order.
func TestReplicaDiskFullRefusesProduceUntilSpaceReturns(t *testing.T) {
	ff := vfs.Faulty(nil)
	g := newGroupFS(t, 1, ff)
	batch := func(seq int) []byte { return idemBatch(t, 7, int32(seq), fmt.Sprint("v", seq)) }
	for i := range 5 {
		g.produce(batch(i))
	}
	_, r := g.leader()
	ff.Fail(vfs.OpWrite|vfs.OpCreate, syscall.ENOSPC)

	type outcome struct {
		res *fsm.ProduceResult
		err error
	}
	stuck := make(chan outcome, 1)
	go func() {
		res, err := r.Produce(context.Background(), batch(5))
		stuck <- outcome{res, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for r.fsm.StorageErr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the replica never reported the full disk")
		}
		time.Sleep(time.Millisecond)
	}
	res, err := r.Produce(context.Background(), batch(6))
	if err != nil || res.Err == nil || !errors.Is(res.Err, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk: %+v, %v; want KAFKA_STORAGE_ERROR", res, err)
	}
	if got, err := r.Read(0, 1<<20); err != nil || len(batchValues(t, got)) != 5 {
		t.Fatalf("reading committed data on a full disk: %v (%d bytes)", err, len(got))
	}

	ff.Heal()
	if o := <-stuck; o.err != nil || o.res.Err != nil || o.res.BaseOffset != 5 {
		t.Fatalf("the entry stuck on the full disk: %+v, %v; want offset 5", o.res, o.err)
	}
	if off := g.produce(batch(6)); off != 6 {
		t.Fatalf("produce after healing at offset %d, want 6", off)
	}
	got, err := r.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	vals := batchValues(t, got)
	for i, v := range vals {
		if v != fmt.Sprint("v", i) || len(vals) != 7 {
			t.Fatalf("log holds %q, want v0..v6 once each", vals)
		}
	}
}

// batchValues checks every batch's CRC and returns the first record value
// of each (the test's batches hold one record).
func batchValues(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for len(b) > 0 {
		one, rest, _, err := record.Next(b)
		if err == nil {
			_, err = record.Check(one)
		}
		if err != nil {
			t.Fatal(err)
		}
		recs, err := record.AppendRecords(nil, one)
		if err != nil || len(recs) == 0 {
			t.Fatalf("records: %v", err)
		}
		out = append(out, string(recs[0].Value))
		b = rest
	}
	return out
}

// Closing a replica whose FSM waits out a full disk does not hang; the
// committed entry it could not store applies at the next start, and the
// producer's retry of it gets its offset.
func TestReplicaCloseDuringDiskFull(t *testing.T) {
	ff := vfs.Faulty(nil)
	g := newGroupFS(t, 1, ff)
	batch := func(seq int) []byte { return idemBatch(t, 9, int32(seq), fmt.Sprint("v", seq)) }
	for i := range 3 {
		g.produce(batch(i))
	}
	_, r := g.leader()
	ff.Fail(vfs.OpWrite|vfs.OpCreate, syscall.ENOSPC)
	stuck := make(chan error, 1)
	go func() {
		_, err := r.Produce(context.Background(), batch(3))
		stuck <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); r.fsm.StorageErr() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replica never reported the full disk")
		}
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		r.Close() // the checkpoint may fail on the full disk
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung while the FSM retried a write")
	}
	<-stuck
	g.hosts[1].Close()
	delete(g.reps, 1)
	delete(g.hosts, 1)
	ff.Heal()
	g.start(1)
	if off := g.produce(batch(3)); off != 3 {
		t.Fatalf("retry of the entry stuck at shutdown got offset %d, want 3", off)
	}
	got, err := g.reps[1].Read(0, 1<<20)
	if err != nil || len(batchValues(t, got)) != 4 {
		t.Fatalf("log after restart: %v, %q", err, batchValues(t, got))
	}
}

// While the FSM waits out a full disk, Trim and ExpireProducers answer
// KAFKA_STORAGE_ERROR at once instead of queueing behind the stuck entry;
// after healing both work again.
func TestReplicaDiskFullRefusesTrimAndExpiry(t *testing.T) {
	ff := vfs.Faulty(nil)
	g := newGroupFS(t, 1, ff)
	batch := func(seq int) []byte { return idemBatch(t, 11, int32(seq), fmt.Sprint("v", seq)) }
	for i := range 4 {
		g.produce(batch(i))
	}
	_, r := g.leader()
	ff.Fail(vfs.OpFull, syscall.ENOSPC)
	stuck := make(chan error, 1)
	go func() {
		_, err := r.Produce(context.Background(), batch(4))
		stuck <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); r.fsm.StorageErr() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replica never reported the full disk")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if start, err := r.Trim(ctx, 2); !errors.Is(err, kerr.KafkaStorageError) || start != 0 {
		t.Fatalf("Trim on a full disk: %d, %v; want start 0 and KAFKA_STORAGE_ERROR", start, err)
	}
	if _, _, err := r.ExpireProducers(ctx, time.Now(), time.Millisecond); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("ExpireProducers on a full disk: %v; want KAFKA_STORAGE_ERROR", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("the refusals took %v, want them at once", d)
	}
	if r.LogStartOffset() != 0 {
		t.Fatalf("log start %d after a refused trim", r.LogStartOffset())
	}

	ff.Heal()
	if err := <-stuck; err != nil {
		t.Fatalf("the entry stuck on the full disk: %v", err)
	}
	if start, err := r.Trim(ctx, 2); err != nil || start != 2 {
		t.Fatalf("Trim after healing: %d, %v; want 2", start, err)
	}
	if removed, _, err := r.ExpireProducers(ctx, time.Now().Add(time.Hour), time.Minute); err != nil || removed != 1 {
		t.Fatalf("ExpireProducers after healing: removed %d, %v; want producer 11 removed", removed, err)
	}
}

// While ReplicaConfig.Admit refuses (the node's disk is below its
// reserve), a client's batch gets KAFKA_STORAGE_ERROR without being
// proposed, with the refusal's text; a trim, which frees space, goes
// through; once Admit lets writes in, produce resumes.
func TestReplicaAdmitRefusesClientBatchesOnly(t *testing.T) {
	var full atomic.Bool
	errFull := errors.New("test: the disk is below its reserve")
	g := &group{t: t, base: t.TempDir(), timing: fastTiming(), addrs: map[int32]string{},
		hosts: map[int32]*multiraft.Host{}, reps: map[int32]*Replica{}, members: []int32{1},
		admit: func(int) error {
			if full.Load() {
				return errFull
			}
			return nil
		}}
	g.start(1)
	t.Cleanup(func() { g.kill(1) })
	batch := func(seq int) []byte { return idemBatch(t, 7, int32(seq), fmt.Sprint("v", seq)) }
	for i := range 3 {
		g.produce(batch(i))
	}
	_, r := g.leader()
	full.Store(true)
	for _, p := range []*Proposal{r.Propose(batch(3), time.Second), r.ProposeLogAppendTime(batch(3), time.Second)} {
		res, err := p.Wait()
		if err != nil || res.Err == nil || !errors.Is(res.Err, kerr.KafkaStorageError) || !strings.Contains(res.Err.Error(), errFull.Error()) {
			t.Fatalf("produce while Admit refuses: %+v, %v; want KAFKA_STORAGE_ERROR saying why", res, err)
		}
	}
	start, err := r.Trim(context.Background(), 2)
	if err != nil || start != 2 {
		t.Fatalf("trim while Admit refuses: start %d, %v; want 2", start, err)
	}
	full.Store(false)
	if off := g.produce(batch(3)); off != 3 {
		t.Fatalf("produce after Admit lets writes in: offset %d, want 3", off)
	}
}

// Discard, for a replica whose directory goes next, syncs nothing: with
// every sync failing it succeeds without one, where Close (the control)
// must sync and fails.
func TestReplicaDiscardSyncsNothing(t *testing.T) {
	for _, discard := range []bool{false, true} {
		ff := vfs.Faulty(nil)
		g := newGroupFS(t, 1, ff)
		for i := range 5 {
			g.produce(idemBatch(t, 7, int32(i), fmt.Sprint("v", i)))
		}
		id, r := g.leader()
		ff.Fail(vfs.OpSync|vfs.OpWrite|vfs.OpCreate|vfs.OpRename, syscall.EIO)
		var err error
		if discard {
			err = r.Discard()
		} else {
			err = r.Close()
		}
		delete(g.reps, id) // closed here; the cleanup closes the host alone
		g.hosts[id].Close()
		switch {
		case discard && (err != nil || ff.Failures() != 0):
			t.Fatalf("Discard: %v after %d failed storage operations; want none", err, ff.Failures())
		case !discard && (err == nil || ff.Failures() == 0):
			t.Fatalf("Close with failing syncs: %v after %d failed operations; want a failure", err, ff.Failures())
		}
		ff.Heal()
	}
}
