package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinator finds and remembers the coordinator of one group (or one
// transactional id), and sends its requests to it. Safe for concurrent use.
type coordinator struct {
	cl      *cluster
	keyType int8   // 0: a group, 1: a transactional id
	group   string // the key: a group name or a transactional id

	mu   sync.Mutex // guards node: the member's goroutine and Commit callers share it
	node int32      // -1 until found, and after an answer says it moved
}

func newCoordinator(cl *cluster, group string) *coordinator {
	return &coordinator{cl: cl, group: group, node: -1}
}

func newTxnCoordinator(cl *cluster, txnID string) *coordinator {
	return &coordinator{cl: cl, keyType: 1, group: txnID, node: -1}
}

// find returns the coordinator, asking any broker if it is not known.
func (c *coordinator) find(ctx context.Context) (int32, error) {
	c.mu.Lock()
	node := c.node
	c.mu.Unlock()
	if node >= 0 {
		return node, nil
	}
	node, err := c.cl.findCoordinator(ctx, c.keyType, c.group)
	if err != nil {
		return -1, err
	}
	c.mu.Lock()
	c.node = node
	c.mu.Unlock()
	return node, nil
}

// request sends req to the coordinator on a connection of the class.
// extra is how long the broker may hold the request beyond RequestTimeout.
// A failed connection makes the next request look the coordinator up
// again; so does an answer (passed to noteErr by the caller) saying it
// moved.
func (c *coordinator) request(ctx context.Context, class connClass, req kmsg.Request, extra time.Duration) (kmsg.Response, error) {
	node, err := c.find(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, c.cl.cfg.requestTimeout+extra)
	defer cancel()
	resp, err := c.cl.requestOn(rctx, class, node, req, extra)
	if err != nil {
		c.forget(node)
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = ErrRequestTimeout
		}
		return nil, err
	}
	return resp, nil
}

// noteErr forgets the coordinator when err says it is not (or no longer)
// the coordinator: NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE. A
// coordinator that is loading (COORDINATOR_LOAD_IN_PROGRESS) is asked
// again after a backoff.
func (c *coordinator) noteErr(err error) {
	if errors.Is(err, ErrNotCoordinator) || errors.Is(err, ErrCoordinatorNotAvailable) {
		c.mu.Lock()
		c.node = -1
		c.mu.Unlock()
	}
}

func (c *coordinator) forget(node int32) {
	c.mu.Lock()
	if c.node == node {
		c.node = -1
	}
	c.mu.Unlock()
}

// backoff is the wait before retry number attempt (1 for the first):
// RetryBackoff doubling up to its max, with ±20% jitter.
func backoff(cfg *config, attempt int) time.Duration {
	d := cfg.retryBackoff
	for i := 1; i < attempt && d < cfg.retryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, cfg.retryBackoffMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// sleep waits d or until ctx ends, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// retryGroup runs fn until it succeeds, fails with an error that is not
// retriable, or ctx ends; between attempts it backs off. Retriable are the
// coordinator errors (the coordinator moved, is not available, or is
// loading), lost connections, timeouts, and other codes Kafka marks
// retriable (UNSTABLE_OFFSET_COMMIT among them).
func retryGroup(ctx context.Context, cfg *config, fn func(context.Context) error) error {
	return retryWhile(ctx, cfg, IsRetriable, fn)
}

// retryWhile is retryGroup with its own test of which errors to retry.
func retryWhile(ctx context.Context, cfg *config, retriable func(error) bool, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !retriable(err) || ctx.Err() != nil {
			if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
			}
			return err
		}
		if !sleep(ctx, backoff(cfg, attempt)) {
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		}
	}
}
