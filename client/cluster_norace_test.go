//go:build !race

package client_test

// raceEnabled: see cluster_race_test.go.
const raceEnabled = false
