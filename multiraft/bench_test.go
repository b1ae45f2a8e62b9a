package multiraft

import (
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// sinkFSM applies anything and keeps nothing.
type sinkFSM struct{}

func (sinkFSM) Apply(*raft.Log) any                 { return nil }
func (sinkFSM) Snapshot() (raft.FSMSnapshot, error) { return countSnapshot{}, nil }
func (sinkFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

// BenchmarkReplicate proposes 1 KiB commands to a group of three members,
// 64 in flight: the cost of replication over the transport, per command.
func BenchmarkReplicate(b *testing.B) { benchReplicate(b, LogStoreBoltDB, DefaultTiming(), 1<<10, 64) }

// BenchmarkReplicateLogStore is BenchmarkReplicate with each LogStore, with
// 16 KiB and 1 KiB commands: the stores' fsyncs are most of a commit's
// cost.
func BenchmarkReplicateLogStore(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 10} {
		for _, store := range allStores {
			b.Run(fmt.Sprintf("size=%dKiB/store=%s", size>>10, store), func(b *testing.B) {
				benchReplicate(b, store, DefaultTiming(), size, 64)
			})
		}
	}
}

// BenchmarkReplicatePipeline is BenchmarkReplicate on the pebble store
// with a partition group's timing (16 entries per AppendEntries, commit
// timeout 1 s), with pipelining off (appends=0) and on, and 1 KiB and
// 16 KiB commands. Its timeouts are 2 s so that a busy machine does not
// change leaders in mid-run.
func BenchmarkReplicatePipeline(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		for _, appends := range []int{0, 2, 4, 8} {
			b.Run(fmt.Sprintf("size=%dKiB/appends=%d", size>>10, appends), func(b *testing.B) {
				timing := DefaultTiming()
				timing.MaxAppendEntries, timing.CommitTimeout = 16, time.Second
				timing.HeartbeatTimeout, timing.ElectionTimeout, timing.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, 2*time.Second
				timing.MaxInflightAppends = appends
				benchReplicate(b, LogStorePebble, timing, size, 64)
			})
		}
	}
}

// BenchmarkLeaderWrite is BenchmarkReplicate with the leader storing its
// entries before it sends them (write=serial, upstream raft's order) and
// while it sends them (write=parallel, the default), on boltdb and pebble,
// one command in flight (ns/op is a commit's latency: two fsyncs in
// series, or about one) and 64.
func BenchmarkLeaderWrite(b *testing.B) {
	for _, store := range []LogStore{LogStoreBoltDB, LogStorePebble} {
		for _, inFlight := range []int{1, 64} {
			for _, serial := range []bool{true, false} {
				mode := map[bool]string{true: "serial", false: "parallel"}[serial]
				b.Run(fmt.Sprintf("store=%s/inflight=%d/write=%s", store, inFlight, mode), func(b *testing.B) {
					benchReplicateTuned(b, store, DefaultTiming(), 1<<10, inFlight,
						func(t *Tuning) { t.SerialLeaderWrite = serial })
				})
			}
		}
	}
}

// benchReplicate proposes size-byte commands to a new group of three
// members over loopback, inFlight at a time, each member's Raft log in
// store.
func benchReplicate(b *testing.B, store LogStore, timing Timing, size, inFlight int) {
	benchReplicateTuned(b, store, timing, size, inFlight, nil)
}

// benchReplicateTuned is benchReplicate on hosts tuned by tune.
func benchReplicateTuned(b *testing.B, store LogStore, timing Timing, size, inFlight int, tune func(*Tuning)) {
	n := newTestNet(b, tune)
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	var gs []*Group
	for id := int32(1); id <= 3; id++ {
		g, err := n.host(id).Open(GroupSpec{Name: "bench", Members: []int32{1, 2, 3},
			Dir: filepath.Join(n.base, fmt.Sprint(id)), Timing: timing, FSM: sinkFSM{}, LogStore: store})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { g.Close() })
		gs = append(gs, g)
	}
	leader := gs[leaderOf(b, gs)]
	cmd := make([]byte, size)
	binary.BigEndian.PutUint64(cmd, 1)
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	b.SetBytes(int64(len(cmd)))
	b.ResetTimer()
	for b.Loop() {
		sem <- struct{}{}
		p := leader.Propose(cmd, time.Second)
		wg.Go(func() {
			defer func() { <-sem }()
			if _, _, err := p.Wait(); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
}

// BenchmarkAppendEntriesRoundTrip sends one AppendEntries with a 16 KiB
// entry and waits for its answer, one at a time, over this package's
// transport and, as the baseline, over raft's own NetworkTransport on
// loopback TCP; the consumer answers at once.
func BenchmarkAppendEntriesRoundTrip(b *testing.B) {
	req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: 1, PrevLogTerm: 1, LeaderCommitIndex: 1,
		Entries: []*raft.Log{{Index: 2, Term: 1, Type: raft.LogCommand, Data: make([]byte, 16<<10)}}}
	serve := func(ch <-chan raft.RPC, done <-chan struct{}) {
		for {
			select {
			case rpc := <-ch:
				rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
			case <-done:
				return
			}
		}
	}
	run := func(b *testing.B, from raft.Transport, id raft.ServerID, to raft.ServerAddress) {
		var resp raft.AppendEntriesResponse
		b.SetBytes(16 << 10)
		for b.Loop() {
			if err := from.AppendEntries(id, to, req, &resp); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("multiraft", func(b *testing.B) {
		n := newTestNet(b, nil)
		a, c := n.start(1), n.start(2)
		to := bareTransport(b, c, "g")
		done := make(chan struct{})
		defer close(done)
		go serve(to.consumer, done)
		run(b, bareTransport(b, a, "g"), "2", raft.ServerAddress(c.Addr()))
	})
	b.Run("raft-tcp", func(b *testing.B) {
		srv, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		cli, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		done := make(chan struct{})
		defer close(done)
		go serve(srv.Consumer(), done)
		run(b, cli, "2", srv.LocalAddr())
	})
}

// BenchmarkAppendEntriesFanOut is one replication round of many partitions:
// each op sends an AppendEntries with an 8 KiB entry for each of 12 groups
// at once to one peer and waits for every answer, as the leaders of twelve
// partitions on one node do. cpu-ns/op is the process's CPU (user and
// system) per op, both ends included.
func BenchmarkAppendEntriesFanOut(b *testing.B) {
	const groups = 12
	n := newTestNet(b, nil)
	a, c := n.start(1), n.start(2)
	done := make(chan struct{})
	defer close(done)
	from := make([]*transport, groups)
	for i := range groups {
		name := fmt.Sprintf("g%d", i)
		to := bareTransport(b, c, name)
		go func() {
			for {
				select {
				case rpc := <-to.consumer:
					rpc.Respond(&raft.AppendEntriesResponse{Term: 1, Success: true}, nil)
				case <-done:
					return
				}
			}
		}()
		from[i] = bareTransport(b, a, name)
	}
	req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: 1, PrevLogTerm: 1, LeaderCommitIndex: 1,
		Entries: []*raft.Log{{Index: 2, Term: 1, Type: raft.LogCommand, Data: make([]byte, 8<<10)}}}
	b.SetBytes(groups * 8 << 10)
	cpu0 := processCPU()
	for b.Loop() {
		var wg sync.WaitGroup
		for _, tr := range from {
			wg.Go(func() {
				var resp raft.AppendEntriesResponse
				if err := tr.AppendEntries("2", raft.ServerAddress(c.Addr()), req, &resp); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the user and system CPU this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
