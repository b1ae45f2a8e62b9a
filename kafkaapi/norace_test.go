//go:build !race

package kafkaapi

// raceEnabled: the race detector changes what allocations cost.
const raceEnabled = false
