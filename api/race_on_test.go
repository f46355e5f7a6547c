//go:build race

package api_test

// raceEnabled: the race detector is on (sync.Pool then drops a share of
// what is put back, so allocation counts move from run to run).
const raceEnabled = true
