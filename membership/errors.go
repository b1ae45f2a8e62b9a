package membership

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels. Every error this package returns wraps one of them (or a
// context error); check with errors.Is.
var (
	// ErrInvalidConfig: a Config field is malformed (bad address, negative
	// duration). The wrapping error names the field.
	ErrInvalidConfig = errors.New("membership: invalid config")

	// ErrInvalidMeta: a NodeMeta is not valid (id <= 0, address not
	// host:port) or metadata bytes from the network do not decode.
	ErrInvalidMeta = errors.New("membership: invalid node metadata")

	// ErrMetaTooLarge: the encoded NodeMeta is over MetaMaxSize bytes
	// (memberlist would panic on it). See MetaSizeError.
	ErrMetaTooLarge = errors.New("membership: node metadata too large")

	// ErrDuplicateID: two nodes at different addresses claim the same node
	// id. See DuplicateIDError.
	ErrDuplicateID = errors.New("membership: duplicate node id")

	// ErrBroadcastTimeout: a Leave or UpdateMeta broadcast was not confirmed
	// sent before its deadline; other nodes may learn of it late or, for
	// Leave, see a failure instead of a leave.
	ErrBroadcastTimeout = errors.New("membership: broadcast not confirmed in time")

	// ErrLeft: the node has called Leave; it may not Join or UpdateMeta again.
	ErrLeft = errors.New("membership: node has left the cluster")

	// ErrClosed: Shutdown has been called.
	ErrClosed = errors.New("membership: shut down")
)

// MetaSizeError is an encoded NodeMeta over the memberlist limit.
type MetaSizeError struct {
	Size  int // encoded size in bytes
	Limit int // MetaMaxSize
}

func (e *MetaSizeError) Error() string {
	return fmt.Sprintf("membership: node metadata encodes to %d bytes, limit is %d", e.Size, e.Limit)
}
func (e *MetaSizeError) Unwrap() error { return ErrMetaTooLarge }

// DuplicateIDError reports a node id claimed from two addresses: Known is
// the address this node already holds for the id (its own address when the
// id is ours), Claimed the other one. memberlist refuses the second claimant;
// Join returns this error when the node being joined is the duplicate or
// meets one.
type DuplicateIDError struct {
	ID      int32
	Known   string
	Claimed string
}

func (e *DuplicateIDError) Error() string {
	return fmt.Sprintf("membership: duplicate node id %d: %s is at %s and also claimed from %s",
		e.ID, NodeName(e.ID), e.Known, e.Claimed)
}
func (e *DuplicateIDError) Unwrap() error { return ErrDuplicateID }

// JoinError is a Join that gave up because its context ended before any
// seed other than this node answered.
type JoinError struct {
	Seeds    []string // the seeds as given
	Attempts int      // rounds tried over all seeds
	Last     error    // failure of the last round (nil if none finished)
	Cause    error    // ctx.Err()
}

func (e *JoinError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "membership: join %v: gave up after %d attempts: %v", e.Seeds, e.Attempts, e.Cause)
	if e.Last != nil {
		fmt.Fprintf(&b, " (last attempt: %v)", e.Last)
	}
	return b.String()
}

// Unwrap returns the cause (a context error) and the last attempt's error.
func (e *JoinError) Unwrap() []error {
	errs := make([]error, 0, 2)
	for _, err := range []error{e.Cause, e.Last} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
