package vfs

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// writevAt is pwritev(2) on an OS file, repeated until every byte is
// written; ok is false for a file that is not one.
func writevAt(f File, bufs [][]byte, off int64) (n int, ok bool, err error) {
	sc, isConn := f.(syscall.Conn)
	if !isConn {
		return 0, false, nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	for len(bufs) > 0 && err == nil {
		var got int
		if cerr := raw.Write(func(fd uintptr) bool {
			got, err = unix.Pwritev(int(fd), bufs, off+int64(n))
			return !errors.Is(err, unix.EAGAIN)
		}); cerr != nil {
			return n, true, cerr
		}
		switch {
		case errors.Is(err, unix.EINTR):
			err = nil
			continue
		case err != nil: // got is -1: nothing more was written
			return n, true, err
		case got == 0:
			return n, true, io.ErrShortWrite
		}
		n += got
		bufs = skipWritten(bufs, got)
	}
	return n, true, err
}

// skipWritten drops the first n bytes from bufs.
func skipWritten(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) > 0 && n > 0 {
		bufs = append([][]byte{bufs[0][n:]}, bufs[1:]...)
	}
	return bufs
}
