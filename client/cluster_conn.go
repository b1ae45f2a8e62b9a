package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// connClass separates requests that a broker may hold for a long time from
// the rest. Kafka answers a connection's requests in order, so a JoinGroup
// parked until every member has rejoined (up to the rebalance timeout)
// would hold up the heartbeats, commits and fetches queued behind it.
type connClass uint8

const (
	classDefault connClass = iota
	classGroup             // JoinGroup and SyncGroup
)

// connKey names one connection of the cluster.
type connKey struct {
	node  int32
	class connClass
}

// errUnknownBroker is a node id that metadata does not list.
var errUnknownBroker = errors.New("client: unknown broker id")

// connFor returns the live connection of a class to a node, opening one if
// needed. Negative nodes are the seed addresses.
func (c *cluster) connFor(node int32, class connClass) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	key := connKey{node, class}
	if cn := c.conns[key]; cn != nil && !cn.isDead() {
		return cn, nil
	}
	var addr string
	if node < 0 {
		i := int(-node - 1)
		if i >= len(c.cfg.brokers) {
			return nil, errUnknownBroker
		}
		addr = c.cfg.brokers[i]
	} else {
		b, ok := c.brokers[node]
		if !ok {
			return nil, errUnknownBroker
		}
		addr = b.addr()
	}
	cn := newConn(c.ctx, c.cfg, node, addr, func(cn *conn) { c.forget(key, cn) })
	c.conns[key] = cn
	// Keep the list to the connections still running.
	live := c.all[:0]
	for _, old := range c.all {
		select {
		case <-old.exited:
		default:
			live = append(live, old)
		}
	}
	c.all = append(live, cn)
	return cn, nil
}

// forget drops a dead connection so that the next send dials again.
func (c *cluster) forget(key connKey, cn *conn) {
	c.mu.Lock()
	if c.conns[key] == cn {
		delete(c.conns, key)
	}
	c.mu.Unlock()
}

// send queues a request to a node; cb gets the result. See call.
func (c *cluster) send(node int32, cl *call) { c.sendOn(classDefault, node, cl) }

// sendOn queues a request on a node's connection of the given class.
func (c *cluster) sendOn(class connClass, node int32, cl *call) {
	cn, err := c.connFor(node, class)
	if err != nil {
		cl.cb(nil, err)
		return
	}
	cn.send(cl)
}

// request sends req to a node and waits for the response. extra is added
// to RequestTimeout for a request the broker may hold (a fetch's max wait).
func (c *cluster) request(ctx context.Context, node int32, req kmsg.Request, extra time.Duration) (kmsg.Response, error) {
	return c.requestOn(ctx, classDefault, node, req, extra)
}

// requestOn is request on a connection of the given class.
func (c *cluster) requestOn(ctx context.Context, class connClass, node int32, req kmsg.Request, extra time.Duration) (kmsg.Response, error) {
	type result struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan result, 1)
	c.sendOn(class, node, &call{req: req, extra: extra, cb: func(r kmsg.Response, err error) { done <- result{r, err} }})
	select {
	case r := <-done:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// requestAny sends req to the known brokers, then the seeds, until one
// answers.
func (c *cluster) requestAny(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	nodes := make([]int32, 0, len(c.brokers)+len(c.cfg.brokers))
	for id := range c.brokers {
		nodes = append(nodes, id)
	}
	slices.Sort(nodes)
	// The seeds come after the known brokers, unless the last Metadata
	// listed fewer brokers than the seeds or than an earlier answer: then
	// they take turns with them, so that a broker cut off from the others
	// is not the only one asked.
	partial := len(nodes) < max(c.mostBrokers, len(c.cfg.brokers))
	seeds := make([]int32, len(c.cfg.brokers))
	for i := range seeds {
		seeds[i] = int32(-1 - i)
	}
	if partial {
		nodes, seeds = append(nodes, seeds...), nil
	}
	if len(nodes) > 0 {
		k := c.rotate % len(nodes)
		nodes = append(nodes[k:], nodes[:k]...)
	}
	nodes = append(nodes, seeds...)
	c.rotate++
	c.mu.Unlock()

	var last error
	for _, n := range nodes {
		resp, err := c.request(ctx, n, req, 0)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ve *VersionError
		if errors.As(err, &ve) {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("%w: %w", ErrNoBrokers, last)
}
