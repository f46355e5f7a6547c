package gateway_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/gateway"
)

// gzipped compresses n zero bytes (a bomb when n is large: ~1000:1).
func gzipped(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	chunk := make([]byte, 64<<10)
	for n > 0 {
		k := min(n, len(chunk))
		_, err := zw.Write(chunk[:k])
		require.NoError(t, err)
		n -= k
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func TestReplyCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gateway(gateway.Options{})
	exactly := strings.Repeat("a", gateway.MaxReplyBytes)
	bomb := gzipped(t, 16<<20) // 16 times the cap once inflated
	require.Less(t, len(bomb), 50<<10, "the bomb is small on the wire")

	withLength := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write([]byte(body))
		}
	}
	chunked := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i < len(body); i += 100 << 10 {
				_, _ = w.Write([]byte(body[i:min(i+100<<10, len(body))]))
				w.(http.Flusher).Flush()
			}
		}
	}
	gzipBody := func(raw []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(raw)
		}
	}
	cases := []struct {
		name    string
		handler http.HandlerFunc
		headers map[string]string
		status  int
		text    string // "" with body set: a JSON body
		body    string
	}{
		{"exactly 1 MiB", withLength(exactly), nil, 200, exactly, ""},
		{"1 MiB + 1", withLength(exactly + "a"), nil, 200, gateway.ReplyTooLargeNote, ""},
		{"exactly 1 MiB, no Content-Length", chunked(exactly), nil, 200, exactly, ""},
		{"over 1 MiB, no Content-Length", chunked(exactly + strings.Repeat("b", 300<<10)), nil, 200, gateway.ReplyTooLargeNote, ""},
		{"an upstream error over the cap keeps its status", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(500)
			_, _ = w.Write([]byte(exactly + "!"))
		}, nil, 500, gateway.ReplyTooLargeNote, ""},
		{"a small gzip reply is decoded", gzipBody(gzipBytes(t, `{"ok":true}`)), nil, 200, "", `{"ok":true}`},
		{"a gzip bomb", gzipBody(bomb), nil, 200, gateway.ReplyTooLargeNote, ""},
		// With a Range header the transport asks for no compression, so a
		// gzip reply arrives undecoded and the gateway decodes it itself.
		{"an unrequested gzip bomb", gzipBody(bomb), map[string]string{"Range": "bytes=0-"}, 200, gateway.ReplyTooLargeNote, ""},
		{"an unrequested small gzip reply", gzipBody(gzipBytes(t, `[1,2]`)), map[string]string{"Range": "bytes=0-"}, 200, "", `[1,2]`},
	}
	for _, tc := range cases {
		up := newUpstream(t, tc.handler)
		c := call(up.URL + "/big")
		c.Headers = tc.headers
		res, err := g.Call(context.Background(), c, e.input(nil))
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.status, res.Status, tc.name)
		if tc.body != "" {
			require.Nil(t, res.Text, tc.name)
			require.JSONEq(t, tc.body, string(res.Body), tc.name)
			continue
		}
		require.NotNil(t, res.Text, tc.name)
		require.Nil(t, res.Body, tc.name)
		require.Equal(t, len(tc.text), len(*res.Text), tc.name)
		require.True(t, *res.Text == tc.text, tc.name)
	}
	require.Contains(t, e.log.String(), "reply over the cap discarded")
}

func gzipBytes(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}
