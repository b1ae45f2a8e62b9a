// Command scalecheck measures a running local cluster under many
// partitions: it creates a topic with N partitions and replication 3,
// reports how long until every partition has a leader, then the idle CPU
// and open file descriptors of each node process.
//
//	go run ./internal/scalecheck -brokers 127.0.0.1:9092 -partitions 1000 -pids data/node1.pid,...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094", "Kafka addresses")
	topic := flag.String("topic", "scale", "topic to create")
	parts := flag.Int("partitions", 1000, "partitions")
	rf := flag.Int("rf", 3, "replication factor")
	pidFiles := flag.String("pids", "data/node1.pid,data/node2.pid,data/node3.pid", "pid files of the node processes")
	idle := flag.Duration("idle", 20*time.Second, "how long to sample idle CPU")
	flag.Parse()
	if err := run(*brokers, *topic, int32(*parts), int16(*rf), strings.Split(*pidFiles, ","), *idle); err != nil {
		fmt.Fprintln(os.Stderr, "scalecheck:", err)
		os.Exit(1)
	}
}

func run(brokers, topic string, parts int32, rf int16, pidFiles []string, idle time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var pids []int
	for _, f := range pidFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		pids = append(pids, pid)
	}

	start := time.Now()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, rf
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 60000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		return fmt.Errorf("create topic: error code %d", code)
	}
	created := time.Since(start)
	var led int
	for {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		led = 0
		perNode := map[int32]int{}
		for _, t := range mresp.Topics {
			for _, p := range t.Partitions {
				if p.Leader >= 0 && p.ErrorCode == 0 {
					led++
					perNode[p.Leader]++
				}
			}
		}
		if led == int(parts) {
			fmt.Printf("partitions: %d x RF%d; CreateTopics answered after %v; all have leaders after %v; leaders per node %v\n",
				parts, rf, created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), perNode)
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("only %d of %d partitions have leaders", led, parts)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // let leader rebalancing settle
	before := make([]float64, len(pids))
	for i, pid := range pids {
		before[i] = cpuSeconds(pid)
	}
	time.Sleep(idle)
	total := 0.0
	for i, pid := range pids {
		used := (cpuSeconds(pid) - before[i]) / idle.Seconds()
		total += used
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		fmt.Printf("node pid %d: idle CPU %.3f cores, %d open file descriptors\n", pid, used, len(fds))
	}
	fmt.Printf("idle CPU total: %.3f cores over %v\n", total, idle)
	return nil
}

// cpuSeconds is user+system CPU time of a process from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // USER_HZ
}
