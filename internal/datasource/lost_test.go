package datasource_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/datasource"
)

// cutProxy passes a Postgres connection through, and when the client sends a
// message containing trigger it passes that message on to the server but
// closes the client's side first: the server runs it, its answer is lost.
type cutProxy struct {
	addr, target string
	trigger      []byte
	once         sync.Once
	cut          chan struct{}
}

func newCutProxy(t *testing.T, dsn string, trigger string) (*cutProxy, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	p := &cutProxy{addr: ln.Addr().String(), target: u.Host, trigger: []byte(trigger), cut: make(chan struct{})}
	u.Host = p.addr
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p, u.String()
}

func (p *cutProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
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
		cut := false
		if bytes.Contains(chunk, p.trigger) {
			p.once.Do(func() { cut = true; close(p.cut) })
		}
		if cut {
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

// TestALostAnswerIsNeverTakenForARefusal: the runtime records a write as
// failed (no feed row) only when AnswerLost is false, so a write or a commit
// the server ran but whose answer never arrived must count as lost, or a row
// would stand in the data source with no record of it.
func TestALostAnswerIsNeverTakenForARefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := postgresFixture(t)
	p, dsn := newCutProxy(t, f.dsn, "Q\x00\x00\x00\x0bcommit\x00")
	src, err := newRegistry(t).Source(ctx, integration(t, datasource.KindPostgres, dsn))
	require.NoError(t, err)
	err = func() error {
		tx, err := src.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Write(ctx, insert(map[string]any{"id": int64(40), "name": "lost", "qty": int64(1)})); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}()
	require.Error(t, err)
	select {
	case <-p.cut:
	default:
		t.Fatalf("the proxy never cut the answer: %v", err)
	}
	require.Eventually(t, func() bool { return f.count(t, "inventory", "id = 40") == 1 }, 5*time.Second, 50*time.Millisecond,
		"the server ran the commit")
	require.True(t, datasource.AnswerLost(err), "a lost answer taken for a refusal: %v (%T)", err, err)
	require.False(t, datasource.CommitRefused(err))
}
