// Package freeport picks loopback ports for a child process to listen on:
// a test's or a harness's appruntime, Redis, Sentinel or S3 server.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port Addr picks: above the registered services
// people run on a development machine.
const lowest = 10000

// Addr returns a loopback address ("127.0.0.1:port") on which nothing
// listened a moment ago, for a child process to bind. Its port is below
// the kernel's ephemeral range (net.ipv4.ip_local_port_range), which the
// kernel hands out for outgoing connections and for listeners on port 0:
// a port picked there and released could be taken by one of those before
// the child binds it, which is how a child found its address in use on a
// machine running many tests at once. Two Addr calls can still pick the
// same port, at random among some twenty thousand.
func Addr() (string, error) {
	top := ephemeralStart()
	for range 64 {
		if top <= lowest {
			break
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(lowest+rand.IntN(top-lowest)))
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return addr, ln.Close()
		}
	}
	// No room below the range, or all tried were taken: the kernel's pick.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("freeport: %w", err)
	}
	return ln.Addr().String(), ln.Close()
}

// ephemeralStart is the first port of the kernel's ephemeral range, or
// Linux's default (32768) where the range cannot be read.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			return n
		}
	}
	return 32768
}
