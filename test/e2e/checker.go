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
)

var kindErrs = [numKinds]error{ErrLost, ErrDuplicated, ErrMisplaced, ErrPhantom, ErrOutOfOrder, ErrGap, ErrBadHistory}
var kindNames = [numKinds]string{"lost", "duplicated", "misplaced", "phantom", "out-of-order", "gap", "bad-history"}

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
	var b strings.Builder
	b.WriteString("e2e: check failed:")
	for k := range numKinds {
		if n := e.Report.Count(k); n > 0 {
			fmt.Fprintf(&b, " %d %s", n, k)
		}
	}
	for i, p := range e.Report.Problems {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  ... %d more", len(e.Report.Problems)-maxListed)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap gives the sentinel of each kind present.
func (e *CheckError) Unwrap() []error {
	var errs []error
	for k := range numKinds {
		if e.Report.Count(k) > 0 {
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
	r := &Report{}
	add := func(p Problem) { r.Problems = append(r.Problems, p) }

	type tpKey struct {
		topic     string
		partition int32
	}
	covered := map[tpKey]bool{}
	found := map[ID][]loc{}
	for _, pl := range logs {
		covered[tpKey{pl.Topic, pl.Partition}] = true
		next := pl.Start
		for _, s := range pl.Records {
			r.Stored++
			if s.Offset != next {
				add(Problem{Kind: Gap, Topic: pl.Topic, Partition: pl.Partition, Offset: next,
					Detail: fmt.Sprintf("expected offset %d, found %d", next, s.Offset)})
			}
			next = s.Offset + 1
			id, ok := ParseValue(s.Value)
			if !ok || string(s.Key) != id.Key {
				add(Problem{Kind: Phantom, ID: id, Topic: pl.Topic, Partition: pl.Partition, Offset: s.Offset,
					Detail: fmt.Sprintf("not a workload record: key %q value %.40q", s.Key, s.Value)})
				continue
			}
			found[id] = append(found[id], loc{pl.Topic, pl.Partition, s.Offset})
		}
		if next != pl.End {
			add(Problem{Kind: Gap, Topic: pl.Topic, Partition: pl.Partition, Offset: next,
				Detail: fmt.Sprintf("records end at %d, high watermark %d", next, pl.End)})
		}
	}

	seen := map[ID]bool{}
	for _, a := range attempts {
		if seen[a.ID] {
			add(Problem{Kind: BadHistory, ID: a.ID, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
				Detail: "the same ID was attempted twice"})
			continue
		}
		seen[a.ID] = true
		r.Attempts++
		locs := found[a.ID]
		// An attempt on a partition that was not read may be missing
		// from the logs; it may not be anywhere else.
		read := a.Partition < 0 || covered[tpKey{a.Topic, a.Partition}]
		for _, l := range locs {
			if l.topic != a.Topic || (a.Partition >= 0 && l.partition != a.Partition) {
				add(Problem{Kind: Misplaced, ID: a.ID, Topic: l.topic, Partition: l.partition, Offset: l.offset,
					Detail: fmt.Sprintf("%s: produced to %s[%d]", a.Outcome, a.Topic, a.Partition)})
			}
		}
		if len(locs) > 1 {
			add(Problem{Kind: Duplicated, ID: a.ID, Topic: locs[1].topic, Partition: locs[1].partition, Offset: locs[1].offset,
				Detail: fmt.Sprintf("%s: present %d times, at offsets %s", a.Outcome, len(locs), offsets(locs))})
		}
		switch a.Outcome {
		case Acked:
			r.Acked++
			if a.Offset < 0 {
				r.AckedNoOffset++
			}
			switch {
			case len(locs) == 0 && read:
				add(Problem{Kind: Lost, ID: a.ID, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
					Detail: "acknowledged, not present"})
			case len(locs) > 0 && a.Offset >= 0 && locs[0].topic == a.Topic && locs[0].partition == a.Partition && locs[0].offset != a.Offset:
				add(Problem{Kind: Misplaced, ID: a.ID, Topic: locs[0].topic, Partition: locs[0].partition, Offset: locs[0].offset,
					Detail: fmt.Sprintf("acknowledged at %s[%d]@%d", a.Topic, a.Partition, a.Offset)})
			}
		case Pending, Unknown:
			r.Unknown++
			if len(locs) > 0 {
				r.UnknownPresent++
			}
		case NotSent:
			r.NotSent++
			for _, l := range locs {
				add(Problem{Kind: Phantom, ID: a.ID, Topic: l.topic, Partition: l.partition, Offset: l.offset,
					Detail: fmt.Sprintf("Produce refused it: %v", a.Err)})
			}
		}
	}

	// Records nobody attempted.
	var never []ID
	for id := range found {
		if !seen[id] {
			never = append(never, id)
		}
	}
	for _, id := range never {
		for _, l := range found[id] {
			add(Problem{Kind: Phantom, ID: id, Topic: l.topic, Partition: l.partition, Offset: l.offset,
				Detail: "never sent"})
		}
	}

	// Per producer and key, sequences must rise with the offset. Keys map
	// to one partition, so the order is the partitions' offset order.
	type stream struct {
		producer int
		key      string
		topic    string
	}
	last := map[stream]struct {
		seq int64
		at  loc
	}{}
	for _, pl := range logs {
		for _, s := range pl.Records {
			id, ok := ParseValue(s.Value)
			if !ok {
				continue
			}
			k := stream{id.Producer, id.Key, pl.Topic}
			prev, had := last[k]
			here := loc{pl.Topic, pl.Partition, s.Offset}
			if had && id.Seq < prev.seq {
				add(Problem{Kind: OutOfOrder, ID: id, Topic: pl.Topic, Partition: pl.Partition, Offset: s.Offset,
					Detail: fmt.Sprintf("after seq %d at %s[%d]@%d", prev.seq, prev.at.topic, prev.at.partition, prev.at.offset)})
				continue
			}
			last[k] = struct {
				seq int64
				at  loc
			}{id.Seq, here}
		}
	}

	slices.SortStableFunc(r.Problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset),
			cmp.Compare(a.ID.Producer, b.ID.Producer), cmp.Compare(a.ID.Key, b.ID.Key), cmp.Compare(a.ID.Seq, b.ID.Seq))
	})
	return r
}

func offsets(locs []loc) string {
	parts := make([]string, len(locs))
	for i, l := range locs {
		parts[i] = fmt.Sprintf("%s[%d]@%d", l.topic, l.partition, l.offset)
	}
	return strings.Join(parts, ", ")
}
