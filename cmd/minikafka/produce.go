package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikafka/minikafka-go/client"
)

// produceLinger is the CLI producer's linger: short, so that an
// interactive line goes out at once, long enough to batch piped input.
const produceLinger = 5 * time.Millisecond

// maxReportedFailures is how many failed records produce names on stderr.
const maxReportedFailures = 5

func (a *app) produceCommand() *cobra.Command {
	var key, acks string
	var partition int32
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Send each line of standard input as a record",
		Long: `produce reads standard input and sends each line (without its line end) as
the value of one record, until end of input (Ctrl-D). It then waits for
every record's result and prints a summary: how many records went to each
partition and at which offsets. It exits with status 1 if any record was
not delivered, naming the first failures on stderr.

With --acks all (the default) the producer is idempotent: a retry never
writes a record twice. --acks 1 behaves as all on MiniKafka (a Raft commit);
--acks 0 does not wait for the broker, so offsets are unknown.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := acksOpts(acks)
			if err != nil {
				return err
			}
			if partition < -1 {
				return usageErrorf("--partition must be a partition number or -1, got %d", partition)
			}
			var k []byte
			if key != "" {
				k = []byte(key)
			}
			return a.produce(cmd.Context(), args[0], k, partition, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&key, "key", "", "key of every record (default: none; keyless records are spread by the sticky partitioner)")
	f.Int32Var(&partition, "partition", -1, "send every record to this partition (-1: the partitioner chooses)")
	f.StringVar(&acks, "acks", "all", "acknowledgement: all (idempotent), 1 or 0")
	return cmd
}

// acksOpts turns --acks into producer options. Only acks=all may be
// idempotent (P8), so the others turn idempotence off.
func acksOpts(acks string) ([]client.Opt, error) {
	switch acks {
	case "all", "-1":
		return []client.Opt{client.RequiredAcks(client.AllAcks), client.Idempotence(true)}, nil
	case "1":
		return []client.Opt{client.RequiredAcks(client.LeaderAck), client.Idempotence(false)}, nil
	case "0":
		return []client.Opt{client.RequiredAcks(client.NoAck), client.Idempotence(false)}, nil
	}
	return nil, usageErrorf("--acks must be all, 1 or 0, got %q", acks)
}

func (a *app) produce(parent context.Context, topic string, key []byte, partition int32, opts []client.Opt) error {
	ctx, cancel := a.start(parent, true, true)
	defer cancel()
	if _, err := a.partitionCount(ctx, topic, partition); err != nil {
		return err
	}

	opts = append(opts, client.BlockOnBufferFull(), client.Linger(produceLinger),
		client.DeliveryTimeout(a.timeout+produceLinger))
	p, err := client.NewProducer(a.clientOpts(opts...)...)
	if err != nil {
		return err
	}
	tmpl := client.Record{Topic: topic, Key: key}
	if partition >= 0 {
		tmpl.ExplicitPartition, tmpl.Partition = true, partition
	}
	sum := &produceSummary{parts: map[int32]*partRange{}}
	a.produceLines(parent, p, tmpl, sum)

	// Deliver what was read. DeliveryTimeout bounds each record; after an
	// interrupt, give up on what is left after --timeout.
	closeCtx, closeCancel := context.Background(), func() {}
	if parent.Err() != nil {
		closeCtx, closeCancel = context.WithTimeout(context.Background(), a.timeout)
	}
	p.Close(closeCtx)
	closeCancel()
	return a.reportProduced(ctx, parent, topic, sum)
}

// produceLines produces each line of standard input as a copy of tmpl with
// the line as its value, until the input ends or parent is done. Results go
// to sum, numbered by line from 1.
func (a *app) produceLines(parent context.Context, p *client.Producer, tmpl client.Record, sum *produceSummary) {
	lines := make(chan []byte)
	go readLines(parent, a.stdin, lines, sum)
	for n := 1; ; n++ {
		var line []byte
		select {
		case l, ok := <-lines:
			if !ok {
				return
			}
			line = l
		case <-parent.Done():
			// Interrupted, maybe while the reader waits for input.
			return
		}
		rec := tmpl
		rec.Value = line
		if err := p.Produce(parent, &rec, func(r *client.Record, err error) { sum.add(n, r, err) }); err != nil {
			sum.add(n, &rec, err)
			if parent.Err() != nil {
				return
			}
		}
	}
}

// reportProduced prints the summary and the first failures, and returns
// the command's error: a read error, the interrupt, or the failed count.
func (a *app) reportProduced(ctx, parent context.Context, topic string, sum *produceSummary) error {
	sum.write(a.stdout, topic)
	sum.mu.Lock()
	defer sum.mu.Unlock()
	for _, f := range sum.failures {
		fmt.Fprintf(a.stderr, "minikafka: line %d: %v\n", f.line, a.explain(ctx, f.err))
	}
	if sum.failed > len(sum.failures) {
		fmt.Fprintf(a.stderr, "minikafka: ... and %d more failed records\n", sum.failed-len(sum.failures))
	}
	switch {
	case sum.readErr != nil:
		return fmt.Errorf("reading standard input: %w", sum.readErr)
	case parent.Err() != nil:
		return errInterrupted
	case sum.failed > 0:
		return fmt.Errorf("%d of %d records were not delivered", sum.failed, sum.sent)
	}
	return nil
}

// readLines sends each line of r, without its line end, until r ends or
// ctx ends, then closes out. A read error is recorded in sum. After an
// interrupt it may stay blocked in a Read of a terminal until the process
// exits; nothing waits for it.
func readLines(ctx context.Context, r io.Reader, out chan<- []byte, sum *produceSummary) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			select {
			case out <- line:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				sum.mu.Lock()
				sum.readErr = err
				sum.mu.Unlock()
			}
			return
		}
	}
}

// produceSummary collects the records' results.
type produceSummary struct {
	mu       sync.Mutex // guards the fields below: promises run on the producer's goroutine
	sent     int
	failed   int
	failures []lineFailure // the first maxReportedFailures
	parts    map[int32]*partRange
	readErr  error
}

type lineFailure struct {
	line int
	err  error
}

// partRange is what went to one partition.
type partRange struct {
	count         int
	first, last   int64
	offsetUnknown bool
}

func (s *produceSummary) add(line int, r *client.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if err != nil {
		s.failed++
		if len(s.failures) < maxReportedFailures {
			s.failures = append(s.failures, lineFailure{line: line, err: err})
		}
		return
	}
	pr := s.parts[r.Partition]
	if pr == nil {
		pr = &partRange{first: r.Offset, last: r.Offset}
		s.parts[r.Partition] = pr
	}
	pr.count++
	if r.Offset < 0 {
		pr.offsetUnknown = true
	}
	pr.first, pr.last = min(pr.first, r.Offset), max(pr.last, r.Offset)
}

// write prints the summary: a total line, then one line per partition.
func (s *produceSummary) write(w io.Writer, topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(w, "%d %s produced to %q, %d failed\n", s.sent-s.failed, plural(s.sent-s.failed, "record"), topic, s.failed)
	ps := make([]int32, 0, len(s.parts))
	for p := range s.parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		pr := s.parts[p]
		switch {
		case pr.offsetUnknown:
			fmt.Fprintf(w, "  partition %d: %d %s, offsets unknown (acks=0)\n", p, pr.count, plural(pr.count, "record"))
		case pr.first == pr.last:
			fmt.Fprintf(w, "  partition %d: %d %s, offset %d\n", p, pr.count, plural(pr.count, "record"), pr.first)
		default:
			fmt.Fprintf(w, "  partition %d: %d %s, offsets %d-%d\n", p, pr.count, plural(pr.count, "record"), pr.first, pr.last)
		}
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
