//go:build race

package raft

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
