package api_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// redisLink is a TCP relay to the test Redis that the test can cut, to see
// the API through a Redis outage.
type redisLink struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newRedisLink(t *testing.T) *redisLink {
	t.Helper()
	opts, err := redis.ParseURL(testkit.RedisURL())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &redisLink{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", opts.Addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			l.mu.Lock()
			l.conns = append(l.conns, c, up)
			l.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	t.Cleanup(l.cut)
	return l
}

// cut ends every relayed connection and accepts no more.
func (l *redisLink) cut() {
	_ = l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// TestAMintDuringARedisOutageIs503: a third mint on a task must announce the
// revocation of the oldest session to every replica through Redis; without
// Redis it is refused with a retryable 503 and changes nothing.
func TestAMintDuringARedisOutageIs503(t *testing.T) {
	t.Parallel()
	link := newRedisLink(t)
	opts, err := redis.ParseURL(testkit.RedisURL())
	require.NoError(t, err)
	opts.Addr = link.ln.Addr().String()
	opts.MaxRetries = -1
	opts.DialTimeout = time.Second
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	rd := testkit.Redis(t)
	rd.Client = client
	a := newTestAPIOn(t, testkit.Schema(t), rd)
	f := newAppToolFixture(t, a.Store.DB)

	var tokens []string
	for range 2 {
		r := a.mint(t, f.Tenant.HostToken, f.Step.ID)
		require.Equal(t, 201, r.Status)
		tokens = append(tokens, r.Body["session_token"].(string))
	}
	link.cut()
	r := a.mint(t, f.Tenant.HostToken, f.Step.ID)
	require.Equal(t, 503, r.Status, "body: %s", r.Raw)
	require.Equal(t, "a required service is unavailable; retry shortly", r.Body["error"])
	require.Equal(t, "2", r.Header.Get("Retry-After"), "a 503 says when to come back")
	for _, tok := range tokens {
		// The oldest was to be revoked; unannounced, it was not, here either.
		v := a.call(t, "POST", "/api/app-runtime/read", tok, map[string]any{"op": "no_such_op"})
		require.NotEqual(t, 401, v.Status, "both sessions still work on this replica: %s", v.Raw)
	}
	var live, revoked int64
	require.NoError(t, a.Store.DB.Model(&models.AppSession{}).Where("task_id = ? AND revoked_at IS NULL", f.Task.ID).Count(&live).Error)
	require.NoError(t, a.Store.DB.Model(&models.AppSession{}).Where("task_id = ? AND revoked_at IS NOT NULL", f.Task.ID).Count(&revoked).Error)
	require.Equal(t, int64(2), live, "the refused mint recorded no session")
	require.Zero(t, revoked, "and revoked none")
}
