//go:build race

package client_test

// raceEnabled: the race detector slows everything about tenfold, so the
// cluster tests send fewer records.
const raceEnabled = true
