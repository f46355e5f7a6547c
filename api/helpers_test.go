package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
)

// testAPI is a real API server on a loopback port, on a schema and Redis
// prefix of the test's own.
type testAPI struct {
	URL   string
	P     *platform.Platform
	Store *store.Store
	Redis testkit.RedisEnv
}

// apiOption adjusts the configuration before the platform is built.
type apiOption func(*config.Config)

func newTestAPI(t *testing.T, opts ...apiOption) *testAPI {
	t.Helper()
	st := testkit.Schema(t)
	return newTestAPIOn(t, st, testkit.Redis(t), opts...)
}

// newTestAPIOn starts an API on an existing store and Redis environment, so a
// test can run two replicas side by side.
func newTestAPIOn(t *testing.T, st *store.Store, rd testkit.RedisEnv, opts ...apiOption) *testAPI {
	t.Helper()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	for _, o := range opts {
		o(cfg)
	}
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	cfg.PublicAPIURL = url
	cfg.BundleBaseURL = url + "/bundles"
	log := logging.New(io.Discard, slog.LevelError)
	if testing.Verbose() {
		log = logging.New(testWriter{t}, slog.LevelDebug)
	}
	p, err := platform.New(context.Background(), platform.Options{
		Config: cfg, Log: log, Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix, Queues: rd.Queues,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, api.New(p.APIServices()), ln, 2e9) }()
	t.Cleanup(func() {
		cancel()
		<-done
		p.Close()
	})
	return &testAPI{URL: url, P: p, Store: st, Redis: rd}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

// response is a decoded reply.
type response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// call sends a JSON request with a bearer token (when not empty) and decodes the reply.
func (a *testAPI) call(t *testing.T, method, path, token string, body any, headers ...string) response {
	t.Helper()
	var sent []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		sent = b
	case string:
		sent = []byte(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		sent = raw
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(sent)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	// A body over a route's cap is answered 413 before it is read, and the
	// connection closed with the rest unread: the client may see that close
	// as a reset before it reads the answer. Such a body is sent again.
	for try := 1; err != nil && len(sent) > 64<<10 && try < 5 && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)); try++ {
		req.Body = io.NopCloser(bytes.NewReader(sent))
		res, err = http.DefaultClient.Do(req)
	}
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	// Every exchange must match internal/openapi/openapi.json, so it cannot drift.
	checkOpenAPI(t, req, sent, res.StatusCode, res.Header, raw)
	_ = json.Unmarshal(raw, &out.Body)
	return out
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	r := a.call(t, "GET", "/healthz", "", nil)
	require.Equal(t, 200, r.Status)
	r = a.call(t, "GET", "/readyz", "", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, true, r.Body["ready"])
}
