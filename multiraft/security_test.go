package multiraft

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/yamux"

	"github.com/minikafka/minikafka-go/internal/frame"
	"github.com/minikafka/minikafka-go/internal/nodecert"
	"github.com/minikafka/minikafka-go/logging"
)

// certDir writes a CA and certificates for nodes 1..3 and returns the
// directory.
func certDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := nodecert.Write(dir, []int32{1, 2, 3}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loadTLS loads node id's Config.TLS from dir.
func loadTLS(t testing.TB, dir string, id int32) *TLS {
	t.Helper()
	f := nodecert.FilesIn(dir, id)
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &TLS{Certificate: cert, CAs: caPool(t, f.CA)}
}

func caPool(t testing.TB, path string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatal("no CA in", path)
	}
	return pool
}

// Groups elect and replicate over mutual TLS.
func TestTLSGroupsReplicate(t *testing.T) {
	dir := certDir(t)
	n := newTestNet(t, nil)
	n.tls = func(id int32) *TLS { return loadTLS(t, dir, id) }
	var gs []*Group
	var fs []*countFSM
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	for id := int32(1); id <= 3; id++ {
		g, f := n.open(id, "g", []int32{1, 2, 3}, fastTiming(), false)
		gs, fs = append(gs, g), append(fs, f)
	}
	for v := uint64(1); v <= 20; v++ {
		propose(t, gs, v)
	}
	waitFor(t, "every replica to apply 20", func() bool {
		for _, f := range fs {
			if st, _ := f.state(); st.high != 20 {
				return false
			}
		}
		return true
	})
}

// A Host refuses a certificate that does not name its NodeID.
func TestTLSCertificateMustNameTheNode(t *testing.T) {
	dir := certDir(t)
	_, err := Listen(Config{NodeID: 3, BindAddr: "127.0.0.1:0", TLS: loadTLS(t, dir, 2)})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("node 3 with node 2's certificate: %v, want ErrInvalidConfig", err)
	}
}

// secureTarget starts nodes 1..3 with TLS and a one-member group "g" on
// node 1 holding the values 1..5, and returns node 1's Host, the group and
// its FSM.
func secureTarget(t *testing.T, dir string) (*testNet, *Group, *countFSM) {
	n := newTestNet(t, nil)
	n.tls = func(id int32) *TLS { return loadTLS(t, dir, id) }
	for id := int32(1); id <= 3; id++ {
		n.start(id)
	}
	g, f := n.open(1, "g", []int32{1}, fastTiming(), false)
	for v := uint64(1); v <= 5; v++ {
		propose(t, []*Group{g}, v)
	}
	return n, g, f
}

// groupState is what a forged RPC could change: the FSM, the term and
// the log.
type groupState struct {
	fsm        countState
	term, last uint64
	leader     int32
}

func stateOf(g *Group, f *countFSM) groupState {
	st, _ := f.state()
	leader, _, _ := g.Leader()
	return groupState{fsm: st, term: g.raft.CurrentTerm(), last: g.raft.LastIndex(), leader: leader}
}

// A connection without a valid node certificate is closed before any
// group or service sees a byte: plain TCP speaking our protocol, TLS
// without a client certificate, a node certificate from another CA, and a
// certificate from the right CA that names no node.
func TestTLSRejectsConnectionsWithoutNodeCertificate(t *testing.T) {
	dir := certDir(t)
	n, g, f := secureTarget(t, dir)
	h := n.host(1)
	ln, err := h.Listen("probe")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	before := stateOf(g, f)

	other := t.TempDir()
	if err := nodecert.Write(other, []int32{2}, time.Hour); err != nil {
		t.Fatal(err)
	}
	anon := nodecert.Files{Cert: filepath.Join(dir, "anon.pem"), Key: filepath.Join(dir, "anon-key.pem")}
	if err := nodecert.WriteLeaf(dir, anon, &x509.Certificate{Subject: pkix.Name{CommonName: "node-2"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatal(err)
	}
	pool := caPool(t, filepath.Join(dir, "ca.pem"))
	withCert := func(f nodecert.Files) *tls.Config {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, InsecureSkipVerify: true}
	}
	cases := []struct {
		name string
		tls  *tls.Config // nil: plain TCP
	}{
		{"plain TCP", nil},
		{"no client certificate", &tls.Config{InsecureSkipVerify: true}},
		{"node 2 of another CA", withCert(nodecert.FilesIn(other, 2))},
		{"a certificate naming no node", withCert(anon)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := forge(h.Addr(), tc.tls, func(sess *yamux.Session) error {
				if err := callOnce(sess, callRequestVote, "g", &raft.RequestVoteRequest{
					RPCHeader: raft.RPCHeader{ID: []byte("2"), Addr: []byte("127.0.0.1:1")}, Term: before.term + 10}); err != nil {
					return err
				}
				st, err := sess.OpenStream()
				if err != nil {
					return err
				}
				defer st.Close()
				_ = st.SetDeadline(time.Now().Add(2 * time.Second))
				if _, err := st.Write(appendOpen(nil, streamService, "probe")); err != nil {
					return err
				}
				_, err = frame.Read(st, 1, 1)
				return err
			})
			if err == nil {
				t.Fatal("the forged exchange succeeded")
			}
			waitFor(t, "the handshake to be counted as bad", func() bool { return h.Stats().BadHandshakes >= uint64(i+1) })
		})
	}
	if got := h.Stats(); got.CallsReceived != 0 || got.HeartbeatFramesReceived != 0 || got.SessionsAccepted != 0 {
		t.Errorf("stats after the forgeries: %+v, want no session, call or heartbeat", got)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Error("the service accepted a stream")
	default:
	}
	if after := stateOf(g, f); after != before {
		t.Errorf("group state changed: %+v -> %+v", before, after)
	}
}

// A node with a valid certificate for id 2 cannot act as node 3: not in a
// vote, an AppendEntries, an InstallSnapshot or a heartbeat, nor with
// node 3's address; and the group's data is unchanged. The same forger
// with its own id and address does reach the group, so the refusals are
// the sender check's.
func TestTLSNodeCannotActAsAnother(t *testing.T) {
	dir := certDir(t)
	n, g, f := secureTarget(t, dir)
	h := n.host(1)
	before := stateOf(g, f)
	_, client, err := loadTLS(t, dir, 2).tlsConfigs(2)
	if err != nil {
		t.Fatal(err)
	}
	as := func(id string, addr string) raft.RPCHeader {
		return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: []byte(addr)}
	}
	addr2, addr3 := n.host(2).Addr(), n.host(3).Addr()
	entries := []*raft.Log{{Index: before.last + 1, Term: before.term + 5, Type: raft.LogCommand, Data: make([]byte, 8)}}
	forgeries := []struct {
		name string
		kind byte
		req  any
	}{
		{"vote as 3", callRequestVote, &raft.RequestVoteRequest{RPCHeader: as("3", addr3), Term: before.term + 5,
			LastLogIndex: 1 << 40, LastLogTerm: 1 << 40}},
		{"append as 3", callAppendEntries, &raft.AppendEntriesRequest{RPCHeader: as("3", addr3), Term: before.term + 5,
			PrevLogEntry: before.last, PrevLogTerm: before.term, Entries: entries, LeaderCommitIndex: before.last + 1}},
		{"append as 2 with 3's address", callAppendEntries, &raft.AppendEntriesRequest{RPCHeader: as("2", addr3),
			Term: before.term + 5, PrevLogEntry: before.last, PrevLogTerm: before.term, Entries: entries}},
		{"append without an id", callAppendEntries, &raft.AppendEntriesRequest{RPCHeader: as("", ""),
			Leader: []byte(addr3), Term: before.term + 5, PrevLogEntry: before.last, PrevLogTerm: before.term, Entries: entries}},
		{"snapshot as 3", callInstallSnapshot, &raft.InstallSnapshotRequest{RPCHeader: as("3", addr3),
			SnapshotVersion: 1, Term: before.term + 5, LastLogIndex: 1 << 20, LastLogTerm: before.term + 5, Size: 24}},
		{"timeout-now as 3", callTimeoutNow, &raft.TimeoutNowRequest{RPCHeader: as("3", addr3)}},
	}
	for _, fg := range forgeries {
		t.Run(fg.name, func(t *testing.T) {
			err := forge(h.Addr(), client, func(sess *yamux.Session) error {
				return callOnce(sess, fg.kind, "g", fg.req)
			})
			if !errors.Is(err, errRefused) {
				t.Fatalf("forged call: %v, want refused", err)
			}
		})
	}
	t.Run("heartbeat as 3", func(t *testing.T) {
		err := forge(h.Addr(), client, func(sess *yamux.Session) error {
			hb := raft.AppendEntriesRequest{RPCHeader: as("3", addr3), Term: before.term + 5, PrevLogEntry: before.last,
				PrevLogTerm: before.term}
			return exchange(sess, appendHeartbeats(nil, []hbEntry{{group: "g", req: hb}}))
		})
		if err == nil {
			t.Fatal("a forged heartbeat frame was answered")
		}
	})
	if got := h.Stats().HeartbeatsReceived; got != 0 {
		t.Errorf("%d heartbeats were served", got)
	}
	if after := stateOf(g, f); after != before {
		t.Errorf("group state changed: %+v -> %+v", before, after)
	}
	// The control: as itself, node 2's stale vote request reaches raft and
	// is answered (not granted).
	calls := h.Stats().CallsReceived
	err = forge(h.Addr(), client, func(sess *yamux.Session) error {
		return callOnce(sess, callRequestVote, "g", &raft.RequestVoteRequest{RPCHeader: as("2", addr2), Term: 0})
	})
	if err != nil || h.Stats().CallsReceived != calls+1 {
		t.Fatalf("node 2 as itself: %v, calls %d -> %d", err, calls, h.Stats().CallsReceived)
	}
	if after := stateOf(g, f); after != before {
		t.Errorf("group state changed by the control: %+v -> %+v", before, after)
	}
}

var errRefused = errors.New("refused")

// forge dials addr (over TLS when cfg is set), runs our handshake and a
// yamux session, and runs do on it.
func forge(addr string, cfg *tls.Config, do func(*yamux.Session) error) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if cfg != nil {
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			return err
		}
		c = tc
	}
	if _, err := handshake(c); err != nil {
		return err
	}
	_ = c.SetDeadline(time.Time{})
	ycfg := yamux.DefaultConfig()
	ycfg.LogOutput = nil
	ycfg.Logger = yamuxLogger{logging.Discard()}
	sess, err := yamux.Client(c, ycfg)
	if err != nil {
		return err
	}
	defer sess.Close()
	return do(sess)
}

// callOnce sends one call on a new stream; errRefused if it is answered
// with an error naming the wrong sender.
func callOnce(sess *yamux.Session, kind byte, group string, req any) error {
	b, err := appendRequest(appendOpen(nil, streamCalls, ""), kind, group, req)
	if err != nil {
		return err
	}
	if r, ok := req.(*raft.InstallSnapshotRequest); ok {
		b = append(b, make([]byte, r.Size)...)
	}
	st, err := sess.OpenStream()
	if err != nil {
		return err
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := st.Write(b); err != nil {
		return err
	}
	body, err := frame.Read(st, 1, 1<<20)
	if err != nil {
		return err
	}
	switch body[0] {
	case statusOK:
		return nil
	case statusRemoteError:
		return fmt.Errorf("%w: %s", errRefused, body[1:])
	}
	return fmt.Errorf("status %d", body[0])
}

// exchange sends one request frame on a new call stream and reads the
// answer.
func exchange(sess *yamux.Session, req []byte) error {
	st, err := sess.OpenStream()
	if err != nil {
		return err
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := st.Write(append(appendOpen(nil, streamCalls, ""), req...)); err != nil {
		return err
	}
	_, err = frame.Read(st, 1, 1<<20)
	return err
}

// A dial is refused when a node certificate answers at an address that
// the address book gives to another node: node 3's certificate cannot
// stand in for node 2 at node 2's address.
func TestTLSDialChecksTheAnsweringNode(t *testing.T) {
	dir := certDir(t)
	n := newTestNet(t, nil)
	n.tls = func(id int32) *TLS { return loadTLS(t, dir, id) }
	h1 := n.start(1)
	n.start(3)
	rogue, err := Listen(Config{NodeID: 3, BindAddr: "127.0.0.1:0", TLS: loadTLS(t, dir, 3)})
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	n.mu.Lock()
	n.addrs[2] = rogue.Addr() // the address book sends node 2's traffic there
	n.mu.Unlock()

	p, err := h1.peer(rogue.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.session(time.Now().Add(5 * time.Second)); !errors.Is(err, ErrWrongPeer) {
		t.Fatalf("dial of node 2's address answered by node 3's certificate: %v, want ErrWrongPeer", err)
	}
	p3, err := h1.peer(n.host(3).Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p3.session(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("dial of node 3 at its own address: %v", err)
	}
}
