package seglog

import (
	"errors"
	"fmt"
)

// Sync makes everything written before it was called durable: the segment
// data and index files changed since the last Sync, then the directory if
// files were created or removed. It returns only when every fsync that
// began before it has finished, so a Sync that starts while another is
// fsyncing waits for that one (whose writes it may not see as dirty).
//
// Appends go on while it waits for the disk: it notes and clears the dirty
// flags under wmu, then fsyncs holding only truncMu shared (which keeps the
// files in place, as for a reader). An append during the fsync
// sets its segment's flag again for the next Sync. Holding wmu for the
// fsync would stall the partition's applies for as long as the kernel takes
// to write back everything since the last snapshot.
//
// A failed fsync is sticky (see failSync).
func (l *Log) Sync() error {
	type pending struct {
		s           *segment
		data, index bool
		drop        int64 // the data below it is synced and may leave the page cache
	}
	l.syncSem <- struct{}{}
	defer func() { <-l.syncSem }()
	l.wmu.Lock()
	switch {
	case l.closed:
		l.wmu.Unlock()
		return ErrClosed
	case l.serr != nil:
		l.wmu.Unlock()
		return l.serr
	}
	var todo []pending
	after := l.bytes // less each segment in turn: the bytes after it
	for _, s := range l.segs {
		after -= s.size
		if s.dataDirty || s.indexDirty {
			todo = append(todo, pending{s, s.dataDirty, s.indexDirty, l.dropBelow(s, after)})
			s.dataDirty, s.indexDirty = false, false
		}
	}
	dir := l.dirDirty
	l.dirDirty = false
	l.truncMu.RLock()
	l.wmu.Unlock()

	var err error
	for _, p := range todo {
		if err = p.s.syncParts(p.data, p.index, l.fsync); err != nil {
			break
		}
		l.dropCache(p.s, p.drop)
	}
	if err == nil && dir {
		if err = l.opts.FS.SyncDir(l.dir); err != nil {
			err = fmt.Errorf("partition: sync directory: %w", err)
		}
	}
	l.truncMu.RUnlock()
	if err == nil {
		return nil
	}
	// wmu after truncMu is released: the lock order is wmu, truncMu.
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.failSync(err)
}

// dropBelow is where the part of s that Sync may drop from the page cache
// ends: everything more than Options.CacheKeepBytes before the log's end,
// after bytes lie in later segments. The caller holds wmu.
func (l *Log) dropBelow(s *segment, after int64) int64 {
	if l.opts.CacheKeepBytes < 0 {
		return 0
	}
	return max(0, s.size-max(0, l.opts.CacheKeepBytes-after))
}

// dropCache drops s's synced bytes below end from the page cache, unless
// less than dropMin of them is left to drop. It is advice: a failure is
// logged and changes nothing else. The caller holds syncSem and truncMu
// (shared).
func (l *Log) dropCache(s *segment, end int64) {
	if end-s.dropped < dropMin {
		return
	}
	if err := s.f.DropCache(s.dropped, end-s.dropped); err != nil {
		l.logger.Debug("dropping synced segment data from the page cache", "err", err)
		return
	}
	s.dropped = end
}

// dropMin is the least a Sync drops from a segment's page cache at once.
const dropMin = 1 << 20

// failSync records a failed fsync and returns the sticky error. After a
// failed fsync the kernel may have dropped the dirty pages and marked them
// clean, so a later fsync can succeed without the data ever reaching the
// disk; no dirty flag is set again and no retry is trusted. Only Open,
// which reads back what the disk holds, gives a log to trust. The caller
// holds wmu.
func (l *Log) failSync(err error) error {
	if l.serr == nil {
		l.serr = fmt.Errorf("%w: %w", ErrSyncFailed, err)
		l.logger.Error("fsync failed; the log refuses writes and syncs until reopened", "err", err)
	}
	return l.serr
}

// syncLocked fsyncs everything dirty. The caller holds syncSem and wmu.
func (l *Log) syncLocked() error {
	if l.serr != nil {
		return l.serr
	}
	for _, s := range l.segs {
		if err := s.sync(l.fsync); err != nil {
			return l.failSync(err)
		}
	}
	if l.dirDirty {
		if err := l.opts.FS.SyncDir(l.dir); err != nil {
			return l.failSync(fmt.Errorf("partition: sync directory: %w", err))
		}
		l.dirDirty = false
	}
	return nil
}

// flusher runs Sync whenever appends kick it, until Close stops it.
func (l *Log) flusher() {
	defer close(l.flushDone)
	for {
		select {
		case <-l.flushStop:
			return
		case <-l.flushKick:
			if err := l.Sync(); err != nil && !errors.Is(err, ErrClosed) {
				l.logger.Warn("background sync failed", "err", err)
			}
		}
	}
}

// stopFlusher stops the background flusher and waits for it. It must be
// called without wmu: the flusher's Sync takes it.
func (l *Log) stopFlusher() {
	if l.flushStop == nil {
		return
	}
	l.stopOnce.Do(func() {
		close(l.flushStop)
		<-l.flushDone
	})
}
