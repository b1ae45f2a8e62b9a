package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

// errInterrupted ends a command stopped by Ctrl-C or SIGTERM (exit 130).
var errInterrupted = errors.New("interrupted")

// usageError is a bad command line: unknown flag or command, a missing or
// extra argument, a flag value out of range. It exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() + " (see --help)" }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// TopicNotFoundError is a topic the cluster does not have.
type TopicNotFoundError struct{ Topic string }

func (e *TopicNotFoundError) Error() string { return fmt.Sprintf("topic %q does not exist", e.Topic) }

// UnreachableError means no seed broker could be connected to. Reasons
// holds the last dial error of each address, in Addrs order.
type UnreachableError struct {
	Addrs   []string
	Reasons []error
}

func (e *UnreachableError) Error() string {
	texts := make([]string, len(e.Reasons))
	same := true
	for i, r := range e.Reasons {
		texts[i] = dialReason(r)
		same = same && texts[i] == texts[0]
	}
	if same && len(texts) > 0 {
		return fmt.Sprintf("cannot reach any broker at %s: %s", strings.Join(e.Addrs, ","), texts[0])
	}
	parts := make([]string, len(e.Addrs))
	for i, a := range e.Addrs {
		parts[i] = a + " (" + texts[i] + ")"
	}
	return "cannot reach any broker at " + strings.Join(parts, ", ")
}

// Unwrap gives the dial errors, so that errors.Is(err, syscall.ECONNREFUSED)
// works.
func (e *UnreachableError) Unwrap() []error { return e.Reasons }

// ListenerMismatchError is a broker listener that expects what the command
// does not use, TLS or SASL authentication, or that does not speak the TLS
// or SASL the command uses. Without it the client only sees connections
// closed, or a bare ILLEGAL_SASL_STATE.
type ListenerMismatchError struct {
	Addr      string
	NeedsTLS  bool // the listener speaks TLS and --tls-ca is not given
	NoTLS     bool // --tls-ca is given and the listener does not speak TLS
	NeedsSASL bool // the listener wants SASL and --sasl-mechanism is not given
	NoSASL    bool // --sasl-mechanism is given and the listener has no SASL
}

func (e *ListenerMismatchError) Error() string {
	const useTLS, useSASL = "--tls-ca with the CA file of its certificate", "--sasl-mechanism, --sasl-user and --sasl-password"
	at := "the broker at " + e.Addr
	switch {
	case e.NeedsTLS && e.NeedsSASL:
		return at + " expects TLS and SASL authentication: use " + useTLS + ", and " + useSASL
	case e.NeedsTLS:
		return at + " expects TLS: use " + useTLS
	case e.NoTLS && e.NeedsSASL:
		return at + " does not speak TLS and expects SASL authentication: leave out --tls-ca and use " + useSASL
	case e.NoTLS:
		return at + " does not speak TLS: leave out --tls-ca"
	case e.NoSASL:
		return at + " does not expect SASL authentication: leave out --sasl-mechanism, --sasl-user and --sasl-password"
	}
	return at + " expects SASL authentication: use " + useSASL
}

// TimeoutError is a command that ran out of --timeout; Err says what it
// was waiting for.
type TimeoutError struct {
	After time.Duration
	Err   error
}

func (e *TimeoutError) Error() string { return fmt.Sprintf("timed out after %v: %v", e.After, e.Err) }
func (e *TimeoutError) Unwrap() error { return e.Err }

// dialReason is the short reason of a dial error: "connection refused",
// "no such host", "i/o timeout".
func dialReason(err error) string {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "connection refused"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.Err
	}
	var sc *os.SyscallError
	if errors.As(err, &sc) {
		return sc.Err.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err.Error()
	}
	return err.Error()
}

// explain turns the error of a client call made with ctx into what the
// user sees: no broker ever reached becomes an UnreachableError, a
// listener that expects other security a ListenerMismatchError, and
// running out of --timeout a TimeoutError. Other errors (a Kafka error
// code, a topic that does not exist) are clear as they are.
func (a *app) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ue *UnreachableError
	if errors.As(context.Cause(ctx), &ue) {
		return ue
	}
	var me *ListenerMismatchError
	if errors.As(context.Cause(ctx), &me) {
		return me
	}
	if me := a.reach.mismatched(); me != nil {
		return me
	}
	// A listener without SASL refuses SaslHandshake as out of place.
	var ce *client.ConnError
	if a.saslMechanism != "" && errors.Is(err, client.ErrIllegalSaslState) && errors.As(err, &ce) {
		return &ListenerMismatchError{Addr: ce.Addr, NoSASL: true}
	}
	if u := a.reach.unreachable(); u != nil {
		return u
	}
	if a.interrupted() {
		return errInterrupted
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &TimeoutError{After: a.timeout, Err: err}
	}
	return err
}
