package api_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestABundleAtTheCapRoundTripsThroughS3 is issue 28 §3's 4 MiB round trip
// on a bucket-backed deployment: a bundle of exactly MaxBundleBytes is
// uploaded through the API, stored as one object of the bucket with its
// bytes, and served back byte-identical; one byte more is a 413 that leaves
// no object and no bundle row.
func TestABundleAtTheCapRoundTripsThroughS3(t *testing.T) { // not parallel: sets the AWS environment
	srv, a := newS3API(t, "api-bundles")
	tn := testkit.NewTenant(t, a.Store.DB)
	// Multi-byte UTF-8 throughout, so a byte lost or reordered on the way
	// shows in the sha256, padded with ASCII to exactly the cap.
	line := "<p>facture é ✓ 42</p>\n"
	atCap := []byte(strings.Repeat(line, bundle.MaxBundleBytes/len(line)))
	atCap = append(atCap, strings.Repeat(" ", bundle.MaxBundleBytes-len(atCap))...)
	require.Len(t, atCap, bundle.MaxBundleBytes)

	r := a.call(t, "POST", "/api/admin/bundles?name=at-cap", tn.AdminToken, atCap, "Content-Type", "text/html; charset=utf-8")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	require.EqualValues(t, bundle.MaxBundleBytes, r.Body["size"])
	require.Equal(t, sha(atCap), r.Body["sha256"])

	objects := bucketObjects(t, srv, "api-bundles")
	require.Len(t, objects, 1, "the bundle is one object of the bucket")
	require.True(t, strings.HasPrefix(objects[0], "bundles/"+id+"/"), objects[0])
	stored, err := os.ReadFile(filepath.Join(srv.Dir, "api-bundles", objects[0]))
	require.NoError(t, err)
	require.Equal(t, sha(atCap), sha(stored), "the object holds the bundle's bytes")
	var dbBlobs int64
	require.NoError(t, a.Store.DB.Model(&models.Blob{}).Count(&dbBlobs).Error)
	require.Zero(t, dbBlobs, "nothing went to the database store")

	res, body := fetch(t, a.URL+"/bundles/"+id+"/1")
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, sha(atCap), sha(body), "the serving route answers the bytes uploaded")
	require.Equal(t, `"`+sha(atCap)+`"`, res.Header.Get("ETag"))

	over := append(append([]byte{}, atCap...), '\n')
	for _, path := range []string{"/api/admin/bundles?name=over", "/api/admin/bundles/" + id + "/versions"} {
		r = a.call(t, "POST", path, tn.AdminToken, over, "Content-Type", "text/html; charset=utf-8")
		require.Equal(t, 413, r.Status, "%s: %s", path, r.Raw)
		require.Contains(t, r.Body["error"], "a bundle is at most 4194304 bytes", path)
	}
	require.Equal(t, objects, bucketObjects(t, srv, "api-bundles"), "a refused upload stores no object")
	var rows int64
	require.NoError(t, a.Store.DB.Model(&models.Bundle{}).Where("workspace_id = ?", tn.Workspace.ID).Count(&rows).Error)
	require.EqualValues(t, 1, rows, "nor a bundle row")
}

// bucketObjects lists the keys of a bucket of srv straight from the
// server's posix backend (one file per object; dot-directories are
// versitygw's own bookkeeping), so the test sees the bucket itself rather
// than what appruntime's store reports.
func bucketObjects(t *testing.T, srv *testkit.S3Server, bucket string) []string {
	t.Helper()
	root := filepath.Join(srv.Dir, bucket)
	var keys []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return keys
}
