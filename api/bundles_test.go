package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// fetch GETs a served bundle URL without a token.
func fetch(t *testing.T, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	checkOpenAPI(t, req, nil, res.StatusCode, res.Header, body)
	return res, body
}

func TestBundleUploadAndServe(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	v1 := []byte(`<!doctype html><html><body><script>document.body.append("v1")</script></body></html>`)

	r := a.call(t, "POST", "/api/admin/bundles?name=invoice-review", tn.AdminToken, v1, "Content-Type", "text/html; charset=utf-8")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	require.EqualValues(t, 1, r.Body["version"])
	require.Equal(t, sha(v1), r.Body["sha256"])
	require.EqualValues(t, len(v1), r.Body["size"])
	require.Equal(t, "text/html; charset=utf-8", r.Body["content_type"])
	require.Equal(t, "invoice-review", r.Body["name"])
	url1 := a.URL + "/bundles/" + id + "/1"
	require.Equal(t, url1, r.Body["url"], "the URL shape the mint builds: BUNDLE_BASE_URL/<id>/<version>")

	res, body := fetch(t, url1)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, v1, body)
	require.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	require.Equal(t, `"`+sha(v1)+`"`, res.Header.Get("ETag"))
	require.Equal(t, "public, max-age=31536000, immutable", res.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	csp := res.Header.Get("Content-Security-Policy")
	for _, directive := range []string{
		"default-src 'none'",
		"script-src 'self' " + a.URL + " 'unsafe-inline' " + a.URL + "/sdk/",
		"style-src 'self' " + a.URL + " 'unsafe-inline'",
		"connect-src " + a.URL + "/api/app-runtime/",
		"frame-src 'none'", "object-src 'none'", "base-uri 'none'", "form-action 'none'",
		"sandbox allow-scripts",
	} {
		require.Contains(t, strings.Split(csp, "; "), directive, csp)
	}

	res, body = fetch(t, url1, "If-None-Match", `"`+sha(v1)+`"`)
	require.Equal(t, 304, res.StatusCode, "a cached copy is still good")
	require.Empty(t, body)

	// Version 2, a script bundle under its legacy media type.
	v2 := []byte(`export const version = 2;`)
	r = a.call(t, "POST", "/api/admin/bundles/"+id+"/versions", tn.AdminToken, v2, "Content-Type", "application/javascript")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	require.EqualValues(t, 2, r.Body["version"])
	require.Equal(t, id, r.Body["id"])
	require.Equal(t, "invoice-review", r.Body["name"], "a version keeps the bundle's name")
	res, body = fetch(t, a.URL+"/bundles/"+id+"/2")
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, v2, body)
	require.Equal(t, "text/javascript; charset=utf-8", res.Header.Get("Content-Type"))
	require.Equal(t, `"`+sha(v2)+`"`, res.Header.Get("ETag"))
	res, body = fetch(t, url1)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, v1, body, "version 1 is unchanged")

	r = a.call(t, "GET", "/api/admin/bundles/"+id, tn.AdminToken, nil)
	require.Equal(t, 200, r.Status)
	require.EqualValues(t, 2, r.Body["latest_version"])
	versions := r.Body["versions"].([]any)
	require.Len(t, versions, 2)
	require.Equal(t, sha(v1), versions[0].(map[string]any)["sha256"])
	require.Equal(t, sha(v2), versions[1].(map[string]any)["sha256"])
	list := admList(t, a.call(t, "GET", "/api/admin/bundles", tn.AdminToken, nil), "bundles")
	require.Len(t, list, 1)
	require.EqualValues(t, 2, list[0]["version"], "the list shows the newest version")

	for _, path := range []string{"/bundles/" + id + "/3", "/bundles/" + id + "/0", "/bundles/" + id + "/x", "/bundles/" + models.NewID() + "/1", "/bundles/nope/1"} {
		res, _ := fetch(t, a.URL+path)
		require.Equal(t, 404, res.StatusCode, path)
	}
	require.Equal(t, []string{"bundle.create", "bundle.version"}, admAudit(t, a, id))
}

func TestBundleUploadRefusals(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	atCap := []byte("<p>" + strings.Repeat("a", 4<<20-7) + "</p>")
	require.Len(t, atCap, 4<<20)

	r := a.call(t, "POST", "/api/admin/bundles?name=big", tn.AdminToken, atCap, "Content-Type", "text/html")
	require.Equal(t, 201, r.Status, "exactly 4 MiB is accepted")
	id := admID(t, r)

	for _, tc := range []struct {
		name, path, contentType string
		body                    []byte
		status                  int
		msg                     string
	}{
		{"one byte over 4 MiB", "/api/admin/bundles?name=big", "text/html", append(atCap, ' '), 413, "a bundle is at most 4194304 bytes"},
		{"a new version over 4 MiB", "/api/admin/bundles/" + id + "/versions", "text/html", append(atCap, ' '), 413, "a bundle is at most 4194304 bytes"},
		{"no name", "/api/admin/bundles", "text/html", []byte("<p>x</p>"), 400, "name is required"},
		{"json", "/api/admin/bundles?name=x", "application/json", []byte(`{"content":"<p>"}`), 400, "Content-Type application/json is not a bundle type"},
		{"octet stream", "/api/admin/bundles?name=x", "application/octet-stream", []byte("<p>x</p>"), 400, "is not a bundle type"},
		{"no content type", "/api/admin/bundles?name=x", "", []byte("<p>x</p>"), 400, "is not a media type"},
		{"latin-1", "/api/admin/bundles?name=x", "text/html; charset=iso-8859-1", []byte("<p>x</p>"), 400, "charset iso-8859-1 is not supported"},
		{"not utf-8", "/api/admin/bundles?name=x", "text/html", []byte{'<', 0xff, 0xfe, '>'}, 400, "not valid UTF-8"},
		{"empty", "/api/admin/bundles?name=x", "text/html", []byte{}, 400, "the bundle is empty"},
		{"unknown bundle", "/api/admin/bundles/" + models.NewID() + "/versions", "text/html", []byte("<p>x</p>"), 404, "bundle not found"},
	} {
		headers := []string{"Content-Type", tc.contentType}
		r := a.call(t, "POST", tc.path, tn.AdminToken, tc.body, headers...)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		require.Contains(t, r.Body["error"], tc.msg, tc.name)
	}
	r = a.call(t, "GET", "/api/admin/bundles/"+id, tn.AdminToken, nil)
	require.Len(t, r.Body["versions"], 1, "no refused upload left a version")
	var blobs int64
	require.NoError(t, a.Store.DB.Model(&models.Blob{}).Count(&blobs).Error)
	require.EqualValues(t, 1, blobs, "nor its bytes")
}

func TestBundleDeleteRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	r := a.call(t, "POST", "/api/admin/bundles?name=used", tn.AdminToken, []byte("<p>used</p>"), "Content-Type", "text/html")
	require.Equal(t, 201, r.Status)
	id := admID(t, r)
	b := models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "b", BindingKind: "rest", AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, a.Store.DB.Create(&b).Error)
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, DisplayName: "T",
		BaseTool: models.BaseAppTool, BundleID: &id, BindingID: &b.ID}
	require.NoError(t, a.Store.DB.Create(&tool).Error)

	r = a.call(t, "DELETE", "/api/admin/bundles/"+id, tn.AdminToken, nil)
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Contains(t, r.Body["error"], "is used by 1 configured tool")
	require.NoError(t, a.Store.DB.Delete(&tool).Error)
	require.Equal(t, 204, a.call(t, "DELETE", "/api/admin/bundles/"+id, tn.AdminToken, nil).Status)
	res, _ := fetch(t, a.URL+"/bundles/"+id+"/1")
	require.Equal(t, 404, res.StatusCode)
	var blobs int64
	require.NoError(t, a.Store.DB.Model(&models.Blob{}).Count(&blobs).Error)
	require.Zero(t, blobs, "its bytes are gone")
}
