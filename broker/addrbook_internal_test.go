package broker

import (
	"testing"
	"time"

	"github.com/minikafka/minikafka-go/logging"
	"github.com/minikafka/minikafka-go/membership"
	"github.com/minikafka/minikafka-go/metadata"
)

// The Raft host resolves ids on its own goroutines from before gossip
// starts: a resolve running while the node hands gossip to the book sees
// nothing or gossip's answer, and -race finds no unordered access (it
// reported one when the book's reference was a plain field).
func TestAddrBookResolvesWhileGossipStarts(t *testing.T) {
	t.Parallel()
	var a addrBook
	a.fsm = metadata.NewFSM()
	m, err := membership.New(membership.Config{
		Meta:     membership.NodeMeta{ID: 7, KafkaAddr: "k7.test:9092", RaftAddr: "10.0.0.7:9093"},
		BindAddr: "127.0.0.1:0", Logger: logging.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()

	got := make(chan string, 1)
	go func() { // a host goroutine started before gossip; it syncs with nothing
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if addr, ok := a.resolve(7); ok {
				got <- addr
				return
			}
			time.Sleep(time.Millisecond)
		}
		got <- "not resolved"
	}()
	time.Sleep(20 * time.Millisecond) // the resolver has read the empty book
	a.setMembers(m)
	if addr := <-got; addr != "10.0.0.7:9093" {
		t.Fatalf("resolve(7) = %q, want gossip's 10.0.0.7:9093", addr)
	}
}
