//go:build unix

package main

import "syscall"

// restrictUmask makes every file and directory the process creates its
// user's alone. The node passes 0600 and 0700 for its own files, Pebble's
// and raft's snapshots; this also covers what libraries create with a
// fixed looser mode (raft-wal's segments and metadata database, 0644).
func restrictUmask() { syscall.Umask(0o077) }
