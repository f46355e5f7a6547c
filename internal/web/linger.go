package web

import (
	"io"
	"net"
	"time"
)

// The server answers some requests before it has read their body (a 413
// announced by Content-Length, a 401 before an upload is read) and then
// closes the connection. Closing a socket whose receive buffer still holds
// the client's bytes makes the kernel send a reset, and a reset that
// reaches the client before it has read the answer throws the answer away:
// the client sees "connection reset" instead of the 413. A lingering close
// (as Apache's lingering_close) half-closes first, so the answer is followed
// by a FIN, and reads and discards what the client still sends, bounded in
// bytes, time and number of connections, before closing.
const (
	lingerBytes = 8 << 20         // discarded at most per connection
	lingerTime  = 2 * time.Second // at most per connection
	lingerConns = 256             // connections lingering at once; past that, closed at once
)

// lingerListener hands out connections that close lingering.
type lingerListener struct {
	net.Listener
	slots chan struct{}
}

func newLingerListener(ln net.Listener) net.Listener {
	return &lingerListener{Listener: ln, slots: make(chan struct{}, lingerConns)}
}

func (l *lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c, slots: l.slots}, nil
}

// lingerConn closes lingering when its connection can half-close.
type lingerConn struct {
	net.Conn
	slots chan struct{}
}

type halfCloser interface {
	CloseWrite() error
}

// Close half-closes the connection and returns; a goroutine discards what
// the client still sends until it closes its side, lingerBytes or
// lingerTime, then closes. Without a free slot, or on a connection that
// cannot half-close, it closes at once.
func (c *lingerConn) Close() error {
	hc, ok := c.Conn.(halfCloser)
	if !ok {
		return c.Conn.Close()
	}
	select {
	case c.slots <- struct{}{}:
	default:
		return c.Conn.Close()
	}
	if err := hc.CloseWrite(); err != nil {
		<-c.slots
		return c.Conn.Close()
	}
	go func() {
		defer func() { <-c.slots }()
		_ = c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.CopyN(io.Discard, c.Conn, lingerBytes)
		_ = c.Conn.Close()
	}()
	return nil
}
