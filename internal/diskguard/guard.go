// Package diskguard keeps a node's data disk from filling up. A Guard
// watches the free space of the filesystem that holds the data directory
// and refuses growth (Admit) while less than a reserve is free, so that
// the stores never meet ENOSPC and what the node writes to restart, and
// to free space (DeleteRecords, DeleteTopics, retention), always fits.
// Refusals end by themselves once space is back: Admit looks again
// whenever it refuses.
//
// A caller's duties, in order:
//
//  1. New with the data directory and the thresholds (it looks once, so
//     a directory that cannot be looked at fails at once).
//  2. Run in a goroutine that the caller owns, until ctx ends: it looks
//     every Interval and reports changes to OnChange.
//  3. Admit(n) before each write of about n bytes that grows the data;
//     State for metrics and health.
package diskguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minikafka/minikafka-go/logging"
)

// ErrBelowReserve is wrapped by Admit's refusals: the disk's free space
// is below the reserve. It wraps KAFKA_STORAGE_ERROR, which Kafka clients
// retry.
var ErrBelowReserve = fmt.Errorf("diskguard: free disk space below the reserve: %w", kerr.KafkaStorageError)

// Usage is what a filesystem holds, in bytes.
type Usage struct {
	Total int64 // the filesystem's size
	Free  int64 // what an unprivileged writer may still use
}

// StatFunc reports the usage of the filesystem that holds dir.
type StatFunc func(dir string) (Usage, error)

// Config configures a Guard.
type Config struct {
	// Dir is the data directory. Required.
	Dir string
	// MinFreeBytes is the reserve (storage_min_free_bytes): below it,
	// growth is refused. 0 means MinFreePercent of the disk, at most
	// DefaultMaxReserve.
	MinFreeBytes int64
	// MinFreePercent is the reserve in percent of the disk when
	// MinFreeBytes is 0.
	MinFreePercent float64
	// Floor is the least reserve, whatever the two above say: what the
	// node must be able to write to start and to free space.
	Floor int64
	// AlertFreeBytes and AlertFreePercent are the free space below which
	// the disk is low (an alert, nothing refused): the larger of the two,
	// and at least the reserve.
	AlertFreeBytes   int64
	AlertFreePercent float64
	// Interval is how often Run looks. 0 means one second.
	Interval time.Duration
	// Stat reads the filesystem; nil means Statfs.
	Stat StatFunc
	// OnChange, if set, is called by Run when Refusing or Low changes.
	OnChange func(State)
	Logger   *slog.Logger
}

// DefaultMaxReserve bounds a reserve taken in percent of the disk: 5 GiB,
// Redpanda's default storage_min_free_bytes.
const DefaultMaxReserve = 5 << 30

// State is what a Guard knows of the disk.
type State struct {
	Usage
	Reserve  int64 // growth is refused below this much free space
	AlertAt  int64 // the disk is low below this much free space
	Refusing bool  // Free is below Reserve: growth is refused
	Low      bool  // Free is below AlertAt
	Err      error // the last look's failure, if it failed
	At       time.Time
}

// Guard refuses growth while the disk's free space is below the reserve.
type Guard struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex // guards st and pending
	st State
	// pending is what Admit let through since the last look, times
	// amplification: the free space the next look will likely miss.
	pending int64
}

const (
	// amplification is what an admitted byte may cost on disk before the
	// next look: the partition log and the Raft log each hold it.
	amplification = 2
	// restatRefusing is how stale a refusal may be: a refused Admit looks
	// again after it, so that writes resume as soon as space is back.
	restatRefusing = 50 * time.Millisecond
)

// New returns a Guard of cfg.Dir's filesystem, after a first look.
func New(cfg Config) (*Guard, error) {
	if cfg.Dir == "" {
		return nil, errors.New("diskguard: no directory")
	}
	if cfg.Stat == nil {
		cfg.Stat = Statfs
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	logger := cfg.Logger
	if logger == nil {
		logger = logging.Discard()
	}
	g := &Guard{cfg: cfg, log: logger.With("logger", "diskguard")}
	g.mu.Lock()
	err := g.lookLocked()
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Reserve is the reserve of cfg for a disk of total bytes.
func Reserve(cfg Config, total int64) int64 {
	r := cfg.MinFreeBytes
	if r <= 0 {
		r = min(int64(cfg.MinFreePercent/100*float64(total)), DefaultMaxReserve)
	}
	return max(r, cfg.Floor)
}

// alertAt is where the disk counts as low, for a reserve.
func alertAt(cfg Config, total, reserve int64) int64 {
	return max(cfg.AlertFreeBytes, int64(cfg.AlertFreePercent/100*float64(total)), reserve)
}

// lookLocked reads the filesystem into st; the caller holds mu.
func (g *Guard) lookLocked() error {
	u, err := g.cfg.Stat(g.cfg.Dir)
	now := time.Now()
	if err != nil {
		g.st.Err, g.st.At = err, now
		return fmt.Errorf("diskguard: %s: %w", g.cfg.Dir, err)
	}
	reserve := Reserve(g.cfg, u.Total)
	alert := alertAt(g.cfg, u.Total, reserve)
	g.st = State{Usage: u, Reserve: reserve, AlertAt: alert, Refusing: u.Free < reserve, Low: u.Free < alert, At: now}
	g.pending = 0
	return nil
}

// Admit reports whether n more bytes of data may be written: nil, or an
// error wrapping ErrBelowReserve. A refusal looks at the disk again
// first, at most every 50 ms; an admission counts n against the free
// space until the next look.
func (g *Guard) Admit(n int) error {
	need := int64(n) * amplification
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.st.Free-g.pending-need < g.st.Reserve && time.Since(g.st.At) >= restatRefusing {
		_ = g.lookLocked() // a failed look keeps the last usage
	}
	if free := g.st.Free - g.pending; free-need < g.st.Reserve {
		g.st.Refusing = true // until a look finds the space
		return fmt.Errorf("%w: %d bytes free of %d, the reserve is %d (storage_min_free_bytes)",
			ErrBelowReserve, max(free, 0), g.st.Total, g.st.Reserve)
	}
	g.pending += need
	return nil
}

// Refusing reports whether growth is refused as of the last look.
func (g *Guard) Refusing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st.Refusing
}

// State is the disk as of the last look.
func (g *Guard) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.st
}

// Run looks at the disk every Interval until ctx ends, logs when growth
// starts and stops being refused and calls OnChange on each change.
func (g *Guard) Run(ctx context.Context) {
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	last := g.State()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		err := g.lookLocked()
		st := g.st
		g.mu.Unlock()
		if err != nil {
			g.log.Warn("cannot read the data disk's free space", "err", err)
			continue
		}
		if st.Refusing == last.Refusing && st.Low == last.Low {
			continue
		}
		switch {
		case st.Refusing && !last.Refusing:
			g.log.Warn("data disk below its reserve: produce and new partitions are refused until space is freed",
				"free", st.Free, "reserve", st.Reserve, "total", st.Total)
		case !st.Refusing && last.Refusing:
			g.log.Info("data disk above its reserve again: produce resumes", "free", st.Free, "reserve", st.Reserve)
		case st.Low && !last.Low:
			g.log.Warn("data disk space low", "free", st.Free, "alert_below", st.AlertAt, "total", st.Total)
		}
		last = st
		if g.cfg.OnChange != nil {
			g.cfg.OnChange(st)
		}
	}
}
