package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

// WorkloadConfig describes a workload. Zero fields take the defaults
// named.
type WorkloadConfig struct {
	Brokers []string // seed brokers; required
	Topic   string   // required
	// Producers is the number of producers, each its own idempotent
	// client.Producer (so its own producer id). Default 2.
	Producers int
	// Keys is the number of keys ("k00", "k01", ...), shared by every
	// producer; each producer numbers its records per key from 0.
	// Default 8.
	Keys int
	// Rate is the records per second of each producer. Default 200.
	Rate int
	// Pad is the filler bytes added to each value. Default 32.
	Pad int
	// MaxPending bounds each producer's records awaiting a result; a
	// producer waits for room (for instance while the cluster is down).
	// Default 2000.
	MaxPending int
	// ClientOpts are extra producer options, applied after the workload's
	// own (see StartWorkload).
	ClientOpts []client.Opt
}

func (c *WorkloadConfig) defaults() error {
	if len(c.Brokers) == 0 || c.Topic == "" {
		return errors.New("e2e: WorkloadConfig needs Brokers and Topic")
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Producers, 2)
	def(&c.Keys, 8)
	def(&c.Rate, 200)
	def(&c.Pad, 32)
	def(&c.MaxPending, 2000)
	return nil
}

// Workload runs producers that write records named by ID (producer, key,
// per-key sequence) and records every attempt and outcome in a History.
type Workload struct {
	cfg       WorkloadConfig
	h         *History
	producers []*client.Producer
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the generator goroutines

	mu   sync.Mutex     // guards errs and held
	errs map[string]int // errors seen, by class
	held bool           // Hold: produce nothing new until Release
}

// ProducerOpts are the options the workload gives its producers:
// idempotence and acks=all (the client's defaults, stated), a 4s request
// timeout so that a request to a paused node is given up quickly, and a
// short retry backoff so that failover shows promptly.
func ProducerOpts(brokers []string) []client.Opt {
	return []client.Opt{
		client.Brokers(brokers...),
		client.Idempotence(true),
		client.RequiredAcks(client.AllAcks),
		client.RequestTimeout(4 * time.Second),
		client.DialTimeout(2 * time.Second),
		client.RetryBackoff(25*time.Millisecond, 250*time.Millisecond),
		client.DeliveryTimeout(2 * time.Minute),
	}
}

// StartWorkload starts the producers. Stop them with Stop.
func StartWorkload(cfg WorkloadConfig, h *History) (*Workload, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	w := &Workload{cfg: cfg, h: h, errs: map[string]int{}}
	for range cfg.Producers {
		p, err := client.NewProducer(append(ProducerOpts(cfg.Brokers), cfg.ClientOpts...)...)
		if err != nil {
			for _, q := range w.producers {
				q.Close(context.Background())
			}
			return nil, err
		}
		w.producers = append(w.producers, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	for i, p := range w.producers {
		w.wg.Add(1)
		go w.generate(ctx, i, p)
	}
	return w, nil
}

// generate is producer i's loop: one record per tick, keys in turn.
func (w *Workload) generate(ctx context.Context, producer int, p *client.Producer) {
	defer w.wg.Done()
	keys := make([]string, w.cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	seqs := make([]int64, len(keys))
	slots := make(chan struct{}, w.cfg.MaxPending)
	tick := time.NewTicker(time.Second / time.Duration(w.cfg.Rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if w.isHeld() {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		k := n % len(keys)
		id := ID{Producer: producer, Key: keys[k], Seq: seqs[k]}
		seqs[k]++
		r := &client.Record{Topic: w.cfg.Topic, Key: []byte(id.Key), Value: id.Value(w.cfg.Pad)}
		i := w.h.Begin(id, w.cfg.Topic)
		err := p.Produce(ctx, r, func(r *client.Record, err error) {
			now := time.Now()
			if err == nil {
				w.h.Ack(i, r.Partition, r.Offset, now)
			} else {
				w.h.Fail(i, Unknown, err, now)
				w.noteErr(err)
			}
			<-slots
		})
		if err != nil {
			w.h.Fail(i, NotSent, err, time.Now())
			w.noteErr(err)
			<-slots
			continue
		}
		w.h.Place(i, r.Partition)
	}
}

func (w *Workload) isHeld() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held
}

// Hold makes the producers stop producing new records until Release;
// records already produced go on to their results.
func (w *Workload) Hold() {
	w.mu.Lock()
	w.held = true
	w.mu.Unlock()
}

// Release undoes Hold.
func (w *Workload) Release() {
	w.mu.Lock()
	w.held = false
	w.mu.Unlock()
}

func (w *Workload) noteErr(err error) {
	class := "other"
	switch {
	case errors.Is(err, context.Canceled):
		class = "canceled"
	case errors.Is(err, client.ErrDeliveryTimeout):
		class = "delivery-timeout"
	case errors.Is(err, client.ErrClosed):
		class = "closed"
	case errors.Is(err, client.ErrProducerFenced):
		class = "fenced"
	case errors.Is(err, client.ErrBufferFull):
		class = "buffer-full"
	default:
		var ke *client.KafkaError
		if errors.As(err, &ke) {
			class = fmt.Sprintf("kafka-%d", ke.Code)
		}
	}
	w.mu.Lock()
	w.errs[class]++
	w.mu.Unlock()
}

// Errors returns the errors producers gave, counted by class
// ("delivery-timeout", "closed", "kafka-<code>", ...), as sorted
// "class=count" strings.
func (w *Workload) Errors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.errs))
	for c, n := range w.errs {
		out = append(out, fmt.Sprintf("%s=%d", c, n))
	}
	slices.Sort(out)
	return out
}

// WaitAcked waits until n records produced at or after since have been
// acknowledged on the partition (-1: any partition).
func (w *Workload) WaitAcked(ctx context.Context, partition int32, since time.Time, n int) error {
	return poll(ctx, fmt.Sprintf("%d acks on %s[%d]", n, w.cfg.Topic, partition), func() (bool, error) {
		return w.h.AckedSince(w.cfg.Topic, partition, since) >= n, nil
	})
}

// Stop stops producing, waits (bounded by ctx) until every record has its
// result, and closes the producers. Records still without one when ctx
// ends fail with client.ErrClosed, an Unknown outcome.
func (w *Workload) Stop(ctx context.Context) error {
	w.cancel()
	w.wg.Wait()
	errs := make([]error, len(w.producers))
	var wg sync.WaitGroup
	for i, p := range w.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Flush(ctx); err != nil {
				errs[i] = fmt.Errorf("producer %d: flush: %w", i, err)
			}
			if err := p.Close(ctx); err != nil && errs[i] == nil {
				errs[i] = fmt.Errorf("producer %d: close: %w", i, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
