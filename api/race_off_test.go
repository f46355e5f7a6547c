//go:build !race

package api_test

// raceEnabled: the race detector is on.
const raceEnabled = false
