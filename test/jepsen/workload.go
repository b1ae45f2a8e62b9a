package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Config configures a Workload.
type Config struct {
	Brokers    []string
	Topic      string // created beforehand, with Partitions partitions
	Partitions int32
	// Workers is how many client processes run at once (default 8).
	Workers int
	// OpTimeout bounds one operation; past it the outcome is unknown
	// (default 5 s).
	OpTimeout time.Duration
	// TxnTimeout is the transactions' timeout: how long a transaction a
	// crashed process left open blocks read_committed readers (default 10 s).
	TxnTimeout time.Duration
	Seed       uint64
	// ClientOpts are added to every client's options.
	ClientOpts []kgo.Opt
}

func (c *Config) defaults() error {
	if len(c.Brokers) == 0 || c.Topic == "" || c.Partitions <= 0 {
		return errors.New("jepsen: Config needs Brokers, Topic and Partitions")
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 5 * time.Second
	}
	if c.TxnTimeout <= 0 {
		c.TxnTimeout = 10 * time.Second
	}
	return nil
}

// Consumer groups of the workload.
const (
	subscribeGroup = "jepsen-subscribe"
	ctpGroup       = "jepsen-ctp"
)

// role is how a worker reads: its polls' consumer, and whether its
// transactions are consume-transform-produce.
type role uint8

const (
	assignReader    role = iota // polls with an assign consumer
	subscribeReader             // polls with a group consumer
	ctpReader                   // no polls of its own: its transactions poll (GroupTransactSession)
)

// Workload is Config.Workers client processes recording into a Recorder.
type Workload struct {
	cfg    Config
	rec    *Recorder
	cancel context.CancelFunc
	wg     sync.WaitGroup // the workers
}

// StartWorkload starts the workers; Stop stops them.
func StartWorkload(cfg Config, rec *Recorder) (*Workload, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Workload{cfg: cfg, rec: rec, cancel: cancel}
	roles := []role{assignReader, subscribeReader, ctpReader, assignReader}
	for i := range cfg.Workers {
		wk := &worker{
			id: i, cfg: &w.cfg, rec: rec,
			role:          roles[i%len(roles)],
			readCommitted: i%3 != 2,
			rng:           rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
			next:          map[int32]int64{},
		}
		wk.proc = rec.NewProcess()
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer wk.closeClients()
			wk.run(ctx)
		}()
	}
	return w, nil
}

// Stop stops every worker (an operation in progress ends as unknown) and
// closes their clients.
func (w *Workload) Stop() {
	w.cancel()
	w.wg.Wait()
}

// partitionName is how the history names a partition.
func (c *Config) partitionName(p int32) string { return fmt.Sprintf("%s-%d", c.Topic, p) }
