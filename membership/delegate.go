package membership

import (
	"fmt"

	"github.com/hashicorp/memberlist"
)

// member is one alive node as this node knows it.
type member struct {
	meta    NodeMeta
	addr    string // gossip address, ip:port
	leaving bool   // it announced Leave: its NotifyLeave is EventLeave
}

// delegate receives memberlist's callbacks. memberlist calls NotifyJoin,
// NotifyUpdate, NotifyLeave, NotifyAlive and NotifyConflict while holding
// its node lock, so each only takes Membership.mu (never calls memberlist)
// and hands events to the dispatcher, which does not block.
type delegate struct{ m *Membership }

var (
	_ memberlist.Delegate         = (*delegate)(nil)
	_ memberlist.EventDelegate    = (*delegate)(nil)
	_ memberlist.AliveDelegate    = (*delegate)(nil)
	_ memberlist.MergeDelegate    = (*delegate)(nil)
	_ memberlist.ConflictDelegate = (*delegate)(nil)
)

// NodeMeta returns this node's encoded metadata; it always fits limit,
// because New and UpdateMeta refuse metadata over MetaMaxSize.
func (d *delegate) NodeMeta(limit int) []byte {
	m := d.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.localEnc) > limit { // unreachable: MetaMaxSize is memberlist's limit
		m.log.Error("node metadata over memberlist limit; advertising none", "size", len(m.localEnc), "limit", limit)
		return nil
	}
	return m.localEnc
}

// No user messages or state: membership carries only node metadata.
func (d *delegate) NotifyMsg([]byte)                           {}
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

// NotifyAlive admits a node only if its name is "node-<id>" for the id in
// its metadata and the metadata decodes; memberlist logs and ignores the
// alive message otherwise.
func (d *delegate) NotifyAlive(peer *memberlist.Node) error {
	_, err := checkPeer(peer)
	return err
}

func checkPeer(peer *memberlist.Node) (wireMeta, error) {
	w, err := decodeMeta(peer.Meta)
	if err != nil {
		return w, fmt.Errorf("node %s at %s: %w", peer.Name, peer.Address(), err)
	}
	if peer.Name != NodeName(w.ID) {
		return w, fmt.Errorf("%w: node %s at %s advertises id %d", ErrInvalidMeta, peer.Name, peer.Address(), w.ID)
	}
	return w, nil
}

func (d *delegate) NotifyJoin(n *memberlist.Node) {
	w, err := checkPeer(n)
	if err != nil { // NotifyAlive admitted it, so this cannot happen
		d.m.log.Error("ignoring join of node with bad metadata", "err", err)
		return
	}
	m := d.m
	m.mu.Lock()
	m.members[w.ID] = member{meta: w.NodeMeta, addr: n.Address(), leaving: w.leaving}
	delete(m.failed, w.ID)
	m.mu.Unlock()
	m.log.Info("node joined", "id", w.ID, "addr", n.Address(), "kafka", w.KafkaAddr, "raft", w.RaftAddr)
	m.events.push(Event{Kind: EventJoin, Node: w.NodeMeta})
}

func (d *delegate) NotifyUpdate(n *memberlist.Node) {
	w, err := checkPeer(n)
	if err != nil {
		d.m.log.Error("ignoring update of node with bad metadata", "err", err)
		return
	}
	m := d.m
	m.mu.Lock()
	old, known := m.members[w.ID]
	m.members[w.ID] = member{meta: w.NodeMeta, addr: n.Address(), leaving: w.leaving || old.leaving}
	m.mu.Unlock()
	if w.leaving && !old.leaving {
		m.log.Info("node is leaving", "id", w.ID)
	}
	if known && old.meta == w.NodeMeta {
		return // only the leave intent changed
	}
	m.log.Info("node updated", "id", w.ID, "kafka", w.KafkaAddr, "raft", w.RaftAddr)
	m.events.push(Event{Kind: EventUpdate, Node: w.NodeMeta})
}

// NotifyLeave is memberlist's report of a node gone, gracefully or not; the
// leave intent in the node's metadata tells the two apart.
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	id, ok := parseNodeName(n.Name)
	if !ok {
		return
	}
	m := d.m
	m.mu.Lock()
	old, known := m.members[id]
	delete(m.members, id)
	m.mu.Unlock()
	if !known { // never reported as joined
		return
	}
	meta, leaving := old.meta, old.leaving
	if w, err := checkPeer(n); err == nil && w.ID == id {
		meta, leaving = w.NodeMeta, leaving || w.leaving
	}
	if !leaving {
		m.mu.Lock()
		m.failed[id] = n.Address()
		m.mu.Unlock()
	}
	kind := EventFail
	if leaving {
		kind = EventLeave
		m.log.Info("node left", "id", id, "addr", n.Address())
	} else {
		m.log.Warn("node failed", "id", id, "addr", n.Address())
	}
	m.events.push(Event{Kind: kind, Node: meta})
}

// NotifyMerge vets the remote state of a join (ours or theirs): it cancels
// the merge if the remote side has a node id alive at another address than
// the one we know. On the joining side this makes Join fail with
// DuplicateIDError; on the joined side it keeps the impostor out.
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	m := d.m
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range peers {
		if p.State == memberlist.StateDead && p.Name == m.name && p.Address() != m.localAddr && m.joining > 0 {
			m.reclaim = true
		}
		if p.State != memberlist.StateAlive && p.State != memberlist.StateSuspect {
			continue
		}
		w, err := checkPeer(p)
		if err != nil {
			continue // NotifyAlive will refuse it on its own
		}
		known, ok := m.members[w.ID]
		if !ok || known.addr == p.Address() {
			continue
		}
		dup := &DuplicateIDError{ID: w.ID, Known: known.addr, Claimed: p.Address()}
		m.log.Error("refusing to merge cluster state: node id claimed from two addresses",
			"id", w.ID, "known", known.addr, "claimed", p.Address())
		m.noteConflictLocked(dup)
		return dup
	}
	return nil
}

// NotifyConflict is memberlist refusing an alive message for a known name
// from another address; it has already logged it, we log it in our terms.
// A conflict over our own id during Join makes Join fail.
func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	id, ok := parseNodeName(existing.Name)
	if !ok {
		return
	}
	m := d.m
	dup := &DuplicateIDError{ID: id, Known: existing.Address(), Claimed: other.Address()}
	m.log.Error("duplicate node id: ignoring the second claimant", "id", id,
		"known", existing.Address(), "claimed", other.Address())
	if existing.Name != m.name {
		return
	}
	m.mu.Lock()
	m.noteConflictLocked(dup)
	m.mu.Unlock()
}
