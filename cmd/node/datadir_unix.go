//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/minikafka/minikafka-go/internal/vfs"
)

// lockDataDir creates dir if need be and locks it for this process: two
// nodes on one data directory would corrupt each other's Raft logs, and
// the second would otherwise fail late, on a store's own lock, after
// joining gossip under the first one's id. A directory already locked
// gives an error wrapping errDataDirInUse that names the holder's pid.
// The returned func releases the lock; so does the process's exit.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, vfs.DirMode); err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	path := filepath.Join(dir, dataDirLock)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, vfs.FileMode)
	if err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is %w%s", dir, errDataDirInUse, holder(path))
		}
		return nil, fmt.Errorf("data_dir: lock %s: %w", path, err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(pid, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	return func() { f.Close() }, nil
}

// holder is " (pid N)" for the pid in the lock file at path, or "" if it
// cannot be read.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pid)
}
