package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestAddrIsBelowTheEphemeralRangeAndFree: the port is one the kernel
// hands to neither outgoing connections nor port-0 listeners, and it can
// be bound.
func TestAddrIsBelowTheEphemeralRangeAndFree(t *testing.T) {
	t.Parallel()
	top := ephemeralStart()
	for range 20 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("Addr() = %q: want a 127.0.0.1 address", addr)
		}
		port, _ := strconv.Atoi(p)
		if top > lowest && (port < lowest || port >= top) {
			t.Fatalf("Addr() = %q: want a port in [%d, %d)", addr, lowest, top)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("Addr() = %q cannot be bound: %v", addr, err)
		}
		_ = ln.Close()
	}
}
