package targets

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUnknownAck means JetStream acknowledged a message this target did not
// send (a bug in the bench or the client library).
var ErrUnknownAck = errors.New("targets: ack for an unknown message")

// JetStream publishes with nats.go's JetStream async publisher: every
// message is acknowledged by the stream (after the stream's replicas have
// it), and the ack or error handler reports each one. The client library's
// own pending limit is set to the window, so that it bounds what is
// outstanding exactly as the bench's window does for the other clients.
type JetStream struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string

	mu      sync.Mutex // guards pending
	pending map[*nats.Msg]func(error)
	unknown error // set by a handler that found no pending entry
}

// NewJetStream connects to url (the stream leader's server, so that
// JetStream gets the same direct path to the leader as Kafka clients) and
// publishes to subject.
func NewJetStream(url, subject string, window int) (*JetStream, error) {
	nc, err := nats.Connect(url, nats.Name("jetstream-bench"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	t := &JetStream{nc: nc, subject: subject, pending: map[*nats.Msg]func(error){}}
	t.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(window),
		jetstream.WithPublishAsyncTimeout(30*time.Second),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			t.finish(m, nil)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			t.finish(m, err)
		}))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return t, nil
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

// Send publishes one message asynchronously.
func (t *JetStream) Send(_ context.Context, value []byte, done func(error)) error {
	m := &nats.Msg{Subject: t.subject, Data: value}
	t.mu.Lock()
	t.pending[m] = done
	t.mu.Unlock()
	if _, err := t.js.PublishMsgAsync(m); err != nil {
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
// connection.
func (t *JetStream) Close(ctx context.Context) error {
	var err error
	select {
	case <-t.js.PublishAsyncComplete():
	case <-ctx.Done():
		err = ctx.Err()
	}
	t.nc.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(err, t.unknown)
}
