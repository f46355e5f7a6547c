package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/testkit"
)

// blobsMigrate runs `appruntime blobs migrate args…` on the platform
// database at dbURL and returns its stdout, stderr and exit code.
func blobsMigrate(t *testing.T, dbURL string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"blobs", "migrate"}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return stdout.String(), stderr.String(), 0
}

// TestBlobsMigrateCommand moves the database's blobs into a directory as
// an operator would before setting BLOB_DIR, runs it again to show it
// resumes, and refuses a command line it cannot act on.
func TestBlobsMigrateCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.Schema(t)
	dbURL := testkit.URLOf(st)
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<20/16) // a 4 MiB bundle
	require.NoError(t, storage.NewDatabase(st.DB).Put(ctx, "bundles/b1/v1", "", big))
	require.NoError(t, storage.NewDatabase(st.DB).Put(ctx, "files/t1/f1", "", []byte("%PDF-1.7")))
	dir := filepath.Join(t.TempDir(), "blobs")

	stdout, stderr, code := blobsMigrate(t, dbURL, "--from", "database", "--to", "dir:"+dir)
	require.Equal(t, 0, code, stderr)
	var rep storage.MigrateReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, storage.MigrateReport{Copied: 2, Bytes: int64(len(big) + 8)}, rep)
	require.Contains(t, stderr, "copied bundles/b1/v1")
	got, err := os.ReadFile(filepath.Join(dir, "bundles", "b1", "v1"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(big, got))

	stdout, _, code = blobsMigrate(t, dbURL, "--from", "database", "--to", "dir:"+dir, "--quiet")
	require.Equal(t, 0, code)
	require.JSONEq(t, `{"copied":0,"present":2,"bytes":0}`, stdout)

	_, stderr, code = blobsMigrate(t, dbURL, "--from", "database", "--to", "dir:relative")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `--to: "dir:relative": want dir:/absolute/path`)
	_, stderr, code = blobsMigrate(t, dbURL, "--from", "database", "--to", "database")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "name the same store")
	_, stderr, code = blobsMigrate(t, dbURL, "--from", "database")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "usage: appruntime blobs migrate")
}
