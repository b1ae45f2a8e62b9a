package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// flood measures produce latency and node memory for -duration, then
// again while -conns connections send maximal frames.
func flood(ctx context.Context, o options) error {
	frame := floodFrame(o.topic, o.frameBytes)
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...), kgo.DefaultProduceTopic(o.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	s := newSampler(o)
	fmt.Printf("flood: %d connections over %d brokers, frames of %d bytes, %v per phase\n",
		o.conns, len(o.brokers), len(frame)-4, o.duration)
	before, err := measure(ctx, o.duration, cl, s)
	if err != nil {
		return err
	}
	fctx, stop := context.WithCancel(ctx)
	var st floodStats
	var wg sync.WaitGroup
	for i := range o.conns {
		addr := o.brokers[i%len(o.brokers)]
		wg.Go(func() { st.run(fctx, addr, frame) })
	}
	during, err := measure(ctx, o.duration, cl, s)
	stop()
	wg.Wait()
	if err != nil {
		return err
	}
	fmt.Println(before.line("before"))
	fmt.Println(during.line("during"))
	fmt.Printf("flood frames answered: %d (%.0f MiB/s); connections failed: %d\n",
		st.answered.Load(), float64(st.answered.Load())*float64(len(frame))/(1<<20)/o.duration.Seconds(), st.failed.Load())
	return nil
}

// floodFrame is a Produce of about size bytes (with its size prefix)
// whose records are zeros: the node reads and decodes it whole, then
// answers an error for the batch without writing anything.
func floodFrame(topic string, size int) []byte {
	build := func(records int) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = make([]byte, records)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("loadcheck-flood")).AppendRequest(nil, req, 1)
	}
	over := len(build(size)) - size
	return build(size - over)
}

// floodStats counts the flood's answers and failed connections.
type floodStats struct{ answered, failed atomic.Int64 }

// run sends frame and reads the answer, again and again, until ctx is
// done, redialling a connection that fails.
func (st *floodStats) run(ctx context.Context, addr string, frame []byte) {
	for ctx.Err() == nil {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			stop := context.AfterFunc(ctx, func() { nc.Close() })
			for err == nil {
				if _, err = nc.Write(frame); err == nil {
					if _, err = readFrame(nc); err == nil {
						st.answered.Add(1)
					}
				}
			}
			stop()
			nc.Close()
		}
		if ctx.Err() == nil {
			st.failed.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// phase is what measure saw.
type phase struct {
	lat   []time.Duration // produce latencies, sorted
	fails int
	nodes []nodeMax
}

// measure produces one record at a time for d and samples the nodes.
func measure(ctx context.Context, d time.Duration, cl *kgo.Client, s *sampler) (phase, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan []nodeMax)
	go func() { done <- s.run(ctx) }()
	var ph phase
	for ctx.Err() == nil {
		start := time.Now()
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("latency probe")}).FirstErr()
		switch {
		case err == nil:
			ph.lat = append(ph.lat, time.Since(start))
		case ctx.Err() == nil:
			ph.fails++
		}
	}
	ph.nodes = <-done
	slices.Sort(ph.lat)
	return ph, nil
}

func (ph phase) line(name string) string {
	q := func(f float64) time.Duration {
		if len(ph.lat) == 0 {
			return 0
		}
		return ph.lat[min(int(f*float64(len(ph.lat))), len(ph.lat)-1)].Round(10 * time.Microsecond)
	}
	out := fmt.Sprintf("%-7s produce: %d ok, %d failed, p50 %v p99 %v max %v", name, len(ph.lat), ph.fails, q(0.5), q(0.99), q(1))
	for i, n := range ph.nodes {
		out += fmt.Sprintf("\n        node %d: %s", i+1, n)
	}
	return out
}
