package gateway_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// dnsStub is a DNS server on a loopback UDP port that answers every A query
// with the addresses it holds, in order, and every other query with no
// answer: a name whose resolution a test decides.
type dnsStub struct {
	conn    net.PacketConn
	answers []netip.Addr
}

func newDNSStub(t *testing.T, answers ...netip.Addr) *dnsStub {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &dnsStub{conn: conn, answers: answers}
	t.Cleanup(func() { conn.Close() })
	go s.serve()
	return s
}

func (s *dnsStub) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply := s.answer(buf[:n]); reply != nil {
			_, _ = s.conn.WriteTo(reply, from)
		}
	}
}

// answer builds the reply to one query (RFC 1035 §4.1).
func (s *dnsStub) answer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	question := q[12 : i+5]
	qtype := binary.BigEndian.Uint16(q[i+1:])
	var answers []netip.Addr
	if qtype == 1 { // A
		answers = s.answers
	}
	var b bytes.Buffer
	b.Write(q[0:2])             // id
	b.Write([]byte{0x81, 0x80}) // response, recursion desired and available
	b.Write([]byte{0, 1})       // one question
	_ = binary.Write(&b, binary.BigEndian, uint16(len(answers)))
	b.Write([]byte{0, 0, 0, 0}) // no authority, no additional
	b.Write(question)
	for _, a := range answers {
		b.Write([]byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4}) // the question's name, A, IN, TTL 1, 4 bytes
		v4 := a.As4()
		b.Write(v4[:])
	}
	return b.Bytes()
}

// resolver resolves every name through the stub.
func (s *dnsStub) resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// upstream is an httptest server on 127.0.0.1 that records what it received.
type upstream struct {
	*httptest.Server
	hits atomic.Int32
	mu   sync.Mutex
	reqs []received
}

// received is one request as the upstream saw it.
type received struct {
	Host, RequestURI, Method string
	Header                   http.Header
	Body                     string
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body.Bytes()))
		u.mu.Lock()
		u.reqs = append(u.reqs, received{Host: r.Host, RequestURI: r.RequestURI, Method: r.Method, Header: r.Header.Clone(), Body: body.String()})
		u.mu.Unlock()
		u.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last(t *testing.T) received {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	require.NotEmpty(t, u.reqs, "the upstream received nothing")
	return u.reqs[len(u.reqs)-1]
}

func (u *upstream) port() string {
	_, port, _ := net.SplitHostPort(u.Listener.Addr().String())
	return port
}

func jsonReply(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// logBuffer is a JSON log that tests read back (what callers are not told).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// requestCtx is a request's context carrying its request id.
func requestCtx(id string) context.Context {
	return logging.With(context.Background(), slog.String(logging.RequestID, id))
}

// env is a workspace with integrations in a rolled-back transaction, and a
// gateway that loads them from it.
type env struct {
	db      *gorm.DB
	box     *crypt.Box
	tenant  testkit.Tenant
	log     *logBuffer
	loader  *txIntegrations
	session map[string]string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := testkit.Tx(t)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	e := &env{db: st.DB, box: box, tenant: testkit.NewTenant(t, st.DB), log: &logBuffer{}}
	e.loader = &txIntegrations{db: st.DB}
	e.session = map[string]string{"task_id": "task-1", "agent_id": "agent-1", "step_id": "step-1", "workspace_id": e.tenant.Workspace.ID}
	return e
}

// gateway returns a gateway on loopback with o's other settings.
func (e *env) gateway(o gateway.Options) *gateway.Gateway {
	if o.Allow == nil {
		o.Allow = loopback
	}
	o.Integrations = e.loader
	o.Secrets = e.box
	o.Log = logging.New(e.log, slog.LevelDebug)
	return gateway.New(o)
}

// integration creates an integration of workspace with secrets.
func (e *env) integration(t *testing.T, workspaceID string, secrets map[string]any) models.Integration {
	t.Helper()
	sealed, err := e.box.SealJSON(secrets)
	require.NoError(t, err)
	i := models.Integration{ID: models.NewID(), WorkspaceID: workspaceID, Name: "crm", Kind: "rest", SecretsEnc: sealed}
	require.NoError(t, e.db.Create(&i).Error)
	return i
}

// rotate replaces an integration's secrets.
func (e *env) rotate(t *testing.T, id string, secrets map[string]any) {
	t.Helper()
	sealed, err := e.box.SealJSON(secrets)
	require.NoError(t, err)
	require.NoError(t, e.db.Model(&models.Integration{}).Where("id = ?", id).Update("secrets_enc", sealed).Error)
}

func (e *env) input(values map[string]any) gateway.CallInput {
	return gateway.CallInput{WorkspaceID: e.tenant.Workspace.ID, Session: e.session, Values: values}
}

// txIntegrations loads integrations from the test's transaction on every
// call (so a rotation applies at once), one query at a time as a
// transaction requires.
type txIntegrations struct {
	mu    sync.Mutex
	db    *gorm.DB
	loads atomic.Int32
}

func (l *txIntegrations) Integration(ctx context.Context, id string) (models.Integration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loads.Add(1)
	var row models.Integration
	err := l.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	return row, store.NotFound(err, "load integration", "integration")
}

// call is a GET http_call on url.
func call(url string) *bindingspec.HTTPCall {
	return &bindingspec.HTTPCall{Op: "lookup", Method: "GET", URL: url}
}
