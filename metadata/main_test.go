package metadata

import (
	"bytes"
	"testing"

	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/logging"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() Option { return WithLogger(logging.Discard()) }

// step applies cmd at the next index and checks what every Apply must
// guarantee: s is left untouched, the index moves, invariants hold, and a
// rejected command changes nothing else.
func step(t testing.TB, s *Snapshot, cmd Command) (*Snapshot, any, error) {
	t.Helper()
	before, _ := s.MarshalBinary()
	next, res, err := s.Apply(s.index+1, cmd)
	if after, _ := s.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatalf("Apply(%T) modified its receiver", cmd)
	}
	if next.index != s.index+1 {
		t.Fatalf("Apply(%T): index %d, want %d", cmd, next.index, s.index+1)
	}
	if cerr := next.check(); cerr != nil {
		t.Fatalf("Apply(%T) broke an invariant: %v", cmd, cerr)
	}
	if err != nil {
		if res != nil {
			t.Fatalf("Apply(%T) returned result %v with error %v", cmd, res, err)
		}
		want := s.shallow()
		want.index = next.index
		if !next.Equal(want) {
			t.Fatalf("rejected Apply(%T) changed the state: %v", cmd, err)
		}
	}
	return next, res, err
}

// must applies cmds in order and fails the test on any error.
func must(t testing.TB, s *Snapshot, cmds ...Command) *Snapshot {
	t.Helper()
	for _, c := range cmds {
		var err error
		if s, _, err = step(t, s, c); err != nil {
			t.Fatalf("Apply(%#v): %v", c, err)
		}
	}
	return s
}

func broker(id int32) RegisterBroker {
	return RegisterBroker{ID: id, KafkaAddr: "127.0.0.1:9092", RaftAddr: "127.0.0.1:9093"}
}

// cluster3 is an initialized state with brokers 1, 2 and 3.
func cluster3(t testing.TB) *Snapshot {
	t.Helper()
	return must(t, &Snapshot{}, InitCluster{ClusterID: "c1"}, broker(1), broker(2), broker(3))
}

func ptr[T any](v T) *T { return &v }
