//go:build !linux

package diskprobe

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
