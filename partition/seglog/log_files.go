package seglog

import (
	"os"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// logFiles opens a log's segment files through Options.Files, so that
// the node's descriptors stay under its limit whatever the number of
// partitions and segments; index files are opened only while read or
// written.
type logFiles struct {
	fs    vfs.FS
	cache *vfs.FileCache
	fsync func(vfs.File) error // the log's fsync, for the cache's evictions too
}

// adopt hands an open segment file to the cache. created: the file is new
// or was just truncated, so it wants an fsync.
func (lf logFiles) adopt(f vfs.File, created bool) *vfs.Handle {
	return lf.cache.Adopt(lf.fs, f, vfs.HandleOptions{Flag: os.O_RDWR, Fsync: lf.fsync, Dirty: created})
}

// files is how the log opens its segment files.
func (l *Log) files() logFiles {
	return logFiles{fs: l.opts.FS, cache: l.opts.Files, fsync: l.fsync}
}
