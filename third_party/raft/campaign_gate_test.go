// Copyright IBM Corp. 2013, 2025
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// gateTransport is an InmemTransport whose campaign gate grants turns only
// while open is set, and counts what it was asked and what came back.
type gateTransport struct {
	*InmemTransport
	open                     atomic.Bool
	asked, granted, returned atomic.Int64
}

func (g *gateTransport) CampaignTurn() (func(), bool) {
	g.asked.Add(1)
	if !g.open.Load() {
		return nil, false
	}
	g.granted.Add(1)
	return func() { g.returned.Add(1) }, true
}

var _ WithCampaignGate = (*gateTransport)(nil)

// A member whose gate grants no turn never campaigns on its own, and a
// leadership transfer to it still goes through.
func TestCampaignGateHoldsBackElections(t *testing.T) {
	var (
		trans   []*gateTransport
		servers []Server
		rafts   []*Raft
	)
	for i := range 3 {
		_, tr := NewInmemTransport(ServerAddress(fmt.Sprintf("g%d", i)))
		g := &gateTransport{InmemTransport: tr}
		g.open.Store(i != 0)
		trans = append(trans, g)
		servers = append(servers, Server{ID: ServerID(fmt.Sprintf("g%d", i)), Address: tr.LocalAddr()})
	}
	for _, a := range trans {
		for _, b := range trans {
			a.Connect(b.LocalAddr(), b.InmemTransport)
		}
	}
	var candidacies atomic.Int64 // of g0
	for i, tr := range trans {
		conf := inmemConfig(t)
		conf.LocalID = servers[i].ID
		store, snaps := NewInmemStore(), NewInmemSnapshotStore()
		if err := BootstrapCluster(conf, store, store, snaps, tr, Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := NewRaft(conf, &MockFSM{}, store, store, snaps, tr)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ch := make(chan Observation, 16)
			r.RegisterObserver(NewObserver(ch, false, func(o *Observation) bool { return o.Data == Candidate }))
			go func() {
				for range ch {
					candidacies.Add(1)
				}
			}()
		}
		rafts = append(rafts, r)
		defer func() { _ = r.Shutdown().Error() }()
	}
	leaderOtherThan := func(not ...int) int {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for i, r := range rafts {
				if r.State() == Leader && i != not[0] && (len(not) < 2 || i != not[1]) {
					return i
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("no leader other than %v within 10s", not)
		return -1
	}
	first := leaderOtherThan(0)
	for _, tr := range trans { // the leader is lost: g0 and one other remain
		tr.Disconnect(trans[first].LocalAddr())
	}
	trans[first].DisconnectAll()
	next := leaderOtherThan(0, first)
	if n := candidacies.Load(); n > 0 || rafts[0].State() == Leader {
		t.Fatalf("g0 campaigned %d times without a turn", n)
	}
	if trans[0].asked.Load() == 0 {
		t.Fatal("g0 never asked for a turn: its election timeouts did not reach the gate")
	}
	if err := rafts[next].LeadershipTransferToServer(servers[0].ID, servers[0].Address).Error(); err != nil {
		t.Fatalf("a transfer to the member without turns: %v", err)
	}
	if rafts[0].State() != Leader && leaderOtherThan(next, first) != 0 {
		t.Fatal("the transfer did not make g0 leader")
	}
	for i, tr := range trans {
		if tr.granted.Load() != tr.returned.Load() && rafts[i].State() != Candidate {
			t.Errorf("g%d: %d turns granted, %d returned", i, tr.granted.Load(), tr.returned.Load())
		}
	}
}
