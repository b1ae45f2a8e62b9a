package reqfuzz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minikafka/minikafka-go/kafkaapi"
	"github.com/minikafka/minikafka-go/test/e2e"
)

// Target is one node under test.
type Target struct {
	ID   int
	Addr string // its Kafka listener
	// Pid is its process id, or an error once it has exited.
	Pid func() (int, error)
	// LogTail is the end of its log (a crash's stack is there).
	LogTail func(lines int) string
	// Restart starts it again after it exited and waits until it serves.
	Restart func(ctx context.Context) error
	// LogFile is its log, scanned for panics after each round; "" = none.
	LogFile string
	// Kill stops its process at once (a node over the memory bound is
	// killed and restarted when a run goes on after a finding).
	Kill func() error
}

// Config configures a Runner.
type Config struct {
	Seed     uint64
	Targets  []Target
	Conns    int           // connections per round, spread over the targets
	PerConn  int           // requests per connection
	Linger   time.Duration // how long a connection waits for answers after its last write
	RSSBound int64         // most resident memory (VmHWM) a node may reach, in bytes
	OutDir   string        // a failing round's requests are saved here as a case file
	Logf     func(format string, args ...any)
	// CrashEvery kills a node at once and restarts it after every
	// CrashEvery rounds, the nodes in turn (CrashRestart); 0: never.
	CrashEvery int
	// MaxRequestCost is the most a request may cost the targets besides
	// its frame (kafkaapi.MaxRequestCost of their queued_max_request_bytes);
	// 0 is that of the default.
	MaxRequestCost int64
}

// Runner runs rounds of requests against the targets and checks them.
type Runner struct {
	cfg   Config
	apis  []API // what the first target advertises
	ref   *Reference
	Stats *Stats

	round      int           // the last round run
	outcomes   []*outcome    // its connections
	logOffsets map[int]int64 // per node: how much of its log was scanned
}

// NewRunner asks the first target which APIs it serves.
func NewRunner(ctx context.Context, cfg Config, ref *Reference) (*Runner, error) {
	if cfg.MaxRequestCost == 0 {
		cfg.MaxRequestCost = kafkaapi.MaxRequestCost(kafkaapi.DefaultQueuedMaxRequestBytes)
	}
	r := &Runner{cfg: cfg, ref: ref, Stats: NewStats(), round: -1, logOffsets: map[int]int64{}}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "reqfuzz", "1"
	resp, err := e2e.Request(rctx, cfg.Targets[0].Addr, req)
	if err != nil {
		return nil, fmt.Errorf("reqfuzz: ApiVersions: %w", err)
	}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if kmsg.RequestForKey(k.ApiKey) != nil {
			r.apis = append(r.apis, API{Key: k.ApiKey, Min: k.MinVersion, Max: k.MaxVersion})
		}
	}
	if len(r.apis) == 0 {
		return nil, errors.New("reqfuzz: the node advertises no API kmsg knows")
	}
	return r, nil
}

// APIs are the APIs the first target advertised.
func (r *Runner) APIs() []API { return slices.Clone(r.apis) }

// Round runs round n: Conns connections, each to the next target in
// turn, each pipelining PerConn requests made from the seed, n and its
// number. It returns the protocol violations of kinds not seen before.
func (r *Runner) Round(ctx context.Context, n int) []Violation {
	r.round = n
	r.outcomes = make([]*outcome, r.cfg.Conns)
	var wg sync.WaitGroup
	for c := range r.cfg.Conns {
		t := r.cfg.Targets[c%len(r.cfg.Targets)]
		frames := roundFrames(r.cfg.Seed, n, c, r.cfg.PerConn, r.apis)
		markOverCost(frames, r.cfg.MaxRequestCost)
		wg.Go(func() {
			r.outcomes[c] = pipeline(ctx, t.ID, t.Addr, frames, r.apis, r.cfg.Linger, r.Stats)
		})
	}
	wg.Wait()
	r.Stats.round()
	var fresh []Violation
	for _, o := range r.outcomes {
		fresh = append(fresh, r.Stats.outcome(o)...)
	}
	return fresh
}

// markOverCost marks the clean frames that cost a node more than limit
// besides their frame (kafkaapi.RequestCost): it closes their connection.
func markOverCost(frames []*request, limit int64) {
	for _, fr := range frames {
		fr.overCost = fr.clean() && kafkaapi.RequestCost(fr.b[4:]) > limit
	}
}

// Check checks the targets after a round: each one's process runs,
// answers ApiVersions on a new connection and logged no panic, the
// reference topic holds
// what it held, a duplicate of its idempotent batch gets its first
// offset, and no node's peak resident memory passed the bound.
func (r *Runner) Check(ctx context.Context) error {
	for _, t := range r.cfg.Targets {
		if err := apiVersions(ctx, t.Addr); err != nil {
			// A process that just died may not be reaped yet.
			if id := r.exitedWithin(ctx, 2*time.Second); id != 0 {
				return r.notRunning(id)
			}
			return fmt.Errorf("node %d does not answer ApiVersions: %w", t.ID, err)
		}
	}
	if id := r.exitedWithin(ctx, 0); id != 0 {
		return r.notRunning(id)
	}
	if id, lines, err := r.newPanics(); err != nil {
		return err
	} else if id != 0 {
		return &PanicError{Node: id, Lines: lines}
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.ref.CheckData(dctx); err != nil {
		return err
	}
	if err := r.ref.CheckDuplicate(dctx); err != nil {
		return err
	}
	return r.checkMemory()
}

// notRunning is the error of a node whose process exited, with the
// part of its log that says why.
func (r *Runner) notRunning(id int) error {
	t := r.target(id)
	_, err := t.Pid()
	return fmt.Errorf("node %d is not running: %w\n%s", id, err, crashLines(t.LogTail(400)))
}

// checkMemory reads every node's peak resident memory.
func (r *Runner) checkMemory() error {
	for _, t := range r.cfg.Targets {
		pid, err := t.Pid()
		if err != nil {
			return fmt.Errorf("node %d: %w", t.ID, err)
		}
		m, err := e2e.ReadMemory(pid)
		if err != nil {
			return fmt.Errorf("node %d: %w", t.ID, err)
		}
		r.Stats.rss(t.ID, m)
		if m.Peak > r.cfg.RSSBound {
			return &MemoryError{Node: t.ID, Peak: m.Peak, Bound: r.cfg.RSSBound}
		}
	}
	return nil
}

// apiVersions asks addr for ApiVersions v3 on a new connection.
func apiVersions(ctx context.Context, addr string) error {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "reqfuzz", "1"
	resp, err := e2e.Request(rctx, addr, req)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.(*kmsg.ApiVersionsResponse).ErrorCode)
}

// MemoryError is a node whose peak resident memory passed the bound.
type MemoryError struct {
	Node        int
	Peak, Bound int64 // bytes
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("node %d: peak resident memory %d MiB, over the bound of %d MiB", e.Node, e.Peak>>20, e.Bound>>20)
}
