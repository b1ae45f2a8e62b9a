// Command loadcheck checks a running local cluster against the request
// abuses of issue 27, briefly:
//
//  1. To every broker, a Fetch v4 that names one partition (one the broker
//     leads) 70,000 times at its log end with MinBytes 1: each broker must
//     answer after MaxWait and go on serving.
//
//  2. -conns connections, spread over the brokers, each sending Produce
//     frames of -frame-bytes (a batch with a bad CRC, so that the nodes read
//     and decode the whole frame and answer an error without writing) one
//     after another for -duration. Meanwhile another client produces one
//     record at a time, and each node's memory is sampled: VmRSS and VmHWM
//     from /proc/PID/status, and from /metrics the resident memory and the
//     bytes queued in queued_max_request_bytes. The produce latency and the
//     memory are reported for -duration before the flood and during it.
//
//     make cluster && go run ./internal/loadcheck -conns 200 -duration 10s; make cluster-stop
//
// The defaults match `make cluster`. The machine may be shared: keep runs
// short.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

type options struct {
	brokers, pidFiles, admins []string
	topic                     string
	conns, frameBytes         int
	duration, timeout         time.Duration
	skipFetch, skipFlood      bool
}

func main() {
	var o options
	brokers := flag.String("brokers", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094", "Kafka addresses of the nodes, in node order")
	pids := flag.String("pids", "data/node1.pid,data/node2.pid,data/node3.pid", "pid files of the node processes, in node order (unreadable: no /proc sampling)")
	admins := flag.String("admin", "127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646", "admin_addr of the nodes, in node order (for /metrics)")
	flag.StringVar(&o.topic, "topic", "loadcheck", "topic to create and produce to")
	flag.IntVar(&o.conns, "conns", 100, "flooding connections")
	flag.IntVar(&o.frameBytes, "frame-bytes", 1<<20, "size of each flood frame (at most the nodes' max_request_bytes, 104857600 by default)")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long to measure before the flood, and how long to flood")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.BoolVar(&o.skipFetch, "skip-fetch", false, "skip the 70,000-partition Fetch")
	flag.BoolVar(&o.skipFlood, "skip-flood", false, "skip the flood")
	flag.Parse()
	o.brokers = strings.Split(*brokers, ",")
	o.pidFiles = strings.Split(*pids, ",")
	o.admins = strings.Split(*admins, ",")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadcheck:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.conns < 1 || o.frameBytes < 1024 {
		return fmt.Errorf("need -conns >= 1 and -frame-bytes >= 1024")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	leaders, err := setUp(ctx, o)
	if err != nil {
		return err
	}
	if !o.skipFetch {
		if err := fetchEveryBroker(ctx, o, leaders); err != nil {
			return err
		}
	}
	if o.skipFlood {
		return nil
	}
	return flood(ctx, o)
}
