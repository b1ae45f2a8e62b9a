package diskprobe

import (
	"os"
	"syscall"
)

// fdatasync is what the stores under test call on Linux.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
