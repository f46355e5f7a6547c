package testkit

import (
	"net"
	"testing"
	"time"
)

// waitListening fails t unless something accepts TCP connections on addr
// within the given time: a server process the harness just started.
func waitListening(t testing.TB, what, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testkit: %s does not listen on %s within %s", what, addr, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
