package testkit

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// PGFault is how a PGProxy fails, once.
type PGFault string

const (
	// RefuseFirstConnection closes the first connection before any byte.
	RefuseFirstConnection PGFault = "connection refused once"
	// LoseFirstCommitAnswer passes the first COMMIT on to the server but
	// closes the client's side first: the server commits, its answer is
	// lost.
	LoseFirstCommitAnswer PGFault = "commit answer lost once"
)

// commitMessage is pgx's commit: the simple query "commit" (message Q,
// length 11).
var commitMessage = []byte("Q\x00\x00\x00\x0bcommit\x00")

// PGProxy forwards TCP connections to a Postgres server and fails once as
// its fault says.
type PGProxy struct {
	addr   string
	target atomic.Pointer[string] // set by Rewrite, read by each connection
	fault  PGFault
	failed atomic.Int32
	conns  atomic.Int32
}

// NewPGProxy listens on loopback until the test ends.
func NewPGProxy(t *testing.T, fault PGFault) *PGProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	p := &PGProxy{addr: ln.Addr().String(), fault: fault}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

// Failed is how many times the proxy failed (0 or 1).
func (p *PGProxy) Failed() int { return int(p.failed.Load()) }

// Rewrite points dsn at the proxy and the proxy at dsn's server.
func (p *PGProxy) Rewrite(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(err)
	}
	target := u.Host
	p.target.Store(&target)
	u.Host = p.addr
	return u.String()
}

func (p *PGProxy) serve(client net.Conn) {
	defer client.Close()
	if p.conns.Add(1) == 1 && p.fault == RefuseFirstConnection {
		p.failed.Add(1)
		return
	}
	target := p.target.Load()
	if target == nil {
		return
	}
	server, err := net.Dial("tcp", *target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() { _, _ = io.Copy(client, server); client.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		chunk := buf[:n]
		if p.fault == LoseFirstCommitAnswer && bytes.Contains(chunk, commitMessage) && p.failed.CompareAndSwap(0, 1) {
			client.Close()
			_, _ = server.Write(chunk)
			time.Sleep(500 * time.Millisecond) // let the server run it
			return
		}
		if _, err := server.Write(chunk); err != nil {
			return
		}
	}
}
