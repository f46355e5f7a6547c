package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/openapicheck"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/worker"
)

// Waits of the tests: generous bounds (the machine is shared), short polls.
const (
	eventually = 30 * time.Second
	poll       = 50 * time.Millisecond
	// duplicateWindow is how long a test keeps watching after the first
	// webhook arrived, so that a second delivery would have time to show up.
	duplicateWindow = 1500 * time.Millisecond
)

// stack is one deployment: a platform on a schema and Redis prefix of the
// test's own, serving the API on loopback. Workers are started separately,
// so a test can decide when the outbox relay runs.
type stack struct {
	URL   string
	P     *platform.Platform
	Store *store.Store
	Redis testkit.RedisEnv
}

func newStack(t *testing.T) *stack {
	t.Helper()
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	s := &stack{URL: "http://" + ln.Addr().String(), Store: st, Redis: rd}
	s.P = s.newPlatform(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, api.New(s.P.APIServices()), ln, 2*time.Second) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, ignoreCanceled(<-done))
	})
	return s
}

// newPlatform builds a platform on the stack's database and Redis, as each
// process of a deployment builds its own; it is closed at cleanup.
func (s *stack) newPlatform(t *testing.T) *platform.Platform {
	t.Helper()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.PublicAPIURL = s.URL
	cfg.BundleBaseURL = s.URL + "/bundles"
	log := logging.New(io.Discard, slog.LevelError)
	if testing.Verbose() {
		log = logging.New(testWriter{t}, slog.LevelInfo)
	}
	p, err := platform.New(context.Background(), platform.Options{
		Config: cfg, Log: log, Store: s.Store, Redis: s.Redis.Client, KeyPrefix: s.Redis.Prefix, Queues: s.Redis.Queues,
	})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// startWorker runs a worker (its asynq servers and the outbox relay) on p
// until the returned stop is called or the test ends.
func startWorker(t *testing.T, p *platform.Platform) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(p.WorkerServices()).Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done, "the worker stops cleanly")
		})
	}
	t.Cleanup(stop)
	return stop
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

// reply is a decoded API reply.
type reply struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// call sends body (JSON-encoded unless it is []byte) with a bearer token and
// decodes the JSON reply. contentType defaults to application/json.
func (s *stack) call(t *testing.T, method, path, token string, body any, contentType ...string) reply {
	t.Helper()
	r, err := s.send(method, path, token, body, contentType...)
	require.NoError(t, err, "%s %s", method, path)
	return r
}

// send is call for goroutines other than the test's own, which must not
// stop the test: it returns the error instead.
func (s *stack) send(method, path, token string, body any, contentType ...string) (reply, error) {
	var sent []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		sent = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		sent = raw
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(sent)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		ct := "application/json"
		if len(contentType) > 0 {
			ct = contentType[0]
		}
		req.Header.Set("Content-Type", ct)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return reply{}, err
	}
	// Every exchange must match internal/openapi/openapi.json, so it cannot drift.
	if err := openapicheck.Check(req, sent, res.StatusCode, res.Header, raw); err != nil {
		return reply{}, err
	}
	out := reply{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	return out, nil
}

// must is call that requires the wanted status and returns the body.
func (s *stack) must(t *testing.T, want int, method, path, token string, body any, contentType ...string) map[string]any {
	t.Helper()
	r := s.call(t, method, path, token, body, contentType...)
	require.Equal(t, want, r.Status, "%s %s: %s", method, path, r.Raw)
	return r.Body
}

// delivery is one request the webhook receiver got.
type delivery struct {
	Header http.Header
	Body   []byte
}

// receiver is the agent platform's webhook endpoint: it records every POST
// and answers 204.
type receiver struct {
	URL string

	mu   sync.Mutex
	got  []delivery
	srv  *httptest.Server
	path string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{path: "/hooks/appruntime"}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.Method != http.MethodPost || req.URL.Path != r.path {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, delivery{Header: req.Header.Clone(), Body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL + r.path
	return r
}

// deliveries returns what was received so far.
func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitOne waits for the first delivery, then keeps watching for
// duplicateWindow, and returns every delivery received by then.
func (r *receiver) waitOne(t *testing.T) []delivery {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.deliveries()) > 0 }, eventually, poll, "no webhook arrived")
	time.Sleep(duplicateWindow)
	return r.deliveries()
}
