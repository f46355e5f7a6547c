package testkit

import (
	"net"
	"sync/atomic"
)

// ReadCounter is a listener that counts the bytes a server reads from the
// connections it accepts, so a test can tell how much of a request the
// server read before it answered.
type ReadCounter struct {
	net.Listener
	read atomic.Int64
}

// CountReads wraps ln.
func CountReads(ln net.Listener) *ReadCounter { return &ReadCounter{Listener: ln} }

// Read is how many bytes the server has read so far, over every connection.
func (l *ReadCounter) Read() int64 { return l.read.Load() }

// Accept accepts a connection whose reads are counted.
func (l *ReadCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{Conn: c, read: &l.read}, nil
}

type countedConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}
