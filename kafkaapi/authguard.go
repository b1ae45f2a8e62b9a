package kafkaapi

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/internal/knob"
	"github.com/minikafka/minikafka-go/internal/scram"
)

// Defaults of the SASL guards in Config.
const (
	// DefaultFailedAuthenticationDelay is Kafka's
	// connection.failed.authentication.delay.ms.
	DefaultFailedAuthenticationDelay = 100 * time.Millisecond
	// DefaultMaxFailedAuthenticationsPerIP failures per
	// DefaultFailedAuthenticationsWindow cost an IP at most 20 key
	// derivations (PLAIN) a minute, and leave a client that mistyped room
	// to retry.
	DefaultMaxFailedAuthenticationsPerIP = 20
	DefaultFailedAuthenticationsWindow   = time.Minute
)

// maxTrackedAddrs bounds the client addresses whose failures are counted
// one by one; past it, new addresses share one allowance.
const maxTrackedAddrs = 10_000

// withAuthDefaults validates and fills the SASL guards of c: zero takes the
// default, a negative delay or limit turns it off.
func (c *Config) withAuthDefaults() error {
	if c.FailedAuthenticationDelay == 0 {
		c.FailedAuthenticationDelay = DefaultFailedAuthenticationDelay
	}
	if c.MaxFailedAuthenticationsPerIP == 0 {
		c.MaxFailedAuthenticationsPerIP = DefaultMaxFailedAuthenticationsPerIP
	}
	err := knob.Check([]knob.Duration{
		{Name: "FailedAuthenticationsWindow", V: &c.FailedAuthenticationsWindow, Def: DefaultFailedAuthenticationsWindow, Min: time.Millisecond},
	}, nil)
	if ke, ok := errors.AsType[*knob.Error](err); ok {
		return &ConfigError{Field: ke.Name, Reason: ke.Msg}
	}
	return nil
}

// authGuard is what a server's SASL connections share: the checker of
// PLAIN passwords, the per-address limit of failures, the delay of a
// failure's answer, and counts.
type authGuard struct {
	delay   time.Duration   // before a failure's answer; <= 0: none
	maxHold time.Duration   // bounds the wait of a refusal's answer
	limiter *failureLimiter // nil: no limit
	plain   *scram.PlainVerifier

	succeeded, failed, refused atomic.Uint64
}

func newAuthGuard(cfg Config) *authGuard {
	g := &authGuard{delay: cfg.FailedAuthenticationDelay, maxHold: cfg.AuthenticationTimeout / 2,
		plain: scram.NewPlainVerifier()}
	if cfg.MaxFailedAuthenticationsPerIP > 0 {
		g.limiter = newFailureLimiter(cfg.MaxFailedAuthenticationsPerIP, cfg.FailedAuthenticationsWindow, time.Now)
	}
	return g
}

// delayed answers resp after the failure delay, or after hold when
// longer (up to maxHold). It runs on the connection's writer, so a failure
// holds no goroutine of its own; the reader has stopped reading, as the
// connection closes after the answer.
func (g *authGuard) delayed(resp kmsg.Response, hold time.Duration) responder {
	d := max(g.delay, min(hold, g.maxHold))
	if d <= 0 {
		return answered(resp)
	}
	return func(ctx context.Context) (kmsg.Response, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return resp, nil
		case <-ctx.Done(): // the server is closing or the timeout passed
			return nil, ctx.Err()
		}
	}
}

// AuthStats are a Server's SASL counts.
type AuthStats struct {
	// Succeeded and Failed count authentications; Refused counts the
	// attempts turned away at once for passing
	// MaxFailedAuthenticationsPerIP (also counted in Failed).
	Succeeded, Failed, Refused uint64
	// Derivations counts the key derivations (PBKDF2) PLAIN did.
	Derivations uint64
}

// AuthStats reports the SASL counts.
func (s *Server) AuthStats() AuthStats {
	g := s.logins
	return AuthStats{Succeeded: g.succeeded.Load(), Failed: g.failed.Load(), Refused: g.refused.Load(),
		Derivations: g.plain.Derivations()}
}

// failureLimiter bounds the failed authentications of each client
// address (an IPv4 address or an IPv6 /64): a token bucket that holds up
// to max tokens and gains max per window. An attempt takes a token before
// any work; a success gives it back, so only failures use the allowance,
// and an address without tokens is refused at once.
type failureLimiter struct {
	max    float64
	perSec float64
	now    func() time.Time

	mu       sync.Mutex
	buckets  map[string]*bucket // guarded by mu; at most maxTrackedAddrs
	overflow bucket             // guarded by mu: shared by addresses past maxTrackedAddrs
	swept    time.Time          // guarded by mu: when full buckets were last dropped
}

type bucket struct {
	tokens float64
	at     time.Time // of the last refill
}

// ticket is the bucket an attempt took its token from.
type ticket struct {
	key      string
	overflow bool
}

func newFailureLimiter(max int, window time.Duration, now func() time.Time) *failureLimiter {
	return &failureLimiter{max: float64(max), perSec: float64(max) / window.Seconds(), now: now,
		buckets: make(map[string]*bucket)}
}

func (l *failureLimiter) refill(b *bucket, now time.Time) {
	b.tokens = math.Min(l.max, b.tokens+now.Sub(b.at).Seconds()*l.perSec)
	b.at = now
}

// take takes a token for an attempt from host; false: none is left, and
// wait is how long until there is one.
func (l *failureLimiter) take(host string) (tk ticket, ok bool, wait time.Duration) {
	key := addrKey(host)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, tk := l.bucket(key, now)
	l.refill(b, now)
	if b.tokens < 1 {
		return tk, false, time.Duration((1 - b.tokens) / l.perSec * float64(time.Second))
	}
	b.tokens--
	return tk, true, 0
}

// bucket finds or makes key's bucket; with the table full it first drops
// the buckets that are full again (at most once a second), then falls
// back to the shared one.
func (l *failureLimiter) bucket(key string, now time.Time) (*bucket, ticket) {
	if b, ok := l.buckets[key]; ok {
		return b, ticket{key: key}
	}
	if len(l.buckets) >= maxTrackedAddrs && now.Sub(l.swept) >= time.Second {
		l.swept = now
		for k, b := range l.buckets {
			if l.refill(b, now); b.tokens >= l.max {
				delete(l.buckets, k)
			}
		}
	}
	if len(l.buckets) >= maxTrackedAddrs {
		return &l.overflow, ticket{overflow: true}
	}
	b := &bucket{tokens: l.max, at: now}
	l.buckets[key] = b
	return b, ticket{key: key}
}

// giveBack returns the token of an attempt that succeeded.
func (l *failureLimiter) giveBack(tk ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := &l.overflow
	if !tk.overflow {
		if b = l.buckets[tk.key]; b == nil {
			return // dropped while full: a new one starts full
		}
	}
	b.tokens = math.Min(l.max, b.tokens+1)
}

// addrKey is what failures are counted by: the IPv4 address, or the /64
// of an IPv6 one (a single host often holds a whole /64).
func addrKey(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}
