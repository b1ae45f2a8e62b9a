package multiraft

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// spaceFS is the node-wide log store's filesystem: a write that finds the
// disk full waits for space and tries again, instead of failing. Pebble
// cannot survive a failed WAL write (it panics while rotating the WAL
// past one, with its mutex released, which no recover can catch), and a
// failed MANIFEST write ends the DB; a write that waits costs nothing but
// time. Meanwhile the store is full (health.setFull): new writes are
// refused at once with ErrLogStoreFull and the groups refuse proposals,
// while reads go on; once a write gets through, the store is healthy
// again and what waited is written, in order. The reserve
// (internal/diskguard) keeps the disk from getting there at all.
//
// Preallocation, which Pebble treats as advice, fails as it comes. A
// failed sync fails the store for good: after a failed fsync the kernel
// may have dropped the data, so trying again would lie, and Pebble cannot
// survive the error either (as above). The sync never returns to Pebble:
// its goroutine parks, the store's writes are refused from then on, and
// the DB is abandoned at close (pebblelog.go closeDB) until the node
// restarts and recovers from what the disk holds.
type spaceFS struct {
	vfs.FS
	h *health
}

// noSpaceWait bounds the wait between two tries of a write on a full
// disk.
const noSpaceWait = time.Second

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// retry runs op until it succeeds, fails with anything but ENOSPC, or the
// store closes; on ENOSPC the store is full until op gets through.
func (fs *spaceFS) retry(op func() error) error {
	wait := time.Millisecond
	for waited := false; ; waited = true {
		err := op()
		if err == nil {
			if waited {
				fs.h.clearFull()
			}
			return nil
		}
		if !isNoSpace(err) {
			return err
		}
		if !fs.h.waitFull(err, wait) {
			// The store closes on a full disk. Returning the error would
			// panic a WAL rotation (see above): the write never returns,
			// and the DB is abandoned (pebblelog.go closeDB).
			fs.h.log.Error("raft log store closed while its disk is full; what it had not written is lost, as at a crash", "err", err)
			select {}
		}
		wait = min(2*wait, noSpaceWait)
	}
}

func (fs *spaceFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.retry(func() error {
		var err error
		f, err = fs.FS.Create(name, category)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &spaceFile{File: f, fs: fs}, nil
}

func (fs *spaceFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return &spaceFile{File: f, fs: fs}, nil
}

func (fs *spaceFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return &spaceFile{File: f, fs: fs}, nil
}

func (fs *spaceFS) Unwrap() vfs.FS { return fs.FS }

// spaceFile is a file of spaceFS: its writes wait for space.
type spaceFile struct {
	vfs.File
	fs *spaceFS
}

// Write writes all of p, waiting for space as often as it runs out (a
// short write on a full disk goes on from where it stopped).
func (f *spaceFile) Write(p []byte) (int, error) {
	written := 0
	err := f.fs.retry(func() error {
		n, err := f.File.Write(p[written:])
		written += n
		return err
	})
	return written, err
}

func (f *spaceFile) WriteAt(p []byte, off int64) (int, error) {
	written := 0
	err := f.fs.retry(func() error {
		n, err := f.File.WriteAt(p[written:], off+int64(written))
		written += n
		return err
	})
	return written, err
}

// Sync, SyncData and SyncTo fail the store instead of returning an error
// (see spaceFS).
func (f *spaceFile) Sync() error { return f.fs.synced(f.File.Sync()) }

func (f *spaceFile) SyncData() error { return f.fs.synced(f.File.SyncData()) }

func (f *spaceFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.fs.synced(err)
}

// synced passes a sync's success on; a failure fails the store and parks
// the goroutine for good.
func (fs *spaceFS) synced(err error) error {
	if err == nil {
		return nil
	}
	fs.h.set(fmt.Errorf("sync: %w", err))
	fs.h.log.Error("a sync of the raft log store failed: its groups refuse writes until the node restarts", "err", err)
	select {} // Pebble cannot survive the error; this goroutine is abandoned with the DB
}
