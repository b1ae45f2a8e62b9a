package kafkaapi

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/minikafka/minikafka-go/internal/knob"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxRequestBytes = 100 << 20 // Kafka's socket.request.max.bytes
	// DefaultQueuedMaxRequestBytes is the default of
	// Config.QueuedMaxRequestBytes, which explains it.
	DefaultQueuedMaxRequestBytes = 256 << 20
	DefaultMaxInFlight           = 32
	DefaultRequestTimeout        = 30 * time.Second

	DefaultMaxFetchWait        = 30 * time.Second
	DefaultFetchMaxBytes       = 55 << 20 // Kafka's fetch.max.bytes
	DefaultMaxCreatePartitions = 10_000
	DefaultMaxConnections      = 10_000
	DefaultConnectionsMaxIdle  = 10 * time.Minute // Kafka's connections.max.idle.ms
	DefaultAuthTimeout         = 10 * time.Second
	minFetchMaxBytes           = 1024 // Kafka's lower bound for fetch.max.bytes
)

// Config tunes a Server. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// MaxRequestBytes bounds one request frame (the int32 size prefix). A
	// larger or negative size closes that connection. Default 100 MiB.
	MaxRequestBytes int32

	// QueuedMaxRequestBytes bounds, node-wide, the memory of the requests
	// read and not yet answered, on all connections together (Kafka's
	// queued.max.request.bytes). Half of it holds frames: a request is
	// charged its frame before the frame is read. The other half holds
	// what decoding and serving requests costs beyond their frames (kmsg
	// decodes an array of small entries into structs up to 96 times their
	// wire size): a request is charged its estimated cost before it is
	// decoded. Both are released once it is answered. While a half is
	// spent, readers stop reading, as Kafka mutes its channels, until
	// what they need is free (a large request may wait while smaller ones
	// pass, as in Kafka; a frame must then arrive within RequestTimeout
	// and a second per MiB, so that a client stalling mid-frame holds
	// the budget only that long). Produce, Fetch, OffsetCommit, ListOffsets,
	// OffsetForLeaderEpoch and Metadata are charged what their entries
	// cost (a Produce's records nothing: kmsg keeps them in the frame);
	// others 128 times their frame. A request whose cost alone passes its
	// half closes its connection, as a frame over MaxRequestBytes does;
	// that bounds the frames of the others to 1/256 of the budget.
	//
	// Kafka leaves it unbounded; ours must be bounded. The default of 256
	// MiB is fixed rather than a share of the machine's memory (which a
	// container's limit hides): its halves admit a Produce of
	// MaxRequestBytes' default 100 MiB beside smaller requests, a Fetch,
	// OffsetCommit, ListOffsets or OffsetForLeaderEpoch naming 100,000
	// partitions (at most 45 MiB), and other requests of up to 1 MiB,
	// while the memory of queued requests stays a small part of a
	// node's. At least twice MaxRequestBytes.
	QueuedMaxRequestBytes int64

	// MaxInFlight bounds the requests per connection that have been
	// started but not yet answered. Default 32.
	MaxInFlight int

	// RequestTimeout bounds backend calls whose request carries no timeout
	// of its own (InitProducerId, auto-creation in Metadata, CreateTopics
	// with TimeoutMillis <= 0), and how long a request's frame may take
	// to arrive once QueuedMaxRequestBytes holds it (plus a second per
	// MiB; at most ConnectionsMaxIdle). Default 30s.
	RequestTimeout time.Duration

	// MaxFetchWait bounds how long a Fetch waits for MinBytes, whatever
	// its MaxWaitMillis asks, so that a request cannot hold a goroutine for
	// up to 24 days. Kafka has no such bound; the default is the 30s of
	// the consumers' default request.timeout.ms, after which a client has
	// given up on the answer anyway. Default 30s.
	MaxFetchWait time.Duration

	// FetchMaxBytes caps a Fetch's MaxBytes, and so every partition's
	// share of it, like Kafka's fetch.max.bytes: the first batch still
	// comes back whole when larger (KIP-74). At least 1024; default
	// 55 MiB.
	FetchMaxBytes int

	// MaxCreatePartitions bounds the partitions one CreateTopics request
	// may create, all its topics together; a topic that would pass it is
	// answered POLICY_VIOLATION (as Kafka's controller answers an
	// excessively large batch) before the backend is asked. Default 10,000.
	MaxCreatePartitions int

	// MaxConnections bounds the connections served at once (Kafka's
	// max.connections), and MaxConnectionsPerIP those from one IP address
	// (max.connections.per.ip); a connection past either is closed as
	// soon as it is accepted. Kafka leaves both unbounded; each connection
	// costs two goroutines and buffers, so the defaults are 10,000 and
	// MaxConnections.
	MaxConnections, MaxConnectionsPerIP int

	// ConnectionsMaxIdle closes a connection that has sent nothing for
	// that long while none of its requests is being answered (Kafka's
	// connections.max.idle.ms). Default 10 minutes.
	ConnectionsMaxIdle time.Duration

	// AuthenticationTimeout bounds how long a connection to a TLS or SASL
	// Listener may take to finish its TLS handshake and SASL
	// authentication; it is closed when it has not by then. Default 10s.
	AuthenticationTimeout time.Duration

	// FailedAuthenticationDelay is how long the answer to a failed SASL
	// authentication, and the close after it, wait (Kafka's
	// connection.failed.authentication.delay.ms). Default 100ms; negative:
	// none.
	FailedAuthenticationDelay time.Duration

	// MaxFailedAuthenticationsPerIP bounds the failed SASL
	// authentications from one IP address (an IPv6 /64) per
	// FailedAuthenticationsWindow; past it the address's attempts are
	// refused before any work until its allowance refills (evenly over the
	// window), each answered SASL_AUTHENTICATION_FAILED when the address
	// may try again (at most half AuthenticationTimeout later). Default 20
	// per minute; negative: no limit.
	MaxFailedAuthenticationsPerIP int
	FailedAuthenticationsWindow   time.Duration

	// DisableTxnPartitionVerification turns off the check that a
	// transactional batch's partition is in its producer's ongoing
	// transaction (Backend's TxnVerifier; Kafka's
	// transaction.partition.verification.enable=false). Default: checked.
	DisableTxnPartitionVerification bool

	// Logger receives per-connection problems at Debug. Default
	// slog.Default().
	Logger *slog.Logger

	// Observer, if set, is told how long each request took. Default none.
	Observer RequestObserver

	// Quotas, if set, enforces client quotas (internal/quota.Manager;
	// docs/quotas.md). Default none: no client is throttled.
	Quotas Quotas
}

// RequestObserver receives the time each request took on a connection,
// from being read to its response being written (or, without a response,
// to being done). It must be quick and safe for concurrent use.
type RequestObserver interface {
	RequestDone(key int16, elapsed time.Duration)
}

// withDefaults validates c in one place and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	if c.MaxRequestBytes < 0 {
		return c, &ConfigError{Field: "MaxRequestBytes", Reason: fmt.Sprintf("%d is negative", c.MaxRequestBytes)}
	}
	if c.MaxInFlight < 0 {
		return c, &ConfigError{Field: "MaxInFlight", Reason: fmt.Sprintf("%d is negative", c.MaxInFlight)}
	}
	if c.RequestTimeout < 0 {
		return c, &ConfigError{Field: "RequestTimeout", Reason: fmt.Sprintf("%v is negative", c.RequestTimeout)}
	}
	err := knob.Check([]knob.Duration{
		{Name: "MaxFetchWait", V: &c.MaxFetchWait, Def: DefaultMaxFetchWait, Min: time.Millisecond},
		{Name: "ConnectionsMaxIdle", V: &c.ConnectionsMaxIdle, Def: DefaultConnectionsMaxIdle, Min: time.Millisecond},
		{Name: "AuthenticationTimeout", V: &c.AuthenticationTimeout, Def: DefaultAuthTimeout, Min: time.Millisecond},
	}, []knob.Int{
		{Name: "MaxConnections", V: &c.MaxConnections, Def: DefaultMaxConnections, Min: 1, Max: math.MaxInt32},
		{Name: "MaxConnectionsPerIP", V: &c.MaxConnectionsPerIP, Def: math.MaxInt32, Min: 1, Max: math.MaxInt32},
		{Name: "FetchMaxBytes", V: &c.FetchMaxBytes, Def: DefaultFetchMaxBytes, Min: minFetchMaxBytes, Max: math.MaxInt32},
		{Name: "MaxCreatePartitions", V: &c.MaxCreatePartitions, Def: DefaultMaxCreatePartitions, Min: 1, Max: math.MaxInt32},
	})
	if ke, ok := errors.AsType[*knob.Error](err); ok {
		return c, &ConfigError{Field: ke.Name, Reason: ke.Msg}
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.QueuedMaxRequestBytes == 0 {
		c.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	}
	if c.QueuedMaxRequestBytes < 2*int64(c.MaxRequestBytes) {
		return c, &ConfigError{Field: "QueuedMaxRequestBytes",
			Reason: fmt.Sprintf("%d is below twice MaxRequestBytes (%d)", c.QueuedMaxRequestBytes, c.MaxRequestBytes)}
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if err := c.withAuthDefaults(); err != nil {
		return c, err
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
