package interop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The group suite (issue 12, point 5): each client implementation
// produces to a 4-partition topic, consumes it with a group of two members
// that split the partitions, commits and closes; then a new member of the
// same group must resume exactly after the committed offsets. The clients
// share one 3-broker target (see targetEnv) and run in parallel, each with
// its own topic and group.
func TestGroupClients(t *testing.T) {
	tg := startTarget(t)
	for _, cl := range []groupClient{kgoClient(), saramaClient(), kafkaGoClient(), confluentClient(), kafkajsClient()} {
		t.Run(cl.name, func(t *testing.T) {
			t.Parallel()
			tg.requireGroupAPIs(t)
			groupScenario(t, tg, cl)
		})
	}
}

const (
	groupPartitions = 4
	firstPerPart    = 10 // records per partition before the first members commit
	secondPerPart   = 5  // records per partition produced after they closed
	// groupWait bounds each wait for the group: a join and rebalance, or
	// the delivery of a batch of records.
	groupWait = 30 * time.Second
)

// record is one Kafka record of the suite's topic.
type record struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`
}

func (r record) String() string { return fmt.Sprintf("%d@%d=%s", r.Partition, r.Offset, r.Value) }

// A groupClient is one client implementation under test.
type groupClient struct {
	name string
	// produce writes recs, each to its Partition, with acks=all, and
	// returns them with the offsets the client reports.
	produce func(t *testing.T, seeds []string, topic string, recs []record) []record
	// join starts a new member of group consuming topic, from the earliest
	// offset where the group has committed none. The member is closed at
	// the end of the test at the latest.
	join func(t *testing.T, seeds []string, group, topic string) *member
}

// A member is one consumer in a group. Its client fills log as it goes.
type member struct {
	name string
	log  memberLog
	// commit commits, synchronously, the offset after the last record it
	// delivered on each of its partitions.
	commit func(ctx context.Context) error
	// close leaves the group and releases the client; it returns only
	// after everything the client started has stopped.
	close func() error
}

// memberLog is what a member has seen, written by the client's
// goroutines and read by the scenario.
type memberLog struct {
	// mu guards every field: the client's goroutines write them while the
	// scenario polls.
	mu       sync.Mutex
	assigned []int32  // the current assignment, sorted
	records  []record // every record delivered, in delivery order
	failure  error    // the first error the client reported
	notes    []string // anything else the client said, shown on failure
}

func (l *memberLog) assign(ps []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.assigned = slices.Sorted(slices.Values(ps))
}

// add and revoke track incremental (cooperative) assignment changes.
func (l *memberLog) add(ps []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		if !slices.Contains(l.assigned, p) {
			l.assigned = append(l.assigned, p)
		}
	}
	slices.Sort(l.assigned)
}

func (l *memberLog) revoke(ps []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.assigned = slices.DeleteFunc(l.assigned, func(p int32) bool { return slices.Contains(ps, p) })
}

func (l *memberLog) deliver(r record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
}

func (l *memberLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failure == nil {
		l.failure = err
	}
}

func (l *memberLog) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.notes) < 50 {
		l.notes = append(l.notes, fmt.Sprintf(format, args...))
	}
}

func (l *memberLog) snapshot() (assigned []int32, records []record, failure error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.assigned), slices.Clone(l.records), l.failure
}

// errFatal marks a condition that waiting cannot mend.
var errFatal = errors.New("fatal")

// await polls check until it returns nil. It fails the test with check's
// last error after d, or at once if that error wraps errFatal, or if a
// member reported a failure; the members' notes go with the failure.
func await(t *testing.T, what string, d time.Duration, check func() error, members ...*member) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		for _, m := range members {
			if _, _, failure := m.log.snapshot(); failure != nil {
				err = fmt.Errorf("%w: member %s failed: %w", errFatal, m.name, failure)
			}
		}
		if err == nil {
			return
		}
		if errors.Is(err, errFatal) || time.Now().After(deadline) {
			for _, m := range members {
				m.log.mu.Lock()
				if len(m.log.notes) > 0 {
					t.Logf("member %s said:\n  %s", m.name, strings.Join(m.log.notes, "\n  "))
				}
				m.log.mu.Unlock()
			}
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// batchOf returns perPart records for each partition, the i-th of a
// partition at offset base+i, with values unique to the phase.
func batchOf(phase string, base int64, perPart int) []record {
	var out []record
	for i := range perPart {
		for p := range int32(groupPartitions) {
			out = append(out, record{Partition: p, Offset: base + int64(i), Value: fmt.Sprintf("%s-%d-%d", phase, p, i)})
		}
	}
	return out
}

func groupScenario(t *testing.T, tg *target, cl groupClient) {
	topic, group := "groups-"+cl.name, "group-"+cl.name
	tg.createTopic(t, topic, groupPartitions)

	// Two members join and split the partitions before anything is
	// produced, so that both consume (a member that joined alone would
	// otherwise take everything before the other arrives).
	a := cl.join(t, tg.seeds, group, topic)
	a.name = "a"
	b := cl.join(t, tg.seeds, group, topic)
	b.name = "b"
	var splitA, splitB []int32
	await(t, "two members split the partitions", groupWait, func() error {
		splitA, _, _ = a.log.snapshot()
		splitB, _, _ = b.log.snapshot()
		all := slices.Sorted(slices.Values(append(slices.Clone(splitA), splitB...)))
		if len(splitA) == 0 || len(splitB) == 0 || !slices.Equal(all, []int32{0, 1, 2, 3}) {
			return fmt.Errorf("a holds %v, b holds %v", splitA, splitB)
		}
		return nil
	}, a, b)
	t.Logf("a holds %v, b holds %v", splitA, splitB)

	first := batchOf("first", 0, firstPerPart)
	checkProduced(t, first, cl.produce(t, tg.seeds, topic, first))
	await(t, "the members consume the first records", groupWait, func() error {
		return consumedExactly(first, map[*member][]int32{a: splitA, b: splitB})
	}, a, b)

	for _, m := range []*member{a, b} {
		if err := m.commit(testContext(t)); err != nil {
			t.Fatalf("member %s commits: %v", m.name, err)
		}
	}
	checkCommitted(t, tg, group, topic, firstPerPart)
	closeAll(t, a, b)
	// Nothing arrived after the commit, and each member stayed on its own
	// partitions until it closed.
	if err := consumedExactly(first, map[*member][]int32{a: splitA, b: splitB}); err != nil {
		t.Fatalf("after closing: %v", err)
	}
	awaitEmpty(t, tg, group)

	// A new member resumes after the committed offsets: a record of the
	// first batch would be a re-delivery, a missing one of the second a
	// skip.
	second := batchOf("second", firstPerPart, secondPerPart)
	checkProduced(t, second, cl.produce(t, tg.seeds, topic, second))
	c := cl.join(t, tg.seeds, group, topic)
	c.name = "c"
	all := []int32{0, 1, 2, 3}
	await(t, "a new member resumes after the commits", groupWait, func() error {
		return consumedExactly(second, map[*member][]int32{c: all})
	}, c)
	if err := c.commit(testContext(t)); err != nil {
		t.Fatalf("member c commits: %v", err)
	}
	checkCommitted(t, tg, group, topic, firstPerPart+secondPerPart)
	closeAll(t, c)
	if err := consumedExactly(second, map[*member][]int32{c: all}); err != nil {
		t.Fatalf("after closing: %v", err)
	}
	awaitEmpty(t, tg, group)
}

// checkProduced checks the offsets the client reported for each record:
// the topic's partitions start empty and each send is in order.
func checkProduced(t *testing.T, want, got []record) {
	t.Helper()
	if !slices.Equal(sortRecords(got), sortRecords(want)) {
		t.Fatalf("the client reports producing\n  %v\nwant\n  %v", sortRecords(got), sortRecords(want))
	}
}

func sortRecords(rs []record) []record {
	return slices.SortedFunc(slices.Values(rs), func(a, b record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
}

// consumedExactly returns nil once the members, together, have delivered
// exactly want, each member only from its partitions. A record outside
// want, a duplicate, or a record from another member's partition is
// fatal; records still missing are not, yet.
func consumedExactly(want []record, members map[*member][]int32) error {
	wanted := map[record]bool{}
	for _, r := range want {
		wanted[r] = true
	}
	seen := map[record]string{}
	for _, m := range slices.SortedFunc(maps.Keys(members), func(a, b *member) int { return strings.Compare(a.name, b.name) }) {
		_, recs, _ := m.log.snapshot()
		for _, r := range recs {
			switch {
			case !wanted[r]:
				return fmt.Errorf("%w: member %s delivered %v, which it should not have (it delivered %v)", errFatal, m.name, r, recs)
			case seen[r] != "":
				return fmt.Errorf("%w: %v delivered twice (by %s and %s)", errFatal, r, seen[r], m.name)
			case !slices.Contains(members[m], r.Partition):
				return fmt.Errorf("%w: member %s delivered %v from a partition it did not hold (it held %v)", errFatal, m.name, r, members[m])
			}
			seen[r] = m.name
		}
	}
	var missing []record
	for _, r := range want {
		if seen[r] == "" {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d of %d records not delivered: %v", len(missing), len(want), missing)
	}
	return nil
}

// checkCommitted checks the group's committed offset on every partition
// of topic, as the target answers OffsetFetch.
func checkCommitted(t *testing.T, tg *target, group, topic string, want int64) {
	t.Helper()
	offsets, err := tg.admin.FetchOffsets(testContext(t), group)
	if err != nil {
		t.Fatalf("fetch the offsets of %s: %v", group, err)
	}
	for p := range int32(groupPartitions) {
		switch o, ok := offsets.Lookup(topic, p); {
		case !ok:
			t.Fatalf("group %s has no committed offset on %s/%d, want %d", group, topic, p, want)
		case o.Err != nil || o.At != want:
			t.Fatalf("group %s committed offset %d on %s/%d (error %v), want %d", group, o.At, topic, p, o.Err, want)
		}
	}
}

// closeAll closes the members at once, as a rolling shutdown would.
func closeAll(t *testing.T, ms ...*member) {
	t.Helper()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { errs[i] = m.close() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %s closes: %v", ms[i].name, err)
		}
	}
}

// awaitEmpty waits until the group has no members: the closed members left
// it rather than waiting out their sessions.
func awaitEmpty(t *testing.T, tg *target, group string) {
	t.Helper()
	await(t, "the closed members leave the group", 5*time.Second, func() error {
		described, err := tg.admin.DescribeGroups(testContext(t), group)
		if err != nil {
			return err
		}
		g := described[group]
		if g.Err != nil || len(g.Members) > 0 || g.State != "Empty" {
			return fmt.Errorf("group %s: %v, state %s, %d members", group, g.Err, g.State, len(g.Members))
		}
		return nil
	})
}
