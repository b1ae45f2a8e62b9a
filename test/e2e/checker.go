package e2e

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Stored is one record as read back from a partition.
type Stored struct {
	Offset int64
	Key    []byte
	Value  []byte
}

// PartitionLog is everything a partition holds from Start up to End (the
// high watermark when it was read), in offset order.
type PartitionLog struct {
	Topic     string
	Partition int32
	Start     int64 // log start offset
	End       int64 // high watermark: one past the last offset
	Records   []Stored
}

// Kind is a kind of problem the checker reports.
type Kind uint8

// The kinds of problem, each with the sentinel error CheckError wraps.
const (
	// Lost: an acknowledged record is not present.
	Lost Kind = iota
	// Duplicated: a record is present more than once.
	Duplicated
	// Misplaced: an acknowledged record is present, but not at the
	// partition and offset it was acknowledged at (or a record is in
	// another partition than its producer chose).
	Misplaced
	// Phantom: a record is present that no producer sent, or that its
	// producer refused (NotSent), or whose value is not a workload value.
	Phantom
	// OutOfOrder: a producer's records with one key are not stored in
	// increasing sequence order.
	OutOfOrder
	// Gap: a partition's offsets are not contiguous from Start to End.
	Gap
	// BadHistory: the history itself is inconsistent (one ID sent twice).
	BadHistory
	// StaleRead: a consumer read a record that the final log does not hold
	// at that offset (CheckReads).
	StaleRead
	numKinds
)

// Errors that a CheckError wraps, one per Kind.
var (
	ErrLost       = errors.New("e2e: acknowledged record lost")
	ErrDuplicated = errors.New("e2e: record duplicated")
	ErrMisplaced  = errors.New("e2e: record not at its acknowledged offset")
	ErrPhantom    = errors.New("e2e: record that was never sent")
	ErrOutOfOrder = errors.New("e2e: per-key sequence out of order")
	ErrGap        = errors.New("e2e: offsets not contiguous")
	ErrBadHistory = errors.New("e2e: inconsistent history")
	ErrStaleRead  = errors.New("e2e: a consumer read a record the final log does not hold")
)

var kindErrs = [numKinds]error{ErrLost, ErrDuplicated, ErrMisplaced, ErrPhantom, ErrOutOfOrder, ErrGap, ErrBadHistory, ErrStaleRead}
var kindNames = [numKinds]string{"lost", "duplicated", "misplaced", "phantom", "out-of-order", "gap", "bad-history", "stale-read"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Err is the sentinel error of k.
func (k Kind) Err() error {
	if k < numKinds {
		return kindErrs[k]
	}
	return nil
}

// Problem is one finding.
type Problem struct {
	Kind      Kind
	ID        ID // zero for Gap and unparsable Phantom records
	Topic     string
	Partition int32
	Offset    int64 // where it was found (or acknowledged, for Lost)
	Detail    string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s %s[%d]@%d %v: %s", p.Kind, p.Topic, p.Partition, p.Offset, p.ID, p.Detail)
}

// Report is the checker's verdict.
type Report struct {
	Problems []Problem // in a stable order: by kind, topic, partition, offset

	Attempts       int // attempts in the history
	Acked          int // attempts acknowledged (AckedNoOffset of them without an offset)
	AckedNoOffset  int
	Unknown        int // attempts whose outcome was unknown or pending
	UnknownPresent int // of those, present (once)
	NotSent        int
	Stored         int // records read from the partitions
	Reads          int // records a consumer read during the run (CheckReads)
	// Superseded counts acknowledged records a compacted log no longer
	// holds because a later record of their key is stored (CheckCompacted).
	Superseded int
}

// Count returns the number of problems of kind k.
func (r *Report) Count(k Kind) int {
	n := 0
	for _, p := range r.Problems {
		if p.Kind == k {
			n++
		}
	}
	return n
}

// Err returns nil if the report found no problem, else a *CheckError.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return &CheckError{Report: r}
}

// CheckError is a failed check. errors.Is matches the sentinel of every
// kind of problem it holds (ErrLost, ErrDuplicated, ...).
type CheckError struct {
	Report *Report
}

// maxListed bounds the problems an error message lists.
const maxListed = 20

func (e *CheckError) Error() string {
	return reportText("e2e: check failed:", numKinds, e.Report.Count, e.Report.Problems)
}

// Unwrap gives the sentinel of each kind present.
func (e *CheckError) Unwrap() []error { return reportErrs(numKinds, e.Report.Count) }

// problemKind is a checker's kind of problem (Kind, GroupKind).
type problemKind interface {
	~uint8
	String() string
	Err() error
}

// reportText renders a failed check: title, the count of each kind
// present, then up to maxListed problems.
func reportText[K problemKind, P fmt.Stringer](title string, kinds K, count func(K) int, problems []P) string {
	var b strings.Builder
	b.WriteString(title)
	for k := range kinds {
		if n := count(k); n > 0 {
			fmt.Fprintf(&b, " %d %s", n, k)
		}
	}
	for i, p := range problems {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... %d more", len(problems)-maxListed)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// reportErrs gives the sentinel of each kind present.
func reportErrs[K problemKind](kinds K, count func(K) int) []error {
	var errs []error
	for k := range kinds {
		if count(k) > 0 {
			errs = append(errs, k.Err())
		}
	}
	return errs
}

// loc is where a record was found.
type loc struct {
	topic     string
	partition int32
	offset    int64
}

// Check proves, for every partition in logs, that: every acknowledged
// attempt is present exactly once, at its acknowledged partition and
// offset; every attempt of unknown outcome is present at most once; no
// record is present that was never sent (or that Produce refused); each
// producer's records with one key are stored in increasing sequence order;
// and offsets run without a gap from Start to End. An attempt on a
// partition that logs do not cover is only checked not to be anywhere
// else. Check is pure: the same input gives the same report.
func Check(attempts []Attempt, logs []PartitionLog) *Report {
	return check(attempts, logs, false)
}

// CheckCompacted is Check for the logs of a compacted topic
// (cleanup.policy=compact): offsets may have gaps, and an acknowledged
// record may be gone, but only behind a later record of its key in its
// partition. So for every key the latest acknowledged value is read
// (unless a later record replaced it), never an older value after a
// newer one, nothing twice, nothing never sent.
func CheckCompacted(attempts []Attempt, logs []PartitionLog) *Report {
	return check(attempts, logs, true)
}

func check(attempts []Attempt, logs []PartitionLog, compacted bool) *Report {
	c := &checker{
		r:         &Report{},
		covered:   map[tpKey]bool{},
		found:     map[ID][]loc{},
		seen:      map[ID]bool{},
		compacted: compacted,
		lastOfKey: map[keyIn]int64{},
	}
	c.scanLogs(logs)
	for _, a := range attempts {
		c.matchAttempt(a)
	}
	c.neverSent()
	c.checkKeyOrder(logs)

	slices.SortStableFunc(c.r.Problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset),
			cmp.Compare(a.ID.Producer, b.ID.Producer), cmp.Compare(a.ID.Key, b.ID.Key), cmp.Compare(a.ID.Seq, b.ID.Seq))
	})
	return c.r
}

// tpKey names a partition.
type tpKey struct {
	topic     string
	partition int32
}

// keyIn names a key in a partition.
type keyIn struct {
	tp  tpKey
	key string
}

// checker is the state of one Check.
type checker struct {
	r         *Report
	covered   map[tpKey]bool  // partitions the logs cover
	found     map[ID][]loc    // where each workload record is stored
	seen      map[ID]bool     // IDs of the attempts matched so far
	compacted bool            // CheckCompacted
	lastOfKey map[keyIn]int64 // the highest offset a key is stored at
}

func (c *checker) add(p Problem) { c.r.Problems = append(c.r.Problems, p) }

// scanLogs indexes every workload record by ID, and reports gaps in the
// offsets and records that are not workload records.
func (c *checker) scanLogs(logs []PartitionLog) {
	for _, pl := range logs {
		c.covered[tpKey{pl.Topic, pl.Partition}] = true
		next := pl.Start
		for _, s := range pl.Records {
			c.r.Stored++
			c.lastOfKey[keyIn{tpKey{pl.Topic, pl.Partition}, string(s.Key)}] = s.Offset
			if s.Offset < next || s.Offset != next && !c.compacted {
				c.add(Problem{Kind: Gap, Topic: pl.Topic, Partition: pl.Partition, Offset: next,
					Detail: fmt.Sprintf("expected offset %d, found %d", next, s.Offset)})
			}
			next = s.Offset + 1
			id, ok := ParseValue(s.Value)
			if !ok || string(s.Key) != id.Key {
				c.add(Problem{Kind: Phantom, ID: id, Topic: pl.Topic, Partition: pl.Partition, Offset: s.Offset,
					Detail: fmt.Sprintf("not a workload record: key %q value %.40q", s.Key, s.Value)})
				continue
			}
			c.found[id] = append(c.found[id], loc{pl.Topic, pl.Partition, s.Offset})
		}
		if next != pl.End && !c.compacted {
			c.add(Problem{Kind: Gap, Topic: pl.Topic, Partition: pl.Partition, Offset: next,
				Detail: fmt.Sprintf("records end at %d, high watermark %d", next, pl.End)})
		}
	}
}

// matchAttempt checks where one attempt's record is stored against its
// outcome, and counts the attempt in the report.
func (c *checker) matchAttempt(a Attempt) {
	if c.seen[a.ID] {
		c.add(Problem{Kind: BadHistory, ID: a.ID, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
			Detail: "the same ID was attempted twice"})
		return
	}
	c.seen[a.ID] = true
	c.r.Attempts++
	locs := c.found[a.ID]
	// An attempt on a partition that was not read may be missing
	// from the logs; it may not be anywhere else.
	read := a.Partition < 0 || c.covered[tpKey{a.Topic, a.Partition}]
	for _, l := range locs {
		if l.topic != a.Topic || (a.Partition >= 0 && l.partition != a.Partition) {
			c.add(Problem{Kind: Misplaced, ID: a.ID, Topic: l.topic, Partition: l.partition, Offset: l.offset,
				Detail: fmt.Sprintf("%s: produced to %s[%d]", a.Outcome, a.Topic, a.Partition)})
		}
	}
	if len(locs) > 1 {
		c.add(Problem{Kind: Duplicated, ID: a.ID, Topic: locs[1].topic, Partition: locs[1].partition, Offset: locs[1].offset,
			Detail: fmt.Sprintf("%s: present %d times, at offsets %s", a.Outcome, len(locs), offsets(locs))})
	}
	switch a.Outcome {
	case Acked:
		c.r.Acked++
		if a.Offset < 0 {
			c.r.AckedNoOffset++
		}
		switch {
		case len(locs) == 0 && read && c.superseded(a):
			c.r.Superseded++
		case len(locs) == 0 && read:
			c.add(Problem{Kind: Lost, ID: a.ID, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
				Detail: "acknowledged, not present"})
		case len(locs) > 0 && a.Offset >= 0 && locs[0].topic == a.Topic && locs[0].partition == a.Partition && locs[0].offset != a.Offset:
			c.add(Problem{Kind: Misplaced, ID: a.ID, Topic: locs[0].topic, Partition: locs[0].partition, Offset: locs[0].offset,
				Detail: fmt.Sprintf("acknowledged at %s[%d]@%d", a.Topic, a.Partition, a.Offset)})
		}
	case Pending, Unknown:
		c.r.Unknown++
		if len(locs) > 0 {
			c.r.UnknownPresent++
		}
	case NotSent:
		c.r.NotSent++
		for _, l := range locs {
			c.add(Problem{Kind: Phantom, ID: a.ID, Topic: l.topic, Partition: l.partition, Offset: l.offset,
				Detail: fmt.Sprintf("Produce refused it: %v", a.Err)})
		}
	}
}

// superseded reports whether a compacted log holds a record of a's key
// after a's acknowledged offset, which its cleaning may have removed a for.
func (c *checker) superseded(a Attempt) bool {
	last, ok := c.lastOfKey[keyIn{tpKey{a.Topic, a.Partition}, a.ID.Key}]
	return c.compacted && a.Offset >= 0 && ok && last > a.Offset
}

// neverSent reports the stored workload records that no attempt names.
func (c *checker) neverSent() {
	for id, locs := range c.found {
		if c.seen[id] {
			continue
		}
		for _, l := range locs {
			c.add(Problem{Kind: Phantom, ID: id, Topic: l.topic, Partition: l.partition, Offset: l.offset,
				Detail: "never sent"})
		}
	}
}

// checkKeyOrder reports records stored out of sequence order. Per producer,
// key and partition, sequences must rise with the offset: the workload's
// keys map to one partition, but the partition probes' key goes to
// whichever partition the cut-off leader leads, and a producer keeps no
// order across partitions.
func (c *checker) checkKeyOrder(logs []PartitionLog) {
	type stream struct {
		producer  int
		key       string
		topic     string
		partition int32
	}
	type seqAt struct {
		seq int64
		at  loc
	}
	last := map[stream]seqAt{}
	for _, pl := range logs {
		for _, s := range pl.Records {
			id, ok := ParseValue(s.Value)
			if !ok {
				continue
			}
			k := stream{id.Producer, id.Key, pl.Topic, pl.Partition}
			prev, had := last[k]
			if had && id.Seq < prev.seq {
				c.add(Problem{Kind: OutOfOrder, ID: id, Topic: pl.Topic, Partition: pl.Partition, Offset: s.Offset,
					Detail: fmt.Sprintf("after seq %d at %s[%d]@%d", prev.seq, prev.at.topic, prev.at.partition, prev.at.offset)})
				continue
			}
			last[k] = seqAt{id.Seq, loc{pl.Topic, pl.Partition, s.Offset}}
		}
	}
}

func offsets(locs []loc) string {
	parts := make([]string, len(locs))
	for i, l := range locs {
		parts[i] = fmt.Sprintf("%s[%d]@%d", l.topic, l.partition, l.offset)
	}
	return strings.Join(parts, ", ")
}
