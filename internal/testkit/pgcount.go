package testkit

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// PGCounter is a loopback proxy to a Postgres server that counts what its
// clients send, by reading the frontend protocol: only the connections made
// through it are counted, so a test on a shared server counts its own
// statements and no other test's (the server's pg_stat views are
// database-wide and shared by every parallel test).
type PGCounter struct {
	addr       string
	target     atomic.Pointer[string]
	statements atomic.Int64
	begins     atomic.Int64
	pings      atomic.Int64

	mu   sync.Mutex
	text []string // each counted statement's SQL, in order
}

// PGCount is what a PGCounter saw.
type PGCount struct {
	// Statements are the statements run: simple queries (Q) and executions
	// of an extended-protocol portal (E), BEGIN and COMMIT included, pings
	// not.
	Statements int64
	// Transactions are the explicit transactions begun (BEGIN).
	Transactions int64
	// Pings are database/sql's liveness checks of a pooled connection idle
	// for over a second (pgx's "-- ping"): they depend on timing, not on the
	// request, so they are kept apart from Statements.
	Pings int64
}

// Sub is c minus an earlier count.
func (c PGCount) Sub(before PGCount) PGCount {
	return PGCount{c.Statements - before.Statements, c.Transactions - before.Transactions, c.Pings - before.Pings}
}

// Add is c plus another count.
func (c PGCount) Add(other PGCount) PGCount {
	return PGCount{c.Statements + other.Statements, c.Transactions + other.Transactions, c.Pings + other.Pings}
}

// NewPGCounter listens on loopback until the test ends.
func NewPGCounter(t testing.TB) *PGCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	p := &PGCounter{addr: ln.Addr().String()}
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

// Rewrite points dsn at the counter and the counter at dsn's server. The
// DSN must not ask for TLS (the counter reads the plain protocol).
func (p *PGCounter) Rewrite(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(err)
	}
	target := u.Host
	p.target.Store(&target)
	u.Host = p.addr
	return u.String()
}

// Statements returns the SQL of the statements counted so far, from the
// from-th on (the first is 0), to say what a count is made of.
func (p *PGCounter) Statements(from int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.text[min(from, len(p.text)):]...)
}

func (p *PGCounter) counted(sql string) {
	p.statements.Add(1)
	p.mu.Lock()
	p.text = append(p.text, sql)
	p.mu.Unlock()
}

// Count is what the counter has seen so far.
func (p *PGCounter) Count() PGCount {
	return PGCount{p.statements.Load(), p.begins.Load(), p.pings.Load()}
}

func (p *PGCounter) serve(client net.Conn) {
	defer client.Close()
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
	w := frontendReader{startup: true, counter: p, prepared: map[string]string{}}
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		w.feed(buf[:n])
		if _, err := server.Write(buf[:n]); err != nil {
			return
		}
	}
}

// frontendReader splits a client's byte stream into protocol messages: the
// untyped startup messages first (an SSL or GSS request is followed by
// another), then messages of a type byte and an int32 length.
type frontendReader struct {
	startup  bool
	pending  []byte
	counter  *PGCounter
	prepared map[string]string // statement name → SQL, from Parse
	unnamed  string            // the unnamed statement's SQL
	bound    string            // the SQL of the portal last bound
}

// Protocol codes of the untyped requests that precede the startup message.
const (
	sslRequestCode    = 80877103
	gssencRequestCode = 80877104
)

func (r *frontendReader) feed(chunk []byte) {
	r.pending = append(r.pending, chunk...)
	for {
		if r.startup {
			if len(r.pending) < 8 {
				return
			}
			n := int(binary.BigEndian.Uint32(r.pending))
			if len(r.pending) < n {
				return
			}
			code := binary.BigEndian.Uint32(r.pending[4:])
			r.startup = code == sslRequestCode || code == gssencRequestCode
			r.pending = r.pending[n:]
			continue
		}
		if len(r.pending) < 5 {
			return
		}
		n := 1 + int(binary.BigEndian.Uint32(r.pending[1:]))
		if len(r.pending) < n {
			return
		}
		r.count(r.pending[0], r.pending[5:n])
		r.pending = r.pending[n:]
	}
}

// count reads one message: a simple query, or the Parse, Bind and Execute
// of the extended protocol (a statement prepared once is bound by its name
// afterwards, so Parse's SQL is kept by name).
func (r *frontendReader) count(typ byte, body []byte) {
	switch typ {
	case 'Q':
		sql := string(bytes.TrimSpace(cString(body)))
		text := bytes.ToLower([]byte(sql))
		switch {
		case bytes.HasPrefix(text, []byte("-- ping")):
			r.counter.pings.Add(1)
			return
		case bytes.HasPrefix(text, []byte("begin")):
			r.counter.begins.Add(1)
		}
		r.counter.counted(sql)
	case 'P':
		name := cString(body)
		sql := string(cString(body[len(name)+1:]))
		if len(name) == 0 {
			r.unnamed = sql
		} else {
			r.prepared[string(name)] = sql
		}
	case 'B':
		portal := cString(body)
		name := cString(body[len(portal)+1:])
		r.bound = r.unnamed
		if len(name) > 0 {
			r.bound = r.prepared[string(name)]
		}
	case 'E':
		r.counter.counted(r.bound)
	}
}

// cString is b up to its first NUL.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// RedisCounter is a go-redis hook that counts the commands its client
// sends, a pipeline's one by one, so a test counts its own platform's
// commands on a Redis other tests share (INFO commandstats is server-wide).
type RedisCounter struct{ commands atomic.Int64 }

// CountRedis adds a RedisCounter to client.
func CountRedis(client redis.UniversalClient) *RedisCounter {
	c := &RedisCounter{}
	client.AddHook(c)
	return c
}

// Commands is how many commands the client has sent so far.
func (c *RedisCounter) Commands() int64 { return c.commands.Load() }

// DialHook implements redis.Hook.
func (c *RedisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *RedisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.commands.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *RedisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
