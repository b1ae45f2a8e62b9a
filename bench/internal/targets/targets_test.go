package targets

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/minikafka/minikafka-go/client"
	"github.com/minikafka/minikafka-go/internal/testcluster"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sendAll sends n records and waits for every done; it returns how many
// failed and the first error.
func sendAll(t *testing.T, tg Target, n int) (failed int, first error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var calls atomic.Int32
	for i := range n {
		wg.Add(1)
		err := tg.Send(ctx, []byte{byte(i), 1, 2, 3}, func(err error) {
			defer wg.Done()
			calls.Add(1)
			if err != nil {
				mu.Lock()
				failed++
				first = cmp(first, err)
				mu.Unlock()
			}
		})
		if err != nil {
			wg.Done()
			mu.Lock()
			failed++
			first = cmp(first, err)
			mu.Unlock()
		}
	}
	wg.Wait()
	if err := tg.Close(ctx); err != nil && failed == 0 {
		t.Fatalf("close: %v", err)
	}
	return failed, first
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Our client and franz-go each deliver every record exactly once to a real
// (in-process) MiniKafka node, and report each ack.
func TestKafkaTargetsDeliverEveryRecord(t *testing.T) {
	c := testcluster.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, "b", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	ours, err := NewOurs(c.Seeds(), "b", client.Linger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if failed, first := sendAll(t, ours, 300); failed != 0 {
		t.Fatalf("ours: %d failed, first %v", failed, first)
	}
	franz, err := NewFranz(c.Seeds(), "b", 64)
	if err != nil {
		t.Fatal(err)
	}
	if failed, first := sendAll(t, franz, 200); failed != 0 {
		t.Fatalf("franz: %d failed, first %v", failed, first)
	}

	cons, err := client.NewConsumer(client.Brokers(c.Seeds()...),
		client.ConsumePartitions(map[string]map[int32]client.Offset{"b": {0: client.AtStart()}}),
		client.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < 500 && ctx.Err() == nil {
		rs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(rs)
	}
	if got != 500 {
		t.Fatalf("read %d records, want 500", got)
	}
	// Nothing more arrives: no record was written twice.
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer pcancel()
	if rs, _ := cons.Poll(pctx); len(rs) != 0 {
		t.Fatalf("%d extra records", len(rs))
	}
}

func startNATS(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// The JetStream target reports an ack for every stored message, and the
// failure of every message that no stream takes.
func TestJetStreamTarget(t *testing.T) {
	s := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}

	tg, err := NewJetStream(s.ClientURL(), "s", 16)
	if err != nil {
		t.Fatal(err)
	}
	if failed, first := sendAll(t, tg, 500); failed != 0 {
		t.Fatalf("%d failed, first %v", failed, first)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 500 {
		t.Fatalf("stream holds %d messages, want 500", info.State.Msgs)
	}

	bad, err := NewJetStream(s.ClientURL(), "nostream", 4)
	if err != nil {
		t.Fatal(err)
	}
	failed, first := sendAll(t, bad, 3)
	if failed != 3 || !errors.Is(first, jetstream.ErrNoStreamResponse) {
		t.Fatalf("%d of 3 failed, first %v; want all, with ErrNoStreamResponse", failed, first)
	}
}
