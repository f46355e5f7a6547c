package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// newS3API starts a versitygw with an empty bucket and an API whose blobs
// live there (BLOB_URL, no BLOB_DIR; see docs/deploy.md#choose-a-blob-store).
// It sets the AWS credentials in the environment, so its callers cannot
// run in parallel.
func newS3API(t *testing.T, bucket string, opts ...apiOption) (*testkit.S3Server, *testAPI) {
	t.Helper()
	srv := testkit.NewS3Server(t)
	srv.MakeBucket(t, bucket)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	opts = append([]apiOption{func(c *config.Config) { c.BlobDir, c.BlobURL = "", srv.URL(bucket, "") }}, opts...)
	return srv, newTestAPI(t, opts...)
}

// TestManagedURLRedirectsToThePresignedBucket is BLOB_PRESIGN wired end to
// end: an agent uploads a PDF to a bucket-backed deployment, its managed
// URL answers 302 to the bucket, and the bucket serves the bytes; a
// tampered URL is still refused here, before any redirect.
func TestManagedURLRedirectsToThePresignedBucket(t *testing.T) { // not parallel: sets the AWS environment
	srv, a := newS3API(t, "api-files", func(c *config.Config) { c.BlobPresign = true })
	tn := testkit.NewTenant(t, a.Store.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, a.Store.DB.Create(&task).Error)
	pdf := documenttest.PDF("one")
	body, ct := multipartFile(t, "file", "invoice.pdf", pdf)
	r := a.call(t, "POST", "/api/agent/tasks/"+task.ID+"/files", tn.AgentToken, body, "Content-Type", ct)
	require.Equal(t, 201, r.Status, string(r.Raw))
	managed := r.Body["url"].(string)

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(managed)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.True(t, strings.HasPrefix(res.Header.Get("Location"), srv.Endpoint+"/api-files/files/"), res.Header.Get("Location"))
	require.Equal(t, "no-referrer", res.Header.Get("Referrer-Policy"))

	res, err = http.Get(managed)
	require.NoError(t, err)
	got, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.True(t, bytes.Equal(pdf, got), "the bucket serves the file's bytes")
	require.Equal(t, "application/pdf", res.Header.Get("Content-Type"))

	res, err = noFollow.Get(strings.Replace(managed, "sig=", "sig=x", 1))
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusForbidden, res.StatusCode, "the URL's own signature is checked before any redirect")
}
