// Command scalecheck measures a running local cluster under many
// partitions. It creates N partitions with replication factor 3 (as one
// topic, or as several topics one after another), reports how long until
// every partition has a leader and how leaders spread over the nodes, then
// samples each node process while idle: CPU, read/write syscalls per
// second, open file descriptors, the load average, and how many partitions
// changed leader epoch meanwhile (an idle cluster should have none).
// Optionally it then kills one node with SIGKILL and times, per partition
// that node led, how long until a produce to it is acknowledged again.
//
//	make cluster && go run ./internal/scalecheck -partitions 1000 -kill 2; make cluster-stop
//
// The defaults match `make cluster`: Kafka on 127.0.0.1:9092-9094 and the
// node pids in data/node1..3.pid.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "wait after every partition is led before sampling (leader rebalancing)")
	flag.DurationVar(&o.idle, "idle", 20*time.Second, "how long to sample the idle cluster")
	flag.IntVar(&o.kill, "kill", 0, "after sampling, SIGKILL node N (1-based, in -pids order) and time the fail-over of the partitions it led; 0: no")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	o.brokers = strings.Split(*brokers, ",")
	o.pidFiles = strings.Split(*pids, ",")
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "scalecheck:", err)
		os.Exit(1)
	}
}

// tp names a partition.
type tp struct {
	topic string
	part  int32
}

// leaderInfo is a partition's leader and leader epoch as Metadata reports them.
type leaderInfo struct {
	leader, epoch int32
}

func run(o options) error {
	if o.topics < 1 || o.partitions < o.topics {
		return fmt.Errorf("need 1 <= -topics <= -partitions, got %d and %d", o.topics, o.partitions)
	}
	if len(o.pidFiles) != len(o.brokers) {
		return fmt.Errorf("%d pid files for %d brokers", len(o.pidFiles), len(o.brokers))
	}
	if o.kill < 0 || o.kill > len(o.brokers) {
		return fmt.Errorf("-kill %d: there are %d nodes", o.kill, len(o.brokers))
	}
	pids := make([]int, len(o.pidFiles))
	for i, f := range o.pidFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if pids[i], err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := syscall.Kill(pids[i], 0); err != nil {
			return fmt.Errorf("node pid %d (%s) is not running: %w", pids[i], f, err)
		}
	}
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

	// Create and wait for leaders.
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
			return err
		}
		created := time.Since(t0)
		if o.topics == 1 {
			fmt.Printf("CreateTopics answered after %v\n", created.Round(time.Millisecond))
		}
		leaders, err := waitLed(ctx, cl, names[i], n)
		if err != nil {
			return err
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

	// Idle sample.
	time.Sleep(o.settle)
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
	time.Sleep(o.idle)
	secs := o.idle.Seconds()
	var total float64
	var reads, writes int64
	for i, pid := range pids {
		cpu := (cpuSeconds(pid) - cpu0[i]) / secs
		io := syscalls(pid)
		r, w := io[0]-io0[i][0], io[1]-io0[i][1]
		reads += r
		writes += w
		total += cpu
		fmt.Printf("node %d (pid %d): idle CPU %.3f cores, syscalls/s read %.0f write %.0f, %d open file descriptors\n",
			i+1, pid, cpu, float64(r)/secs, float64(w)/secs, countFDs(pid))
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
		total, o.idle, float64(reads)/secs, float64(writes)/secs, load0, loadAvg())
	fmt.Printf("partitions whose leader or leader epoch changed while idle: %d of %d\n", changed, len(before))

	if o.kill == 0 {
		return nil
	}
	return killAndTime(ctx, o, pids, names)
}

// killAndTime kills node o.kill and times, for each partition it led, the
// first acknowledged produce after the kill.
func killAndTime(ctx context.Context, o options, pids []int, names []string) error {
	victim := int32(o.kill)
	leaders, err := allLeaders(ctx, nil, names, o.brokers...)
	if err != nil {
		return err
	}
	var led []tp
	for k, l := range leaders {
		if l.leader == victim {
			led = append(led, k)
		}
	}
	slices.SortFunc(led, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.part - b.part)
	})
	var seeds []string
	for i, b := range o.brokers {
		if i+1 != o.kill {
			seeds = append(seeds, b)
		}
	}
	pr, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		return err
	}
	defer pr.Close()
	fmt.Printf("killing node %d (pid %d) with SIGKILL; it leads %d partitions\n", o.kill, pids[o.kill-1], len(led))
	if err := syscall.Kill(pids[o.kill-1], syscall.SIGKILL); err != nil {
		return err
	}
	t0 := time.Now()
	var (
		mu    sync.Mutex
		times []time.Duration
		fails []error
		wg    sync.WaitGroup
	)
	// Node side: until a surviving node's Metadata names a new leader
	// (another node, a higher epoch) for every partition the victim led.
	nodeSide := make(chan time.Duration, 1)
	go func() {
		md, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			nodeSide <- -1
			return
		}
		defer md.Close()
		for ctx.Err() == nil {
			now, err := allLeaders(ctx, md, names)
			if err == nil {
				moved := 0
				for _, k := range led {
					if l, ok := now[k]; ok && l.leader != victim && l.epoch > leaders[k].epoch {
						moved++
					}
				}
				if moved == len(led) {
					nodeSide <- time.Since(t0)
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		nodeSide <- -1
	}()
	for _, p := range led {
		wg.Add(1)
		pr.Produce(ctx, &kgo.Record{Topic: p.topic, Partition: p.part, Value: []byte("scalecheck")}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fails = append(fails, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, err))
				return
			}
			times = append(times, time.Since(t0))
		})
	}
	wg.Wait()
	slices.Sort(times)
	if len(times) > 0 {
		fmt.Printf("failover: %d/%d partitions accepted a produce; first %v median %v p90 %v max %v\n",
			len(times), len(led), times[0].Round(time.Millisecond), times[len(times)/2].Round(time.Millisecond),
			times[len(times)*9/10].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
	if d := <-nodeSide; d >= 0 {
		fmt.Printf("node side: every one of them led by another node in a survivor's Metadata after %v\n", d.Round(time.Millisecond))
	}
	if len(fails) > 0 {
		for _, err := range fails[:min(len(fails), 5)] {
			fmt.Println("produce failed:", err)
		}
		return fmt.Errorf("%d of %d partitions of the killed node did not accept a produce", len(fails), len(led))
	}
	return nil
}

// createTopic creates one topic, retrying while the cluster is not ready
// (no controller yet). An existing topic is an error: its partitions would
// already be led.
func createTopic(ctx context.Context, cl *kgo.Client, name string, parts, rf int) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(parts), int16(rf)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 60000
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
			if err == nil {
				return nil
			}
			if errors.Is(err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("topic %s already exists; use another -topic or start from an empty cluster (make cluster-stop clean cluster)", name)
			}
			if !kerr.IsRetriable(err) {
				return fmt.Errorf("create topic %s: %w", name, err)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("create topic %s: %w (last error %v)", name, ctx.Err(), err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitLed polls Metadata until all n partitions of topic have a leader.
func waitLed(ctx context.Context, cl *kgo.Client, topic string, n int) (map[tp]leaderInfo, error) {
	start, report := time.Now(), time.Now().Add(10*time.Second)
	for {
		l, err := allLeaders(ctx, cl, []string{topic})
		if err == nil && len(l) == n {
			return l, nil
		}
		if time.Now().After(report) {
			fmt.Printf("  %v: %d of %d partitions of %s led\n", time.Since(start).Round(time.Second), len(l), n, topic)
			report = report.Add(10 * time.Second)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("topic %s: only %d of %d partitions have leaders: %w", topic, len(l), n, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// allLeaders returns the led partitions of topics. With a nil cl it asks
// a new client seeded with brokers (used when the default client may be
// connected to a node about to die).
func allLeaders(ctx context.Context, cl *kgo.Client, topics []string, brokers ...string) (map[tp]leaderInfo, error) {
	if cl == nil {
		c, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		cl = c
	}
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, mt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[tp]leaderInfo{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader >= 0 && p.ErrorCode == 0 {
				out[tp{*t.Topic, p.Partition}] = leaderInfo{p.Leader, p.LeaderEpoch}
			}
		}
	}
	return out, nil
}

// countPartitions counts every partition of every topic in the cluster.
func countPartitions(ctx context.Context, cl *kgo.Client) (int, error) {
	req := kmsg.NewPtrMetadataRequest() // nil Topics: all topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	return n, nil
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

// cpuSeconds is the user+system CPU time of a process, from /proc/PID/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// syscalls returns the read and write syscall counts of a process, from
// /proc/PID/io.
func syscalls(pid int) [2]int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return [2]int64{}
	}
	var out [2]int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "syscr":
			out[0] = n
		case "syscw":
			out[1] = n
		}
	}
	return out
}

func countFDs(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds)
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
