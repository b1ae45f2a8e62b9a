package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Shared adds a share group's CheckShare report.
func (s *Summary) Shared(r *ShareReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shares = append(s.shares, r)
}

// ShareFailover records, for a fault of a kind, the time from the kill to
// the first successful accept of a record delivered after it.
func (s *Summary) ShareFailover(kind string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addShareFailover(kind, d)
}

// addShareFailover is ShareFailover with s.mu held.
func (s *Summary) addShareFailover(kind string, ds ...time.Duration) {
	if s.shareFail == nil {
		s.shareFail = map[string][]time.Duration{}
	}
	s.shareFail[kind] = append(s.shareFail[kind], ds...)
}

// writeShares adds the share group checks to the summary. Called with
// s.mu held.
func (s *Summary) writeShares(b *strings.Builder) {
	t := &ShareReport{}
	for _, r := range s.shares {
		t.Problems = append(t.Problems, r.Problems...)
		t.Records += r.Records
		t.Deliveries += r.Deliveries
		t.Redeliveries += r.Redeliveries
		t.AfterFault += r.AfterFault
		t.Accepted += r.Accepted
		t.Released += r.Released
		t.AckFailed += r.AckFailed
		t.Unconfirmed += r.Unconfirmed
		t.ArchivedAtLimit += r.ArchivedAtLimit
	}
	fmt.Fprintf(b, "share groups:         %d checked; %v\n", len(s.shares), t)
	for _, k := range slices.Sorted(maps.Keys(s.shareFail)) {
		ds := s.shareFail[k]
		fmt.Fprintf(b, "  %s -> first successful accept of a record delivered after it: %d measured, p50 %v, max %v\n", k, len(ds),
			Percentile(ds, 50).Round(time.Millisecond), Percentile(ds, 100).Round(time.Millisecond))
	}
}
