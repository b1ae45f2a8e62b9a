package vfs

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// dropCache asks the kernel to drop f's clean cached pages of
// [off, off+n) (posix_fadvise POSIX_FADV_DONTNEED); a file that is not an
// OS file has none, and dirty pages stay until written back.
func dropCache(f File, off, n int64) error {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var aerr error
	if err := raw.Control(func(fd uintptr) { aerr = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED) }); err != nil {
		return err
	}
	return aerr
}
