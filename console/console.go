package console

import (
	"context"
	"crypto/tls"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/minikafka/minikafka-go/metrics"
)

//go:embed assets
var assets embed.FS

// Kafka is how the console reaches its own node's Kafka listener.
type Kafka struct {
	Addr string      // host:port to dial
	TLS  *tls.Config // nil: plaintext
	// SASL is set when the listener authenticates its clients: every
	// visitor then logs in, with one of Mechanisms (PLAIN,
	// SCRAM-SHA-256, SCRAM-SHA-512), and sees what that principal may.
	SASL       bool
	Mechanisms []string
}

// Config is a console's configuration; zero durations and counts take
// the defaults named on each field.
type Config struct {
	// Source is the node's own state: log sizes, disk and traffic.
	Source metrics.Source
	// GroupOffsets lists the committed offsets of every group this node
	// holds a copy of, for the lag history; nil: Source's Groups (the
	// groups this node coordinates).
	GroupOffsets func() []metrics.GroupOffset
	Kafka        Kafka
	Logger       *slog.Logger // nil: discard

	SampleEvery    time.Duration // 5 s: how often the history is sampled
	HistorySamples int           // 180 (15 minutes at 5 s)
	MaxSessions    int           // 32 logged-in visitors; the least recently used goes first
	SessionIdle    time.Duration // 30 minutes without a request ends a session
	RequestTimeout time.Duration // 10 s for each visitor request
	MaxRecords     int           // 200 records per browse
	MaxBrowseBytes int           // 1 MiB of record bytes per browse
	MaxBrowses     int           // 4 browses at once
	// AdminKey, when set, turns on the write actions (create and delete
	// topics, reset a group's offsets) for requests that present it;
	// empty: the console is read-only.
	AdminKey string
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	def(&c.SampleEvery, 5*time.Second)
	def(&c.SessionIdle, 30*time.Minute)
	def(&c.RequestTimeout, 10*time.Second)
	defInt(&c.HistorySamples, 180)
	defInt(&c.MaxSessions, 32)
	defInt(&c.MaxRecords, 200)
	defInt(&c.MaxBrowseBytes, 1<<20)
	defInt(&c.MaxBrowses, 4)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Console is a node's web console. Create it with New, run its sampler
// with Run and serve Handler; when Run returns every session's client is
// closed and the API answers 503.
type Console struct {
	cfg      Config
	hist     *history
	sessions *sessions
	// anon is the identity every visitor shares when the listener does
	// not authenticate (Kafka.SASL unset); nil otherwise.
	anon    *access
	browses chan struct{} // a slot per browse running
	logins  chan struct{} // one login checked at a time
	closed  atomic.Bool   // Run returned
	mux     *http.ServeMux
}

// New makes a console; it contacts the listener only when a visitor asks.
func New(cfg Config) (*Console, error) {
	cfg.defaults()
	c := &Console{cfg: cfg, hist: newHistory(cfg.HistorySamples),
		sessions: newSessions(cfg.MaxSessions, cfg.SessionIdle),
		browses:  make(chan struct{}, cfg.MaxBrowses), logins: make(chan struct{}, 1)}
	if !cfg.Kafka.SASL {
		a, err := newAccess(cfg.Kafka, credentials{})
		if err != nil {
			return nil, err
		}
		c.anon = a
	}
	c.mux = c.routes()
	return c, nil
}

// Run samples the node's traffic and groups' lag into the history, and
// ends idle sessions, until ctx ends; then it closes every Kafka client.
func (c *Console) Run(ctx context.Context) {
	defer func() {
		c.closed.Store(true)
		c.sessions.closeAll()
		if c.anon != nil {
			c.anon.close()
		}
	}()
	t := time.NewTicker(c.cfg.SampleEvery)
	defer t.Stop()
	for {
		c.sampleOnce(time.Now())
		c.sessions.expire(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Handler serves the console under /console/: the pages and their
// assets, and the JSON API under /console/api/.
func (c *Console) Handler() http.Handler { return c.mux }

func (c *Console) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.StripPrefix("/console/assets/", http.FileServerFS(static))
	mux.Handle("GET /console/assets/", secureHeaders(files))
	mux.Handle("GET /console/{$}", secureHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})))
	mux.Handle("GET /console", http.RedirectHandler("/console/", http.StatusMovedPermanently))
	mux.HandleFunc("GET /console/api/session", c.serveSession)
	mux.HandleFunc("POST /console/api/login", c.serveLogin)
	mux.HandleFunc("POST /console/api/logout", c.serveLogout)
	mux.Handle("GET /console/api/overview", c.api(c.overview))
	mux.Handle("GET /console/api/topics", c.api(c.topics))
	mux.Handle("GET /console/api/topics/{topic}", c.api(c.topic))
	mux.Handle("GET /console/api/records", c.api(c.records))
	mux.Handle("GET /console/api/groups", c.api(c.groups))
	mux.Handle("GET /console/api/groups/{group}", c.api(c.group))
	mux.Handle("GET /console/api/throughput", c.api(c.throughput))
	mux.Handle("GET /console/api/reassignments", c.api(c.reassignments))
	mux.Handle("POST /console/api/unlock", c.write(c.unlock))
	mux.Handle("POST /console/api/topics", c.write(c.createTopic))
	mux.Handle("POST /console/api/topics/{topic}/delete", c.write(c.deleteTopic))
	mux.Handle("POST /console/api/groups/{group}/reset", c.write(c.resetGroup))
	return mux
}

// secureHeaders forbids everything the pages do not need: scripts,
// styles and requests go to this origin only, and no one may frame them.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; "+
			"img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// Errors the API answers with, besides the Kafka errors it passes on.
var (
	ErrNotLoggedIn = errors.New("console: log in first")
	ErrClosed      = errors.New("console: the node is shutting down")
	ErrBadRequest  = errors.New("console: bad request")
	ErrBusy        = errors.New("console: too many requests at once")
)

// apiFunc answers one API request for the visitor's identity.
type apiFunc func(ctx context.Context, a *access, r *http.Request) (any, error)

// api runs fn for the visitor's identity within the request timeout and
// writes its answer as JSON.
func (c *Console) api(fn apiFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.closed.Load() {
			writeError(w, ErrClosed)
			return
		}
		a := c.anon
		if a == nil {
			s := c.sessions.fromRequest(r, time.Now())
			if s == nil {
				writeError(w, ErrNotLoggedIn)
				return
			}
			a = s.acc
		}
		ctx, cancel := context.WithTimeout(r.Context(), c.cfg.RequestTimeout)
		defer cancel()
		v, err := fn(ctx, a, r)
		if err != nil {
			c.cfg.Logger.Debug("console request failed", "path", r.URL.Path, "user", a.user, "err", err)
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers err with its HTTP status and message.
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, statusOf(err), map[string]string{"error": err.Error()})
}
