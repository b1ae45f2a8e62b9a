package metadata

import (
	"errors"
	"slices"
)

// TypeSetPartitionLeaders is SetPartitionLeaders' command type.
const TypeSetPartitionLeaders CommandType = 16

// MaxLeaderReports bounds the reports of one SetPartitionLeaders.
const MaxLeaderReports = 4096

// SetPartitionLeaders is many SetPartitionLeader reports in one entry: a
// node that won thousands of elections after a fail-over reports them
// together, and each topic's partitions are copied once per entry instead
// of once per report. Each report is applied as SetPartitionLeader would
// be, in order; one it would reject is skipped and counted, and the others
// still apply. At most MaxLeaderReports.
//
// Result: SetPartitionLeadersResult.
type SetPartitionLeaders struct {
	Reports []SetPartitionLeader
}

// SetPartitionLeadersResult answers SetPartitionLeaders: how many reports
// changed a partition's leader, and how many were rejected.
type SetPartitionLeadersResult struct {
	Applied, Rejected int
}

// ErrTooManyLeaderReports rejects a SetPartitionLeaders of more than
// MaxLeaderReports.
var ErrTooManyLeaderReports = errors.New("metadata: too many leader reports in one command")

// Type implements Command.
func (SetPartitionLeaders) Type() CommandType { return TypeSetPartitionLeaders }

func (c SetPartitionLeaders) appendBody(b []byte) []byte {
	b = appendLen(b, len(c.Reports))
	for _, r := range c.Reports {
		b = r.appendBody(b)
	}
	return b
}

func decodeSetPartitionLeaders(r *reader) SetPartitionLeaders {
	n := r.length("leader reports", 16) // an empty topic name (its length) and three int32s
	var c SetPartitionLeaders
	for range n {
		c.Reports = append(c.Reports, SetPartitionLeader{Topic: r.str("topic"), Partition: r.i32("partition"),
			Leader: r.i32("leader"), Epoch: r.i32("epoch")})
	}
	return c
}

// setPartitionLeaders applies c's reports, copying each topic they touch
// once: a report is checked against the state as the earlier reports of
// c left it.
func (s *Snapshot) setPartitionLeaders(c SetPartitionLeaders) (SetPartitionLeadersResult, error) {
	if len(c.Reports) > MaxLeaderReports {
		return SetPartitionLeadersResult{}, ErrTooManyLeaderReports
	}
	var res SetPartitionLeadersResult
	w := leaderWriter{s: s}
	for _, r := range c.Reports {
		stored, err := s.checkLeaderReport(r)
		switch {
		case err != nil:
			res.Rejected++
		case stored.Applied:
			w.set(r)
			res.Applied++
		}
	}
	return res, nil
}

// leaderWriter writes checked leader reports into s, copying the topics
// map and each topic it touches once: published topics are never
// modified.
type leaderWriter struct {
	s      *Snapshot
	copied map[string]bool
}

func (w *leaderWriter) set(r SetPartitionLeader) {
	if !w.copied[r.Topic] {
		if w.copied == nil {
			w.s.topics = cloneMap(w.s.topics)
			w.copied = map[string]bool{}
		}
		nt := *w.s.topics[r.Topic]
		nt.Partitions = slices.Clone(nt.Partitions) // Replicas slices stay shared: never written
		w.s.topics[r.Topic] = &nt
		w.copied[r.Topic] = true
	}
	p := &w.s.topics[r.Topic].Partitions[r.Partition]
	p.Leader, p.LeaderEpoch = r.Leader, r.Epoch
}
