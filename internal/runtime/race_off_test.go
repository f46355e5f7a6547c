//go:build !race

package runtime_test

// raceEnabled: the race detector is on.
const raceEnabled = false
