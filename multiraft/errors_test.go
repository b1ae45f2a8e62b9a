package multiraft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/minikafka/minikafka-go/internal/testlog"
)

// Raft's error lines about another node's state are lowered: a peer down
// or this host closing to Info; a peer unreachable, without the group or
// not answering to a warning; any other error stays an error. The arguments are raft's own (replication.go) around
// errors as this package's transport returns them.
func TestRaftLineLevel(t *testing.T) {
	addr := "127.0.0.1:9093"
	h := &Host{peers: map[string]*peer{}}
	for _, c := range []struct {
		name string
		err  error
		want slog.Level
	}{
		{"peer down", &PeerError{Op: "heartbeat", Addr: addr, Err: ErrPeerDown}, slog.LevelInfo},
		{"host closing", ErrClosed, slog.LevelInfo},
		{"this group closing", raft.ErrTransportShutdown, slog.LevelInfo},
		{"group not open on the peer", &PeerError{Op: "heartbeat", Addr: addr,
			Err: fmt.Errorf("group %q: %w", "p/x/4", ErrUnknownGroup)}, slog.LevelWarn},
		{"peer's group did not answer", ErrNoResponse, slog.LevelWarn},
		{"call timed out", &PeerError{Op: "call", Addr: addr, Err: ErrCallTimeout}, slog.LevelWarn},
		{"dial refused, peer not down", &PeerError{Op: "dial", Addr: addr, Err: syscall.ECONNREFUSED}, slog.LevelWarn},
		{"protocol", fmt.Errorf("%w: bad frame", ErrProtocol), slog.LevelError},
		{"other", errors.New("disk on fire"), slog.LevelError},
	} {
		args := []any{"peer", addr, "backoff time", 10 * time.Millisecond, "error", c.err}
		if got := h.raftLineLevel(slog.LevelError, "failed to heartbeat to", args); got != c.want {
			t.Errorf("%s: level %v, want %v", c.name, got, c.want)
		}
	}
	if got := h.raftLineLevel(slog.LevelWarn, "failed to heartbeat to", []any{"error", ErrPeerDown}); got != slog.LevelWarn {
		t.Errorf("a warning was moved to %v", got)
	}
	if got := h.raftLineLevel(slog.LevelError, raftNewerTerm, []any{"peer", addr}); got != slog.LevelInfo {
		t.Errorf("a leader stepping down for a newer term logs at %v", got)
	}
}

// A member's node stopping while its group's leader replicates logs no
// error from raft on the survivors: the peer's loss is the watch's one line
// ("raft peer lost"), not an error per group and retry, also when the
// survivors then stop. Before raftLineLevel, the leader logged "failed to
// appendEntries to" and "failed to heartbeat to" at ERROR for every retry,
// and at its own Close for the retry that Close ended.
func TestStoppedPeerMakesNoRaftErrors(t *testing.T) {
	logs := &testlog.Buffer{}
	n := newTestNet(t, nil)
	n.logs = logs
	members := []int32{1, 2, 3}
	for _, id := range members {
		n.start(id)
	}
	n.watchAll()
	gs := make([]*Group, len(members))
	for i, id := range members {
		gs[i], _ = n.open(id, "g", members, fastTiming(), false)
	}
	at := leaderOf(t, gs)
	stopped := members[(at+1)%len(members)]
	n.stop(stopped)
	for i := range 30 { // the leader keeps replicating to the stopped member
		if _, _, err := gs[at].Propose(binary.BigEndian.AppendUint64(nil, uint64(i+1)), time.Second).Wait(); err != nil {
			t.Fatalf("propose with one member stopped: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, "the survivors to see the peer lost", func() bool {
		return strings.Contains(logs.String(), "raft peer lost")
	})
	// The survivors stopping too: their groups close while the leader
	// still retries the stopped member.
	for i, id := range members {
		if id != stopped {
			gs[i].Close()
		}
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && !strings.Contains(line, fmt.Sprintf("node=%d", stopped)) {
			t.Errorf("a survivor logged an error: %s", line)
		}
	}
}

// raftNewerTerm is raft's own text: a raft update that rewords it must
// update the constant.
func TestRaftNewerTermIsRaftsLine(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "third_party", "raft", "replication.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte(`logger.Error("`+raftNewerTerm+`"`)) {
		t.Fatalf("raft's replication.go no longer logs %q as an error", raftNewerTerm)
	}
}
