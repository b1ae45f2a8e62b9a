package kafkaapi

import (
	"fmt"
	"runtime/debug"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// PanicError is a panic recovered while one request was decoded, started
// or answered. It closes that request's connection; the node goes on.
type PanicError struct {
	Key   int16 // the request's API key, -1 if not yet known
	Value any   // what was passed to panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("kafkaapi: panic serving a %s request: %v", apiName(e.Key), e.Value)
}

func apiName(key int16) string {
	if key < 0 {
		return "(undecoded)"
	}
	return kmsg.NameForKey(key)
}

// guard runs f, one request's step on its connection's reader or writer.
// A panic in f is logged at Error with its stack, counted (RequestStats),
// and returned as a *PanicError, which closes the connection.
func (s *Server) guard(key int16, host string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.panics.Add(1)
			s.log.Error("kafkaapi: panic serving a request; closing its connection",
				"api", apiName(key), "remote", host, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = &PanicError{Key: key, Value: v}
		}
	}()
	return f()
}

// RequestStats are counts of a Server's requests.
type RequestStats struct {
	// Panics counts the requests whose decoding, start or answer
	// panicked (each closed its connection).
	Panics uint64
	// QueuedBytes is what the requests read and not yet answered hold of
	// the QueuedMaxRequestBytes budget, QueuedBytesPeak its highest value
	// so far, QueuedBytesMax the budget, and QueuedWaiting how many
	// connections wait for room in it.
	QueuedBytes, QueuedBytesPeak, QueuedBytesMax int64
	QueuedWaiting                                int
}

// Requests reports the request counts.
func (s *Server) Requests() RequestStats {
	return RequestStats{
		Panics:          s.panics.Load(),
		QueuedBytes:     s.queued.used.Load(),
		QueuedBytesPeak: s.queued.peak.Load(),
		QueuedBytesMax:  s.queued.limit,
		QueuedWaiting:   int(s.queued.waiting.Load()),
	}
}
