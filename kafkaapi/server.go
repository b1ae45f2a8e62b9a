package kafkaapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server answers Kafka requests on the listeners given to Serve.
type Server struct {
	backend Backend
	cfg     Config
	log     *slog.Logger
	logins  *authGuard // shared by SASL connections

	mu      sync.Mutex
	closed  bool                          // guarded by mu: set by Close, never reset
	nextID  uint64                        // guarded by mu: key for serving
	serving map[uint64]context.CancelFunc // guarded by mu: stops each running Serve
	conns   int                           // guarded by mu: connections being served
	perIP   map[string]int                // guarded by mu: connections being served, by client IP
	// accepted and refused count connections admitted and turned away
	// by the connection limits; guarded by mu.
	accepted, refused uint64

	// panics counts requests whose handling panicked (guard).
	panics atomic.Uint64
	// queued is the budget of bytes of requests read and not yet answered.
	queued *budget

	// wg counts running Serve calls. Add happens only under mu while
	// !closed, so it never races with Close's Wait.
	wg sync.WaitGroup
	// shareReleases counts the releases of records of share sessions
	// whose connection closed (sharefetch.go), added to like wg.
	shareReleases sync.WaitGroup
}

// New returns a Server that answers requests from backend. It starts
// nothing; call Serve.
func New(backend Backend, cfg Config) (*Server, error) {
	if backend == nil {
		return nil, &ConfigError{Field: "backend", Reason: "nil"}
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Server{
		backend: backend,
		cfg:     cfg,
		log:     cfg.Logger,
		logins:  newAuthGuard(cfg),
		serving: make(map[uint64]context.CancelFunc),
		perIP:   make(map[string]int),
		queued:  newBudget(cfg.QueuedMaxRequestBytes),
	}, nil
}

// Serve accepts connections on l and serves each until ctx is done or Close
// is called; then it closes l and every connection it accepted, waits for
// their goroutines, and returns nil. Serve takes ownership of l. It returns
// ErrServerClosed at once if the server is closed, and an accept error that
// is not retriable (such as l being closed by someone else) as it is.
// Serve may be called for several listeners at once.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	return s.serve(ctx, l, Listener{})
}

func (s *Server) serve(ctx context.Context, l net.Listener, lc Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	id := s.nextID
	s.nextID++
	s.serving[id] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.serving, id)
		s.mu.Unlock()
		s.wg.Done()
	}()

	// Closing the listener is what makes a blocked Accept return once ctx
	// is done.
	listenerClosed := make(chan struct{})
	context.AfterFunc(ctx, func() {
		defer close(listenerClosed)
		l.Close()
	})

	var conns sync.WaitGroup // connections accepted by this call
	err := s.acceptLoop(ctx, l, lc, &conns)
	cancel() // stops every connection of this call
	<-listenerClosed
	conns.Wait()
	return err
}

// acceptLoop accepts until ctx is done or Accept fails for good.
func (s *Server) acceptLoop(ctx context.Context, l net.Listener, lc Listener, conns *sync.WaitGroup) error {
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !retriableAcceptError(err) {
				return err
			}
			// Out of file descriptors and the like: back off as
			// net/http does, instead of spinning.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("kafkaapi: accept failed, retrying", "err", err, "delay", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done(): // Close or caller: stop waiting
				t.Stop()
				return nil
			}
			continue
		}
		delay = 0
		host := remoteHost(nc)
		if !s.admit(host) {
			s.log.Debug("kafkaapi: connection refused: too many connections", "remote", nc.RemoteAddr().String())
			nc.Close()
			continue
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer s.release(host)
			s.serveConn(ctx, nc, lc)
		}()
	}
}

// admit counts a new connection from host, or reports false when it
// would pass MaxConnections or MaxConnectionsPerIP.
func (s *Server) admit(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns >= s.cfg.MaxConnections || s.perIP[host] >= s.cfg.MaxConnectionsPerIP {
		s.refused++
		return false
	}
	s.accepted++
	s.conns++
	s.perIP[host]++
	return true
}

// ConnStats are a Server's connection counts.
type ConnStats struct {
	Open int // being served now
	// Accepted and Refused count the connections admitted and those
	// closed at once for passing MaxConnections or MaxConnectionsPerIP.
	Accepted, Refused uint64
}

// Connections reports the connection counts.
func (s *Server) Connections() ConnStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ConnStats{Open: s.conns, Accepted: s.accepted, Refused: s.refused}
}

// release uncounts a connection admit counted.
func (s *Server) release(host string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns--
	if s.perIP[host]--; s.perIP[host] == 0 {
		delete(s.perIP, host)
	}
}

func retriableAcceptError(err error) bool {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS)
}

// Close stops every Serve call: it closes their listeners and connections
// and returns once all the server's goroutines have exited. Requests being
// answered are abandoned (their contexts are cancelled). Close is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, stop := range s.serving {
		stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.shareReleases.Wait()
	return nil
}
