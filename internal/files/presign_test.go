package files_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestServePresigned: with BLOB_PRESIGN on a bucket, a PDF or an image is
// a redirect to a presigned GET that answers with the same headers; other
// types, and blobs only the database holds, still stream; the URL's own
// checks come first.
func TestServePresigned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testkit.NewS3Server(t)
	srv.MakeBucket(t, "files")
	cfg, err := storage.ParseS3URL(srv.URL("files", "p"))
	require.NoError(t, err)
	cfg.AccessKey, cfg.SecretKey = srv.AccessKey, srv.SecretKey
	bucket, err := storage.NewS3(ctx, cfg)
	require.NoError(t, err)

	f := newFixture(t)
	older := storage.NewDatabase(f.st.DB)
	layered := &storage.Layered{Primary: bucket, Older: older}
	f.svc, err = files.New(files.Options{Store: f.st, Blobs: layered, SecretsKey: testkit.TestKey,
		PublicAPIURL: f.publicAPIURL, Now: time.Now, Presign: true})
	require.NoError(t, err)

	fetch := func(u string) (*http.Response, []byte) {
		res, err := http.Get(u)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		return res, body
	}

	pdf := documenttest.PDF("presigned")
	file := f.upload(t, f.task, "Rechnung März.pdf", pdf)
	raw, _ := f.svc.URL(file)
	d, err := f.svc.Serve(ctx, ticketOf(t, f, raw))
	require.NoError(t, err)
	require.NotEmpty(t, d.Redirect, "a PDF in the bucket is a redirect")
	require.Nil(t, d.Body)
	require.Equal(t, "no-referrer", d.Header.Get("Referrer-Policy"))
	res, body := fetch(d.Redirect)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.True(t, bytes.Equal(pdf, body))
	require.Equal(t, "application/pdf", res.Header.Get("Content-Type"))
	require.Equal(t, `inline; filename*=utf-8''Rechnung%20M%C3%A4rz.pdf`, res.Header.Get("Content-Disposition"))
	require.Regexp(t, `^private, max-age=(599|600)$`, res.Header.Get("Cache-Control"))

	// The bucket's signature covers the overrides: changing the type the
	// bucket answers with is refused.
	tampered := d.Redirect + "&response-content-type=text%2Fhtml"
	res, _ = fetch(tampered)
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	text := f.upload(t, f.task, "notes.txt", []byte("plain notes\n"))
	raw, _ = f.svc.URL(text)
	d, err = f.svc.Serve(ctx, ticketOf(t, f, raw))
	require.NoError(t, err)
	require.Empty(t, d.Redirect, "text keeps its sandbox CSP: it streams")
	require.Equal(t, "plain notes\n", string(d.Body))

	// A PDF stored before the bucket was configured lives in the database:
	// it streams rather than redirecting to a 404.
	old := f.upload(t, f.task, "old.pdf", pdf)
	require.NoError(t, older.Put(ctx, old.StorageKey, "", pdf))
	require.NoError(t, bucket.Delete(ctx, old.StorageKey))
	raw, _ = f.svc.URL(old)
	d, err = f.svc.Serve(ctx, ticketOf(t, f, raw))
	require.NoError(t, err)
	require.Empty(t, d.Redirect)
	require.True(t, bytes.Equal(pdf, d.Body))

	// Presigning needs a store that presigns.
	_, err = files.New(files.Options{Store: f.st, Blobs: older, SecretsKey: testkit.TestKey,
		PublicAPIURL: f.publicAPIURL, Presign: true})
	require.ErrorContains(t, err, "BLOB_PRESIGN needs a blob store that presigns")
}
