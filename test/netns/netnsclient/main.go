// Command netnsclient is the client side of test/netns: the test runs it
// in the clients' network namespace (ip netns exec), where only the
// nodes' advertised addresses reach the cluster. Each subcommand prints
// one line per fact on stdout for the test to parse:
//
//	netnsclient ready   -brokers B -admin A -topic T -partitions N   "ok" once every /readyz is 200 and T has a leader per partition
//	netnsclient leaders -brokers B -topic T                          "leader P NODE" per partition, "broker NODE HOST:PORT" per broker
//	netnsclient produce -brokers B -topic T -prefix X -count N       "ack VALUE P OFFSET" or "fail VALUE ERROR" per record (acks=all, idempotent)
//	netnsclient consume -brokers B -topic T -group G -want FILE      "got VALUE P OFFSET" per record, as a group member, until every value of FILE came; then commits
//	netnsclient read    -brokers B -topic T -want FILE               "got VALUE P OFFSET" per record from the start of every partition, until every value of FILE came and nothing more for a second
//	netnsclient down    -admin A -broker N -for D                      "ok" once every node of A has seen broker N down for D (minikafka_broker_down_since_timestamp_seconds)
//
// Errors go to stderr with exit status 1.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/minikafka/minikafka-go/client"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "netnsclient:", err)
		os.Exit(1)
	}
}

// flags are every subcommand's flags; each uses some.
type flags struct {
	brokers, admin, topic, prefix, group, want string
	partitions, count, broker                  int
	timeout, downFor                           time.Duration
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: netnsclient ready|leaders|produce|consume|read|down -flags")
	}
	var f flags
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.StringVar(&f.brokers, "brokers", "", "bootstrap brokers, comma-separated")
	fs.StringVar(&f.admin, "admin", "", "nodes' admin addresses (host:port), comma-separated")
	fs.StringVar(&f.topic, "topic", "", "topic")
	fs.StringVar(&f.prefix, "prefix", "", "value prefix of produced records")
	fs.StringVar(&f.group, "group", "", "consumer group")
	fs.StringVar(&f.want, "want", "", "file of values to wait for, one a line")
	fs.IntVar(&f.partitions, "partitions", 3, "partitions of the topic (ready creates it)")
	fs.IntVar(&f.count, "count", 0, "records to produce")
	fs.IntVar(&f.broker, "broker", 0, "broker id (down)")
	fs.DurationVar(&f.downFor, "for", 10*time.Second, "how long the broker must have been down (down)")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "bound on the whole subcommand")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	brokers := client.Brokers(strings.Split(f.brokers, ",")...)
	switch args[0] {
	case "ready":
		return ready(ctx, f, brokers, out)
	case "leaders":
		return leaders(ctx, f, brokers, out)
	case "produce":
		return produce(ctx, f, brokers, out)
	case "consume":
		return consume(ctx, f, brokers, out)
	case "read":
		return read(ctx, f, brokers, out)
	case "down":
		return down(ctx, f, out)
	}
	return fmt.Errorf("unknown subcommand %q", args[0])
}

// ready waits for every node's /readyz, creates the topic (replication
// factor 3) unless it exists and waits until each partition has a leader.
func ready(ctx context.Context, f flags, brokers client.Opt, out io.Writer) error {
	for _, a := range strings.Split(f.admin, ",") {
		if err := poll(ctx, "readyz "+a, func() error { return readyz(ctx, a) }); err != nil {
			return err
		}
	}
	adm, err := client.NewAdmin(brokers)
	if err != nil {
		return err
	}
	defer adm.Close()
	err = adm.CreateTopic(ctx, f.topic, int32(f.partitions), 3, nil)
	if err != nil && !errors.Is(err, client.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", f.topic, err)
	}
	err = poll(ctx, "a leader for every partition", func() error {
		ts, err := adm.DescribeTopics(ctx, f.topic)
		if err != nil {
			return err
		}
		if ts[0].Err != nil || len(ts[0].Partitions) != f.partitions {
			return fmt.Errorf("topic %s: %d partitions, %v", f.topic, len(ts[0].Partitions), ts[0].Err)
		}
		for _, p := range ts[0].Partitions {
			if p.Leader < 0 || len(p.ISR) < 3 {
				return fmt.Errorf("partition %d: leader %d, in sync %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return nil
	})
	if err == nil {
		fmt.Fprintln(out, "ok")
	}
	return err
}

// down waits until every node at the admin addresses has reported the
// broker down for at least f.downFor.
func down(ctx context.Context, f flags, out io.Writer) error {
	prefix := fmt.Sprintf("minikafka_broker_down_since_timestamp_seconds{broker=\"%d\"} ", f.broker)
	for _, a := range strings.Split(f.admin, ",") {
		err := poll(ctx, a+" to see broker "+strconv.Itoa(f.broker)+" down", func() error {
			body, err := get(ctx, "http://"+a+"/metrics")
			if err != nil {
				return err
			}
			for _, l := range strings.Split(body, "\n") {
				if v, ok := strings.CutPrefix(l, prefix); ok {
					since, err := strconv.ParseFloat(v, 64)
					if err != nil {
						return err
					}
					if d := time.Since(time.Unix(int64(since), 0)); d < f.downFor {
						return fmt.Errorf("down for %v", d)
					}
					return nil
				}
			}
			return errors.New("not down")
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "ok")
	return nil
}

func readyz(ctx context.Context, addr string) error {
	_, err := get(ctx, "http://"+addr+"/readyz")
	return err
}

// get is the body of a 200 answer to a GET of url.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// poll calls fn every 200 ms until it succeeds or ctx ends, then returns
// its last error.
func poll(ctx context.Context, what string, fn func() error) error {
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func leaders(ctx context.Context, f flags, brokers client.Opt, out io.Writer) error {
	adm, err := client.NewAdmin(brokers)
	if err != nil {
		return err
	}
	defer adm.Close()
	c, err := adm.DescribeCluster(ctx)
	if err != nil {
		return err
	}
	for _, b := range c.Brokers {
		fmt.Fprintf(out, "broker %d %s:%d\n", b.NodeID, b.Host, b.Port)
	}
	for _, t := range c.Topics {
		if t.Name != f.topic {
			continue
		}
		for _, p := range t.Partitions {
			fmt.Fprintf(out, "leader %d %d\n", p.Partition, p.Leader)
		}
	}
	return nil
}

// produce sends count records valued prefix-i with an idempotent acks=all
// producer and reports each one's outcome.
func produce(ctx context.Context, f flags, brokers client.Opt, out io.Writer) error {
	p, err := client.NewProducer(brokers, client.RequiredAcks(client.AllAcks), client.Idempotence(true),
		client.Linger(5*time.Millisecond))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	for i := range f.count {
		r := &client.Record{Topic: f.topic, Value: fmt.Appendf(nil, "%s-%d", f.prefix, i)}
		err := p.Produce(ctx, r, func(r *client.Record, err error) { // on the producer's goroutine, one at a time
			if err != nil {
				fmt.Fprintf(w, "fail %s %v\n", r.Value, err)
				return
			}
			fmt.Fprintf(w, "ack %s %d %d\n", r.Value, r.Partition, r.Offset)
		})
		if err != nil {
			return fmt.Errorf("produce record %d: %w", i, err)
		}
	}
	if err := p.Close(ctx); err != nil {
		return fmt.Errorf("close producer: %w", err)
	}
	return w.Flush()
}

// wanted reads the values the subcommand waits for.
func wanted(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, v := range strings.Fields(string(b)) {
		want[v] = true
	}
	return want, nil
}

// consume reads as a member of the group until every wanted value came,
// commits what it polled and leaves the group.
func consume(ctx context.Context, f flags, brokers client.Opt, out io.Writer) error {
	want, err := wanted(f.want)
	if err != nil {
		return err
	}
	g, err := client.NewGroupConsumer(brokers, client.ConsumerGroup(f.group), client.ConsumeTopics(f.topic),
		client.AutoCommit(false), client.ConsumeResetOffset(client.AtStart()))
	if err != nil {
		return err
	}
	defer g.Close(context.Background())
	w := bufio.NewWriter(out)
	defer w.Flush()
	for len(want) > 0 {
		recs, err := g.Poll(ctx)
		for _, r := range recs {
			fmt.Fprintf(w, "got %s %d %d\n", r.Value, r.Partition, r.Offset)
			delete(want, string(r.Value))
		}
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%d values missing: %w", len(want), ctx.Err())
		case err != nil:
			fmt.Fprintln(os.Stderr, "netnsclient: poll (trying again):", err)
		}
	}
	if err := g.CommitPolled(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return g.Close(ctx)
}

// read reads every partition from its start, without a group, until
// every wanted value came and a second passed without another record.
func read(ctx context.Context, f flags, brokers client.Opt, out io.Writer) error {
	want, err := wanted(f.want)
	if err != nil {
		return err
	}
	c, err := client.NewConsumer(brokers, client.ConsumeTopics(f.topic), client.ConsumeResetOffset(client.AtStart()))
	if err != nil {
		return err
	}
	defer c.Close()
	w := bufio.NewWriter(out)
	defer w.Flush()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		recs, err := c.Poll(pctx)
		cancel()
		for _, r := range recs {
			fmt.Fprintf(w, "got %s %d %d\n", r.Value, r.Partition, r.Offset)
			delete(want, string(r.Value))
		}
		switch {
		case err == nil:
		case ctx.Err() != nil && len(want) > 0:
			return fmt.Errorf("%d values missing: %w", len(want), ctx.Err())
		case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) && len(want) == 0:
			return nil // a second without records after the last wanted value
		case !errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintln(os.Stderr, "netnsclient: poll (trying again):", err)
		}
	}
}
