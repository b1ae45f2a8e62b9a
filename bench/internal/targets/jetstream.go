package targets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnknownAck means JetStream acknowledged a message this target did not
// send (a bug in the bench or the client library).
var ErrUnknownAck = errors.New("targets: ack for an unknown message")

// ErrNoRoutes is returned by NewJetStream without a stream to publish to.
var ErrNoRoutes = errors.New("targets: no JetStream routes")

// Route is where one partition's messages go: a subject of one stream, and
// the client URL of the server that leads that stream.
type Route struct {
	URL     string
	Subject string
}

// JetStream publishes with nats.go's JetStream async publisher: every
// message is acknowledged by the stream (after the stream's replicas have
// it), and the ack or error handler reports each one. Partition i of the
// bench is routes[i]: a stream each, published over a connection to that
// stream leader's server (one connection per server), as Kafka clients
// send each partition's records to its leader. The client library's own
// pending limit is set to the window, so that it bounds what is
// outstanding exactly as the bench's window does for the other clients.
type JetStream struct {
	conns    []*nats.Conn
	js       []jetstream.JetStream // one per connection
	subjects []string              // by partition
	byPart   []jetstream.JetStream // by partition: the context of its leader's connection

	mu      sync.Mutex // guards pending and unknown
	pending map[*nats.Msg]func(error)
	unknown error // set by a handler that found no pending entry
}

// NewJetStream connects to the routes' servers and publishes partition i
// to routes[i].Subject.
func NewJetStream(routes []Route, window int) (_ *JetStream, err error) {
	if len(routes) == 0 {
		return nil, ErrNoRoutes
	}
	t := &JetStream{pending: map[*nats.Msg]func(error){}}
	defer func() {
		if err != nil {
			t.closeConns()
		}
	}()
	byURL := map[string]jetstream.JetStream{}
	for _, r := range routes {
		js, ok := byURL[r.URL]
		if !ok {
			if js, err = t.connect(r.URL, window); err != nil {
				return nil, err
			}
			byURL[r.URL] = js
		}
		t.subjects = append(t.subjects, r.Subject)
		t.byPart = append(t.byPart, js)
	}
	return t, nil
}

// connect opens a connection to url and its async publishing context.
func (t *JetStream) connect(url string, window int) (jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name("jetstream-bench"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("targets: connect %s: %w", url, err)
	}
	t.conns = append(t.conns, nc)
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(window),
		jetstream.WithPublishAsyncTimeout(30*time.Second),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			t.finish(m, nil)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			t.finish(m, err)
		}))
	if err != nil {
		return nil, fmt.Errorf("targets: jetstream %s: %w", url, err)
	}
	t.js = append(t.js, js)
	return js, nil
}

func (t *JetStream) finish(m *nats.Msg, err error) {
	t.mu.Lock()
	done, ok := t.pending[m]
	delete(t.pending, m)
	if !ok && t.unknown == nil {
		t.unknown = ErrUnknownAck
	}
	t.mu.Unlock()
	if ok {
		done(err)
	}
}

// Send publishes one message to partition's stream asynchronously.
func (t *JetStream) Send(_ context.Context, partition int, value []byte, done func(error)) error {
	if partition < 0 || partition >= len(t.subjects) {
		return fmt.Errorf("targets: partition %d of %d streams", partition, len(t.subjects))
	}
	m := &nats.Msg{Subject: t.subjects[partition], Data: value}
	t.mu.Lock()
	t.pending[m] = done
	t.mu.Unlock()
	if _, err := t.byPart[partition].PublishMsgAsync(m); err != nil {
		t.mu.Lock()
		_, ok := t.pending[m]
		delete(t.pending, m)
		t.mu.Unlock()
		if !ok { // the error handler already reported it
			return nil
		}
		return err
	}
	return nil
}

// Close waits for every outstanding ack (bounded by ctx) and closes the
// connections.
func (t *JetStream) Close(ctx context.Context) error {
	var err error
	for _, js := range t.js {
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	t.closeConns()
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(err, t.unknown)
}

func (t *JetStream) closeConns() {
	for _, nc := range t.conns {
		nc.Close()
	}
}
