package replicas

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/minikafka/minikafka-go/metadata"
	"github.com/minikafka/minikafka-go/partition/seglog"
	"github.com/minikafka/minikafka-go/record"
)

// CleanupCompact is the cleanup.policy under which the log is cleaned:
// only the latest record of each key is kept (partition/compact).
const CleanupCompact = "compact"

// Compact proposes a cleaning (partition.Replica.Clean) for every replica
// this node leads whose topic's cleanup.policy has compact, or that is of
// an internal topic (compacted in Kafka: the coordinators' views keep the
// latest record of each key), and whose log is dirty enough, as of now.
// Like retention it is the leader's decision, with its clock, through
// Raft. internal says whether the internal topics are cleaned; whole
// that a node of an older build is in the cluster, which refuses a
// cleaning of a dirty part: each cleaning then maps its whole range, in
// the form every build applies (fsm.EncodeClean), bounded as that build
// bounds it (wholeCleanBytes).
func (s *Set[E]) Compact(now time.Time, internal, whole bool) {
	for _, r := range s.Led() {
		s.compact(r, now, internal, whole)
	}
}

func (s *Set[E]) compact(r *Replica[E], now time.Time, internal, whole bool) {
	if !r.compacted(internal) {
		return
	}
	cleaned, pending := r.rep.CleanedTo()
	if pending { // the next one maps from where this one ends
		return
	}
	cfg := r.Config()
	segs := r.rep.Segments()
	start := r.rep.LogStartOffset()
	upTo := cleanablePoint(segs, r.rep.LastStableOffset(), now.UnixMilli(), cfg.MinCompactionLagMs)
	dirty := max(cleaned, start)
	from, mapBytes := dirty, s.cfg.CleanerMapBytes
	if whole {
		from, mapBytes = 0, 0
		upTo = min(upTo, boundedPoint(segs, start, wholeCleanBytes))
	}
	due := r.recleanAt.Load()
	horizons := due > 0 && now.UnixMilli() >= due // tombstones' delete horizons have passed
	if upTo <= start || !horizons &&
		(upTo <= dirty || dirtyRatio(segs, dirty, upTo) < cfg.MinCleanableDirtyRatio &&
			!overdue(segs, dirty, upTo, now.UnixMilli(), cfg.MaxCompactionLagMs, r.firstTimestamp)) {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Tuning.Proposal)
	defer cancel()
	retention := time.Duration(cfg.DeleteRetentionMs) * time.Millisecond
	queued, err := r.rep.Clean(ctx, upTo, now, retention, from, mapBytes)
	if err != nil {
		s.logger.Warn("compaction: clean failed", "topic", r.info.Topic, "partition", r.info.Partition, "up_to", upTo, "err", err)
		return
	}
	switch {
	case upTo > dirty: // new records: their tombstones' horizons pass after delete.retention.ms
		r.recleanAt.Store(now.UnixMilli() + max(cfg.DeleteRetentionMs, 0) + 1)
	case horizons:
		r.recleanAt.Store(0)
	}
	s.logger.Debug("compaction: cleaning proposed", "topic", r.info.Topic, "partition", r.info.Partition,
		"dirty_from", from, "up_to", upTo, "queued", queued)
}

// wholeCleanBytes bounds a cleaning of a whole range: every replica maps
// the keys of all of it, up to one entry a record, so one whose segments
// from the log start pass it is cleaned only that far, as a build before
// the cleanings of a dirty part does.
const wholeCleanBytes = 256 << 20

// boundedPoint is the base of the first segment from the one holding
// start on at which the bytes from there would pass limit (start itself,
// cleaning nothing, if the first segment alone does); past the end if
// none does.
func boundedPoint(segs []seglog.SegmentInfo, start, limit int64) int64 {
	var n int64
	for _, s := range segs {
		if s.Next <= start && !s.Active {
			continue
		}
		if n += s.Bytes; n > limit {
			return max(s.Base, start)
		}
	}
	return math.MaxInt64
}

// compacted reports whether the replica's log is cleaned: its topic's
// cleanup.policy has compact, or it is of an internal topic and internal
// says those are cleaned.
func (r *Replica[E]) compacted(internal bool) bool {
	if metadata.IsInternal(r.info.Topic) {
		return internal
	}
	return slices.Contains(r.Config().CleanupPolicy, CleanupCompact)
}

// dirtyPart is, for a replica of a compacted topic this node leads, its
// log's segments and the part a cleaning proposed now would find dirty:
// from dirty (where its cleanings since it started left it clean, or the
// log start) to upTo. ok is false for any other replica.
func (r *Replica[E]) dirtyPart(now time.Time, internal bool) (segs []seglog.SegmentInfo, dirty, upTo int64, ok bool) {
	if !r.rep.IsLeader() || !r.compacted(internal) {
		return nil, 0, 0, false
	}
	segs = r.rep.Segments()
	upTo = cleanablePoint(segs, r.rep.LastStableOffset(), now.UnixMilli(), r.Config().MinCompactionLagMs)
	cleaned, _ := r.rep.CleanedTo()
	return segs, max(cleaned, r.rep.LogStartOffset()), upTo, true
}

// DirtyRatio is, for a replica of a compacted topic this node leads (the
// internal topics when internal says they are cleaned), the dirty ratio
// the cleaner weighs against min.cleanable.dirty.ratio now: the bytes not
// clean over all the bytes below the point a cleaning would reach
// (dirtyRatio), 0 when nothing there is dirty. ok is false for any other
// replica.
func (r *Replica[E]) DirtyRatio(now time.Time, internal bool) (ratio float64, ok bool) {
	segs, dirty, upTo, ok := r.dirtyPart(now, internal)
	if !ok || upTo <= dirty {
		return 0, ok
	}
	return dirtyRatio(segs, dirty, upTo), true
}

// CleanerLag is, for the replicas DirtyRatio reports, the age of the
// first dirty record below the point a cleaning would reach now, as
// max.compaction.lag.ms measures it (firstDirtyTimestamp): how long the
// cleaner has left it. 0 when nothing there is dirty (or its batch could
// not be read), and never negative (a timestamp from the future).
func (r *Replica[E]) CleanerLag(now time.Time, internal bool) (lag time.Duration, ok bool) {
	segs, dirty, upTo, ok := r.dirtyPart(now, internal)
	if !ok {
		return 0, false
	}
	ts, found := firstDirtyTimestamp(segs, dirty, upTo, r.firstTimestamp)
	if !found {
		return 0, true
	}
	return max(time.Duration(now.UnixMilli()-ts)*time.Millisecond, 0), true
}

// cleanablePoint is the offset a cleaning may reach: the last stable
// offset (an open transaction's records may yet be aborted), and no
// further than the first segment holding a record newer than
// min.compaction.lag.ms (as the segments' max timestamps tell).
func cleanablePoint(segs []seglog.SegmentInfo, lso, nowMs, minLagMs int64) int64 {
	upTo := lso
	if minLagMs > 0 {
		for _, s := range segs {
			if s.MaxTimestamp > nowMs-minLagMs {
				upTo = min(upTo, s.Base)
				break
			}
		}
	}
	return upTo
}

// overdue reports whether the first dirty record below upTo (from dirty
// on) is older than max.compaction.lag.ms: such a log is cleaned whatever
// its dirty ratio, as Kafka does.
func overdue(segs []seglog.SegmentInfo, dirty, upTo, nowMs, maxLagMs int64, firstTimestamp func(offset int64) (int64, bool)) bool {
	if maxLagMs < 0 || maxLagMs == math.MaxInt64 {
		return false
	}
	ts, ok := firstDirtyTimestamp(segs, dirty, upTo, firstTimestamp)
	return ok && ts <= nowMs-maxLagMs
}

// firstDirtyTimestamp dates the first dirty record below upTo (from dirty
// on), as Kafka does: the first timestamp of the batch where the dirty
// part begins, in the first segment holding any of it; firstTimestamp
// reads it. ok is false when nothing below upTo is dirty.
func firstDirtyTimestamp(segs []seglog.SegmentInfo, dirty, upTo int64, firstTimestamp func(offset int64) (int64, bool)) (ts int64, ok bool) {
	if dirty >= upTo {
		return 0, false
	}
	for _, s := range segs {
		if s.Next <= dirty {
			continue
		}
		if s.Base >= upTo {
			return 0, false
		}
		return firstTimestamp(max(s.Base, dirty))
	}
	return 0, false
}

// firstTimestamp is the first timestamp of the batch holding offset; ok
// is false when it cannot be read (trimmed or cleaned meanwhile: the next
// pass looks again).
func (r *Replica[E]) firstTimestamp(offset int64) (int64, bool) {
	b, err := r.rep.Read(offset, 1)
	if err != nil || len(b) == 0 {
		return 0, false
	}
	h, err := record.ParseHeader(b)
	return h.FirstTimestamp, err == nil
}

// dirtyRatio is the share of the bytes below upTo that lie at or above
// cleaned (not clean), by whole segments.
func dirtyRatio(segs []seglog.SegmentInfo, cleaned, upTo int64) float64 {
	var dirty, total int64
	for _, s := range segs {
		if s.Base >= upTo {
			break
		}
		total += s.Bytes
		if s.Next > cleaned {
			dirty += s.Bytes
		}
	}
	if total == 0 {
		return 0
	}
	return float64(dirty) / float64(total)
}
