//go:build !linux

package vfs

// writevAt leaves every file to writeAtv's WriteAt per buffer where
// pwritev is not wrapped.
func writevAt(File, [][]byte, int64) (int, bool, error) { return 0, false, nil }
