//go:build !linux

package vfs

// dropCache does nothing where posix_fadvise is not wrapped.
func dropCache(File, int64, int64) error { return nil }
