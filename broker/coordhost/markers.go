package coordhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/partition"
	"github.com/minikafka/minikafka-go/txncoord"
)

// markerWriter writes the transaction markers of this node's transaction
// coordinators: through the local replica into a partition this node
// leads, and with WriteTxnMarkers, over the Kafka API, to the leader of
// any other.
type markerWriter struct {
	h *Host

	// mu guards clients, queues and closed: two Kafka clients per remote
	// node (clientKey), kept until the node stops, and the markers waiting
	// for each remote leader, by node id.
	mu      sync.Mutex
	clients map[clientKey]*kgo.Client
	queues  map[int32]*markerQueue
	closed  bool
	// senders counts the goroutines sending queued markers (send).
	senders sync.WaitGroup
}

var _ txncoord.Markers = (*markerWriter)(nil)

func newMarkerWriter(h *Host) *markerWriter {
	return &markerWriter{h: h, clients: make(map[clientKey]*kgo.Client), queues: make(map[int32]*markerQueue)}
}

// WriteMarkers implements txncoord.Markers. Partitions of deleted topics
// count as written. The markers are written at once, not one after
// another: every local one is proposed before any is waited for, and each
// remote leader gets its request from a goroutine of its own.
func (w *markerWriter) WriteMarkers(ctx context.Context, m txncoord.Marker, parts []txncoord.TopicPartition) error {
	state := w.h.deps.Meta.State()
	remote := map[int32][]txncoord.TopicPartition{}
	var errs []error
	var waits []func() error
	for _, tp := range parts {
		if _, ok := state.Partition(tp.Topic, tp.Partition); !ok {
			continue
		}
		leader, _, ok := w.h.deps.PartitionLeader(tp.Topic, tp.Partition)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s-%d: %w", tp.Topic, tp.Partition, kerr.LeaderNotAvailable))
		case leader == w.h.cfg.NodeID:
			waits = append(waits, w.proposeLocal(ctx, m, tp))
		default:
			remote[leader] = append(remote[leader], tp)
		}
	}
	remoteErrs := make(chan error, len(remote))
	for leader, tps := range remote {
		go func() { remoteErrs <- w.writeRemote(ctx, leader, m, tps) }() // ends within writeRemote's timeout
	}
	for _, wait := range waits {
		errs = append(errs, wait())
	}
	for range remote {
		errs = append(errs, <-remoteErrs)
	}
	return errors.Join(errs...)
}

// proposeLocal proposes the marker to this node's replica of tp and
// returns the wait for its outcome.
func (w *markerWriter) proposeLocal(ctx context.Context, m txncoord.Marker, tp txncoord.TopicPartition) (wait func() error) {
	fail := func(err error) func() error {
		return func() error { return fmt.Errorf("%s-%d: marker: %w", tp.Topic, tp.Partition, err) }
	}
	lr, ok := w.h.deps.Replica(tp.Topic, tp.Partition)
	if !ok {
		return fail(kerr.NotLeaderForPartition)
	}
	select {
	case <-lr.Opened():
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	var prop *partition.Proposal
	lr.Extra().verified.Marker(m.ProducerID, m.ProducerEpoch, m.TxnVersion >= txncoord.TxnVersion2, func() { // the producer's next transaction is verified anew
		prop = lr.Partition().ProposeEndTxn(partition.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
			CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit, V2: m.TxnVersion >= txncoord.TxnVersion2}, w.h.cfg.Tuning.Proposal)
	})
	return func() error {
		res, err := prop.Wait()
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return fail(err)()
		}
		return nil
	}
}

// requestNode sends req to the node cl was made for (markerWriter.client),
// once more if the first attempt fails on the connection rather than in
// the request: a pooled connection to a node that restarted since its
// last use fails on first write or read, and franz-go dials anew only for
// the next request. A failed write of a marker or a verification is
// harmless to repeat.
func requestNode(ctx context.Context, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil && ctx.Err() == nil && staleConn(err) {
		resp, err = cl.SeedBrokers()[0].Request(ctx, req)
	}
	return resp, err
}

// staleConn reports whether err is a connection that ended under a
// request: EOF, reset or broken pipe.
func staleConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// clientKey names a Kafka client to another node: its Kafka address, and
// whether it carries this node's markers or its other requests (Host.
// RequestNode: verifications, AddPartitionsToTxn of transactions v2). They
// need connections of their own, as Kafka's marker and AddPartitionsToTxn
// senders have: a node answers a connection's requests in order, and a
// coordinator holds an AddPartitionsToTxn while the previous transaction's
// markers are written, so a marker queued behind one on the same
// connection waited for the coordinator to give up, and two nodes could
// each hold the other's markers that way (CompletionWait, 500 ms, each).
type clientKey struct {
	addr    string
	markers bool
}

// client returns a Kafka client of a node, made on first use: the
// markers' one or the other requests' (clientKey).
func (w *markerWriter) client(node int32, markers bool) (*kgo.Client, error) {
	b, ok := w.h.deps.Meta.State().Broker(node)
	if !ok {
		return nil, fmt.Errorf("node %d: %w", node, kerr.BrokerNotAvailable)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, fmt.Errorf("%w: the node is stopping", kerr.NotCoordinator)
	}
	key := clientKey{addr: b.KafkaAddr, markers: markers}
	if cl := w.clients[key]; cl != nil {
		return cl, nil
	}
	id := "minikafka-broker"
	if markers {
		id = "minikafka-txn-coordinator"
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(b.KafkaAddr), kgo.ClientID(id)}, w.h.deps.ClientOpts()...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("coordhost: client of node %d: %w", node, err)
	}
	w.clients[key] = cl
	return cl, nil
}

// close closes the clients; later writes fail.
func (w *markerWriter) close() {
	w.mu.Lock()
	w.closed = true
	clients := w.clients
	w.clients = nil
	w.mu.Unlock()
	for _, cl := range clients {
		cl.Close() // fails the senders' requests in flight
	}
	w.senders.Wait()
}
