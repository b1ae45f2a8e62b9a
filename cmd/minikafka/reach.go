package main

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
)

// refusalsToGiveUp is how many refused connections each seed must give,
// with no broker ever reached, before a command gives up early. Two rounds
// rather than one, so that a node restarting at that instant is not taken
// for a wrong address.
const refusalsToGiveUp = 2

// reach dials for the client (client.Dialer) and watches the outcome, to
// tell "nothing listens at --brokers" from a slow cluster. When giveUp is
// set, it is called with an *UnreachableError as soon as every seed has
// refused refusalsToGiveUp connections and no dial ever succeeded.
type reach struct {
	seeds  []string
	giveUp context.CancelCauseFunc // nil: never give up early

	mu      sync.Mutex // guards the fields below
	reached bool       // some dial succeeded
	refused map[string]int
	last    map[string]error // last dial error per address
}

func newReach(seeds []string, giveUp context.CancelCauseFunc) *reach {
	return &reach{seeds: seeds, giveUp: giveUp, refused: map[string]int{}, last: map[string]error{}}
}

// dial is a client.DialFunc.
func (r *reach) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.reached = true
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, err // our own cancellation says nothing about the broker
	}
	r.last[addr] = err
	if errors.Is(err, syscall.ECONNREFUSED) {
		r.refused[addr]++
	}
	if r.giveUp != nil && !r.reached && r.allRefusedLocked() {
		r.giveUp(r.unreachableLocked())
	}
	return nil, err
}

func (r *reach) allRefusedLocked() bool {
	for _, s := range r.seeds {
		if r.refused[s] < refusalsToGiveUp {
			return false
		}
	}
	return len(r.seeds) > 0
}

// unreachable returns an *UnreachableError if no dial ever succeeded and
// every seed was tried, nil otherwise.
func (r *reach) unreachable() *UnreachableError {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reached {
		return nil
	}
	for _, s := range r.seeds {
		if r.last[s] == nil {
			return nil
		}
	}
	return r.unreachableLocked()
}

func (r *reach) unreachableLocked() *UnreachableError {
	e := &UnreachableError{Addrs: append([]string(nil), r.seeds...)}
	for _, s := range r.seeds {
		e.Reasons = append(e.Reasons, r.last[s])
	}
	return e
}
