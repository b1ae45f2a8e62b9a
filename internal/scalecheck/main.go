// Command scalecheck measures a running local cluster under many
// partitions. It creates N partitions with replication factor 3 (as one
// topic, or as several topics one after another), reports how long until
// every partition has a leader and how leaders spread over the nodes, waits
// until each is led by its preferred replica (the nodes' leader
// rebalancing), then samples each node process while idle: CPU, read/write syscalls per
// second, open file descriptors, the load average, and how many partitions
// changed leader epoch meanwhile (an idle cluster should have none).
// Last it prints each node's peak RSS over the whole run (VmHWM, read
// before the node is stopped).
// Optionally it then kills one node with SIGKILL and times, per partition
// that node led, how long until a produce to it is acknowledged again; or
// (-delete) it deletes the topics while producing to a canary topic and
// times the deletion.
//
//	make cluster && go run ./internal/scalecheck -partitions 1000 -kill 2; make cluster-stop
//
// The defaults match `make cluster`: Kafka on 127.0.0.1:9092-9094 and the
// node pids in data/node1..3.pid.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type options struct {
	brokers    []string
	pidFiles   []string
	topic      string
	partitions int
	topics     int
	rf         int
	settle     time.Duration
	idle       time.Duration
	kill       int
	delete     bool
	pause      time.Duration
	timeout    time.Duration
}

func main() {
	var o options
	brokers := flag.String("brokers", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094", "Kafka addresses of the nodes, in node order")
	pids := flag.String("pids", "data/node1.pid,data/node2.pid,data/node3.pid", "pid files of the node processes, in the same order")
	flag.StringVar(&o.topic, "topic", "scale", "topic name (with -topics > 1, the prefix of topic0, topic1, ...)")
	flag.IntVar(&o.partitions, "partitions", 1000, "partitions in all")
	flag.IntVar(&o.topics, "topics", 1, "create the partitions as this many equal topics, one after another, each once the previous one is led")
	flag.IntVar(&o.rf, "rf", 3, "replication factor")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "wait after every partition is led by its preferred replica (at most a minute) before sampling")
	flag.DurationVar(&o.idle, "idle", 20*time.Second, "how long to sample the idle cluster")
	flag.IntVar(&o.kill, "kill", 0, "after sampling, SIGKILL node N (1-based, in -pids order) and time the fail-over of the partitions it led; 0: no")
	flag.BoolVar(&o.delete, "delete", false, "after sampling (and -pause), delete the topics while producing to a small canary topic, and time the deletion; not with -kill")
	flag.DurationVar(&o.pause, "pause", 0, "after sampling (before -kill), SIGSTOP each node in turn for this long, then time until every partition is led again; 0: no")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	o.brokers = strings.Split(*brokers, ",")
	o.pidFiles = strings.Split(*pids, ",")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "scalecheck:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if err := o.validate(); err != nil {
		return err
	}
	pids, err := readPids(o.pidFiles)
	if err != nil {
		return err
	}
	peaks := newPeakRSS(pids)
	defer peaks.print() // also after a failed step: the nodes still run until make cluster-stop
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()

	existing, err := countPartitions(ctx, cl)
	if err != nil {
		return err
	}
	if existing > 0 {
		fmt.Printf("note: the cluster already holds %d partitions; the numbers below include them\n", existing)
	}
	names, err := createAll(ctx, cl, o)
	if err != nil {
		return err
	}
	if err := waitPreferred(ctx, cl, names, time.Minute); err != nil {
		return err
	}
	time.Sleep(o.settle)
	if err := sampleIdle(ctx, cl, o.idle, pids, names); err != nil {
		return err
	}
	if o.pause > 0 {
		if err := pauseEach(ctx, o, pids, names, o.partitions); err != nil {
			return err
		}
	}
	if o.delete {
		return deleteAndTime(ctx, o, cl, pids, names)
	}
	if o.kill == 0 {
		return nil
	}
	return killAndTime(ctx, o, pids, names, peaks)
}

func (o options) validate() error {
	if o.topics < 1 || o.partitions < o.topics {
		return fmt.Errorf("need 1 <= -topics <= -partitions, got %d and %d", o.topics, o.partitions)
	}
	if len(o.pidFiles) != len(o.brokers) {
		return fmt.Errorf("%d pid files for %d brokers", len(o.pidFiles), len(o.brokers))
	}
	if o.delete && o.kill != 0 {
		return fmt.Errorf("-delete and -kill %d: choose one", o.kill)
	}
	if o.kill < 0 || o.kill > len(o.brokers) {
		return fmt.Errorf("-kill %d: there are %d nodes", o.kill, len(o.brokers))
	}
	return nil
}

// createAll creates the -partitions as -topics topics, one after another,
// each once the previous one is led, and reports how long that took and
// how the leaders spread. It returns the topics' names.
func createAll(ctx context.Context, cl *kgo.Client, o options) ([]string, error) {
	names := make([]string, o.topics)
	start := time.Now()
	perNode := map[int32]int{}
	for i := range names {
		names[i] = o.topic
		if o.topics > 1 {
			names[i] = o.topic + strconv.Itoa(i)
		}
		n := o.partitions / o.topics
		if i == o.topics-1 {
			n = o.partitions - n*(o.topics-1)
		}
		t0 := time.Now()
		if err := createTopic(ctx, cl, names[i], n, o.rf); err != nil {
			return nil, err
		}
		created := time.Since(t0)
		if o.topics == 1 {
			fmt.Printf("CreateTopics answered after %v\n", created.Round(time.Millisecond))
		}
		leaders, err := waitLed(ctx, cl, names[i], n)
		if err != nil {
			return nil, err
		}
		for _, l := range leaders {
			perNode[l.leader]++
		}
		if o.topics > 1 {
			fmt.Printf("topic %s: %d partitions created in %v, all led after %v\n", names[i], n,
				created.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
		}
	}
	fmt.Printf("partitions: %d x RF%d in %d topic(s); all have leaders after %v; leaders per node %s\n",
		o.partitions, o.rf, o.topics, time.Since(start).Round(time.Millisecond), formatPerNode(perNode))
	return names, nil
}

// sampleIdle measures every node process over idle: CPU, read and write
// syscalls, open descriptors and the load average; then it counts the
// partitions whose leader or leader epoch changed meanwhile.
func sampleIdle(ctx context.Context, cl *kgo.Client, idle time.Duration, pids []int, names []string) error {
	before, err := allLeaders(ctx, cl, names)
	if err != nil {
		return err
	}
	cpu0 := make([]float64, len(pids))
	io0 := make([][2]int64, len(pids))
	for i, pid := range pids {
		cpu0[i] = cpuSeconds(pid)
		io0[i] = syscalls(pid)
	}
	load0 := loadAvg()
	time.Sleep(idle)
	secs := idle.Seconds()
	var total float64
	var reads, writes int64
	for i, pid := range pids {
		cpu := (cpuSeconds(pid) - cpu0[i]) / secs
		io := syscalls(pid)
		r, w := io[0]-io0[i][0], io[1]-io0[i][1]
		reads += r
		writes += w
		total += cpu
		fmt.Printf("node %d (pid %d): idle CPU %.3f cores, syscalls/s read %.0f write %.0f, %d open file descriptors, RSS %d MiB, peak RSS %d MiB\n",
			i+1, pid, cpu, float64(r)/secs, float64(w)/secs, countFDs(pid), rss(pid, "VmRSS")>>20, rss(pid, "VmHWM")>>20)
	}
	after, err := allLeaders(ctx, cl, names)
	if err != nil {
		return err
	}
	changed := 0
	for k, b := range before {
		if a, ok := after[k]; !ok || a != b {
			changed++
		}
	}
	fmt.Printf("idle CPU total %.3f cores over %v; syscalls/s read %.0f write %.0f; load average %s -> %s\n",
		total, idle, float64(reads)/secs, float64(writes)/secs, load0, loadAvg())
	fmt.Printf("partitions whose leader or leader epoch changed while idle: %d of %d\n", changed, len(before))
	return nil
}

func formatPerNode(m map[int32]int) string {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("node %d: %d", id, m[id])
	}
	return strings.Join(parts, ", ")
}
