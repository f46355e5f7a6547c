package files_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestManagedURLRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	file := f.upload(t, f.task, "invoice.pdf", documenttest.PDF("a"))

	raw, expires := f.svc.URL(file)
	require.Equal(t, f.clock.Now().Add(files.URLLifetime), expires)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "api.example.test", u.Host)
	require.Equal(t, "/api/files/"+file.ID, u.Path)
	require.Equal(t, f.task, u.Query().Get("task"), "the URL names the file's task")

	got, err := f.svc.VerifyURL(ctx, raw)
	require.NoError(t, err)
	require.Equal(t, file.ID, got.ID)
	got, err = f.svc.VerifyURLForTask(ctx, raw, f.task)
	require.NoError(t, err)
	require.Equal(t, file.ID, got.ID)

	// Still good one second before it expires, refused from then on.
	f.clock.Advance(files.URLLifetime - time.Second)
	_, err = f.svc.VerifyURL(ctx, raw)
	require.NoError(t, err)
	f.clock.Advance(time.Second)
	_, err = f.svc.VerifyURL(ctx, raw)
	require.True(t, apperr.Is(err, apperr.Forbidden), "%v", err)
	require.ErrorContains(t, err, "expired")
}

// TestManagedURLRefusals: anything but an intact, unexpired URL of this
// deployment's API naming the session's own task is refused.
func TestManagedURLRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	file := f.upload(t, f.task, "invoice.pdf", documenttest.PDF("a"))
	theirs := f.upload(t, f.other, "theirs.pdf", documenttest.PDF("b"))
	raw, _ := f.svc.URL(file)
	u, _ := url.Parse(raw)
	q := u.Query()

	with := func(edit func(u *url.URL, q url.Values)) string {
		c := *u
		cq := url.Values{}
		for k, v := range q {
			cq[k] = append([]string(nil), v...)
		}
		edit(&c, cq)
		c.RawQuery = cq.Encode()
		return c.String()
	}
	exp, _ := strconv.ParseInt(q.Get("exp"), 10, 64)
	sig := q.Get("sig")
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'A' {
			b[0] = 'B'
		} else {
			b[0] = 'A'
		}
		return string(b)
	}
	other, err := files.New(files.Options{Store: f.st, Blobs: f.blobs, SecretsKey: []byte("another-deployment-key-0123456789"), PublicAPIURL: f.publicAPIURL, Now: f.clock.Now})
	require.NoError(t, err)
	foreign, _ := other.URL(file)

	cases := map[string]string{
		"tampered signature":   with(func(_ *url.URL, q url.Values) { q.Set("sig", flip(sig)) }),
		"signature cut":        with(func(_ *url.URL, q url.Values) { q.Set("sig", sig[:20]) }),
		"no signature":         with(func(_ *url.URL, q url.Values) { q.Del("sig") }),
		"expiry pushed back":   with(func(_ *url.URL, q url.Values) { q.Set("exp", strconv.FormatInt(exp+3600, 10)) }),
		"expiry with a zero":   with(func(_ *url.URL, q url.Values) { q.Set("exp", "0"+q.Get("exp")) }),
		"task swapped":         with(func(_ *url.URL, q url.Values) { q.Set("task", f.other) }),
		"file swapped":         with(func(u *url.URL, _ url.Values) { u.Path = "/api/files/" + theirs.ID }),
		"parameter twice":      with(func(_ *url.URL, q url.Values) { q.Add("task", f.task) }),
		"extra parameter":      with(func(_ *url.URL, q url.Values) { q.Set("download", "1") }),
		"another host":         with(func(u *url.URL, _ url.Values) { u.Host = "evil.example" }),
		"a lookalike host":     with(func(u *url.URL, _ url.Values) { u.Host = "api.example.test.evil.example" }),
		"another port":         with(func(u *url.URL, _ url.Values) { u.Host = "api.example.test:8443" }),
		"plain http":           with(func(u *url.URL, _ url.Values) { u.Scheme = "http" }),
		"user info":            with(func(u *url.URL, _ url.Values) { u.User = url.User("api.example.test") }),
		"another path":         with(func(u *url.URL, _ url.Values) { u.Path = "/api/bundles/" + file.ID }),
		"path traversal":       with(func(u *url.URL, _ url.Values) { u.Path = "/api/files/../files/" + file.ID }),
		"fragment":             raw + "#x",
		"signed elsewhere":     foreign,
		"not a URL":            "invoice.pdf",
		"a file path":          "/api/files/" + file.ID + "?" + u.RawQuery,
		"data URL":             "data:application/pdf;base64,JVBERi0=",
		"empty":                "",
		"arbitrary https":      "https://example.com/invoice.pdf",
		"the signature in use": strings.Replace(raw, "sig=", "sig=x", 1),
	}
	for name, candidate := range cases {
		_, err := f.svc.VerifyURL(ctx, candidate)
		require.True(t, apperr.Is(err, apperr.Forbidden), "%s: %v", name, err)
		_, err = f.svc.VerifyURLForTask(ctx, candidate, f.task)
		require.True(t, apperr.Is(err, apperr.Forbidden), "%s: %v", name, err)
	}

	// Host names compare without case, and an explicit default port is the same origin.
	for _, host := range []string{"API.Example.Test", "api.example.test:443"} {
		_, err := f.svc.VerifyURL(ctx, with(func(u *url.URL, _ url.Values) { u.Host = host }))
		require.NoError(t, err, host)
	}

	// A good URL of another task's file: valid, but not for this session.
	theirsURL, _ := f.svc.URL(theirs)
	_, err = f.svc.VerifyURL(ctx, theirsURL)
	require.NoError(t, err)
	_, err = f.svc.VerifyURLForTask(ctx, theirsURL, f.task)
	require.True(t, apperr.Is(err, apperr.Forbidden), "%v", err)
	require.ErrorContains(t, err, "another task")

	// A URL of a file that is gone: 404.
	require.NoError(t, f.st.DB.Delete(&models.File{}, "id = ?", file.ID).Error)
	_, err = f.svc.VerifyURL(ctx, raw)
	require.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
}

func TestManagedURLUnderAPathPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	svc, err := files.New(files.Options{Store: f.st, Blobs: f.blobs, SecretsKey: testkit.TestKey, PublicAPIURL: "http://127.0.0.1:8080/runtime/", Now: f.clock.Now})
	require.NoError(t, err)
	file := f.upload(t, f.task, "a.txt", []byte("a"))
	raw, _ := svc.URL(file)
	require.True(t, strings.HasPrefix(raw, "http://127.0.0.1:8080/runtime/api/files/"+file.ID+"?"), raw)
	_, err = svc.VerifyURL(context.Background(), raw)
	require.NoError(t, err)
	_, err = svc.VerifyURL(context.Background(), strings.Replace(raw, "/runtime/", "/", 1))
	require.True(t, apperr.Is(err, apperr.Forbidden), "%v", err)

	for _, bad := range []string{"", "ftp://x", "https://", "https://h/?q=1", "https://user@h"} {
		_, err := files.New(files.Options{Store: f.st, Blobs: f.blobs, SecretsKey: testkit.TestKey, PublicAPIURL: bad})
		require.Error(t, err, bad)
	}
	_, err = files.New(files.Options{Store: f.st, Blobs: f.blobs, SecretsKey: []byte("short"), PublicAPIURL: "https://h"})
	require.ErrorContains(t, err, "SECRETS_KEY")
}

func ticketOf(t *testing.T, f *fixture, raw string) files.Ticket {
	t.Helper()
	ticket, err := f.svc.ParseURL(raw)
	require.NoError(t, err)
	return ticket
}

func TestServe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	pdf := documenttest.PDF("a")
	cases := []struct {
		name, file  string
		data        []byte
		contentType string
		disposition string
		sandboxed   bool
	}{
		{"pdf", "Rechnung März.pdf", pdf, "application/pdf", `inline; filename*=utf-8''Rechnung%20M%C3%A4rz.pdf`, false},
		{"image", "photo.png", pngBytes(t), "image/png", `inline; filename=photo.png`, true},
		{"text", `say "hi".txt`, []byte("hi\n<script>alert(1)</script>"), "text/plain; charset=utf-8", `attachment; filename="say \"hi\".txt"`, true},
		{"csv", "rows.csv", []byte("a,b\n"), "text/csv; charset=utf-8", `attachment; filename=rows.csv`, true},
		{"json", "data.json", []byte(`{"a":1}`), "application/json", `attachment; filename=data.json`, true},
	}
	for _, tc := range cases {
		file := f.upload(t, f.task, tc.file, tc.data)
		raw, _ := f.svc.URL(file)
		d, err := f.svc.Serve(ctx, ticketOf(t, f, raw))
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.data, d.Body, tc.name)
		require.Equal(t, tc.contentType, d.Header.Get("Content-Type"), tc.name)
		require.Equal(t, tc.disposition, d.Header.Get("Content-Disposition"), tc.name)
		require.Equal(t, "nosniff", d.Header.Get("X-Content-Type-Options"), tc.name)
		require.Equal(t, "no-referrer", d.Header.Get("Referrer-Policy"), tc.name)
		require.Equal(t, "private, max-age=600", d.Header.Get("Cache-Control"), tc.name)
		if tc.sandboxed {
			require.True(t, strings.HasPrefix(d.Header.Get("Content-Security-Policy"), "sandbox; default-src 'none'"), tc.name)
		} else {
			require.Empty(t, d.Header.Get("Content-Security-Policy"), "browsers' PDF viewers do not run sandboxed")
		}
	}

	file := f.upload(t, f.task, "a.pdf", pdf)
	raw, _ := f.svc.URL(file)
	ticket := ticketOf(t, f, raw)

	f.clock.Advance(4 * time.Minute)
	d, err := f.svc.Serve(ctx, ticket)
	require.NoError(t, err)
	require.Equal(t, "private, max-age=360", d.Header.Get("Cache-Control"), "cached no longer than the URL lives")

	tampered := ticket
	tampered.TaskID = f.other
	_, err = f.svc.Serve(ctx, tampered)
	require.True(t, apperr.Is(err, apperr.Forbidden), "%v", err)

	f.clock.Advance(6 * time.Minute)
	_, err = f.svc.Serve(ctx, ticket)
	require.True(t, apperr.Is(err, apperr.Forbidden), "expired: %v", err)
}
