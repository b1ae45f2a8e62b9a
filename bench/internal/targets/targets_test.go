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

// sendAll sends n records round robin over parts partitions and waits for
// every done; it returns how many failed and the first error.
func sendAll(t *testing.T, tg Target, n, parts int) (failed int, first error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var calls atomic.Int32
	for i := range n {
		wg.Add(1)
		err := tg.Send(ctx, i%parts, []byte{byte(i), 1, 2, 3}, func(err error) {
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
// (in-process) MiniKafka node, to the partition the bench picked, and
// report each ack.
func TestKafkaTargetsDeliverEveryRecord(t *testing.T) {
	c := testcluster.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := client.NewAdmin(client.Brokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, "b", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	ours, err := NewOurs(c.Seeds(), "b", client.Linger(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if failed, first := sendAll(t, ours, 300, 2); failed != 0 {
		t.Fatalf("ours: %d failed, first %v", failed, first)
	}
	franz, err := NewFranz(c.Seeds(), "b", 64)
	if err != nil {
		t.Fatal(err)
	}
	if failed, first := sendAll(t, franz, 200, 2); failed != 0 {
		t.Fatalf("franz: %d failed, first %v", failed, first)
	}

	cons, err := client.NewConsumer(client.Brokers(c.Seeds()...),
		client.ConsumePartitions(map[string]map[int32]client.Offset{"b": {0: client.AtStart(), 1: client.AtStart()}}),
		client.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got, perPart := 0, map[int32]int{}
	for got < 500 && ctx.Err() == nil {
		rs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(rs)
		for _, r := range rs {
			perPart[r.Partition]++
		}
	}
	if got != 500 || perPart[0] != 250 || perPart[1] != 250 {
		t.Fatalf("read %d records, %v per partition; want 500, 250 in each", got, perPart)
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

// The JetStream target reports an ack for every stored message, puts
// partition i's messages in route i's stream, and reports the failure of
// every message that no stream takes.
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
	var streams []jetstream.Stream
	var routes []Route
	for _, n := range []string{"0", "1"} {
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S" + n, Subjects: []string{"s." + n}, Storage: jetstream.FileStorage})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
		routes = append(routes, Route{URL: s.ClientURL(), Subject: "s." + n})
	}

	tg, err := NewJetStream(routes, 16)
	if err != nil {
		t.Fatal(err)
	}
	if failed, first := sendAll(t, tg, 500, 2); failed != 0 {
		t.Fatalf("%d failed, first %v", failed, first)
	}
	for i, st := range streams {
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != 250 {
			t.Fatalf("stream %d holds %d messages, want 250", i, info.State.Msgs)
		}
	}

	if _, err := NewJetStream(nil, 4); !errors.Is(err, ErrNoRoutes) {
		t.Fatalf("no routes: err %v", err)
	}
	bad, err := NewJetStream([]Route{{URL: s.ClientURL(), Subject: "nostream"}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	failed, first := sendAll(t, bad, 3, 1)
	if failed != 3 || !errors.Is(first, jetstream.ErrNoStreamResponse) {
		t.Fatalf("%d of 3 failed, first %v; want all, with ErrNoStreamResponse", failed, first)
	}
}
