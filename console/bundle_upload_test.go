package console_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bundle"
)

// postMultipart submits fields and, when fileName is set, a file part to
// path, with the CSRF token of the last page read.
func postMultipart(cl *client, path string, fields map[string]string, fileName, fileType string, file []byte) page {
	cl.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(cl.t, w.WriteField("csrf", cl.csrf))
	for k, v := range fields {
		require.NoError(cl.t, w.WriteField(k, v))
	}
	if fileName != "" {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+fileName+`"`)
		h.Set("Content-Type", fileType)
		part, err := w.CreatePart(h)
		require.NoError(cl.t, err)
		_, err = part.Write(file)
		require.NoError(cl.t, err)
	}
	require.NoError(cl.t, w.Close())
	req, err := http.NewRequest(http.MethodPost, cl.base+path, &body)
	require.NoError(cl.t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	return cl.do(req)
}

// TestUploadBundleVersionsFromTheConsole uploads a file and pasted text as
// new versions (audited as the API's uploads are), sees their sha256 and
// size and the tool that mounts the bundle, previews one in the artifact
// sandbox, and is refused, with the pasted text kept, for a bad type, a
// bundle over 4 MiB and a missing CSRF token.
func TestUploadBundleVersionsFromTheConsole(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	ws := c.Tenant.Workspace.ID
	path := "/bundles/" + f.BundleID

	show := cl.get(path)
	require.Equal(t, http.StatusOK, show.Status, show.Body)
	require.Contains(t, show.Body, `href="/tools/`+f.ToolID+`">Invoice review</a>`, "the tool that mounts the bundle, by name")
	require.Contains(t, show.Body, `href="/bindings/`+f.BindingID+`">Invoice review binding</a>`)
	require.Contains(t, show.Body, `enctype="multipart/form-data"`)

	file := []byte("<!doctype html><title>v2</title><p>from a file</p>")
	p := postMultipart(cl, path+"/versions", nil, "app.html", "text/html", file)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, path+"?notice=uploaded", p.Header.Get("Location"))

	pasted := "<!doctype html>\r\n<title>v3</title>"
	show = cl.get(path)
	p = postMultipart(cl, path+"/versions", map[string]string{"content": pasted, "content_type": "text/html"}, "", "", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)

	d, err := c.P.Bundles.Get(context.Background(), ws, f.BundleID)
	require.NoError(t, err)
	require.Equal(t, 3, d.LatestVersion)
	require.EqualValues(t, len(file), d.Versions[1].Size)
	require.EqualValues(t, len("<!doctype html>\n<title>v3</title>"), d.Versions[2].Size, "CRLF from the textarea stored as LF")
	require.Equal(t, int64(2), auditCount(t, c.Store, ws, "bundle.version", f.BundleID), "each upload audited as the API's")
	show = cl.get(path)
	require.Contains(t, show.Body, d.Versions[1].SHA256)
	require.Contains(t, show.Body, fmt.Sprintf(`<td class="size">%d B</td>`, len(file)))

	// The preview frames the version from the bundle origin, scripts only.
	pv := cl.get(path + "/versions/2/preview")
	require.Equal(t, http.StatusOK, pv.Status, pv.Body)
	require.Contains(t, pv.Body, `sandbox="allow-scripts"`)
	require.NotContains(t, pv.Body, "allow-same-origin")
	require.Contains(t, pv.Body, `src="`+d.Versions[1].URL+`"`)
	require.True(t, strings.HasSuffix(pv.Header.Get("Content-Security-Policy"), "frame-src http://127.0.0.1"), "the bundle origin and nothing else")
	require.Equal(t, http.StatusNotFound, cl.get(path+"/versions/9/preview").Status)

	// Refusals keep the pasted text and store nothing.
	cl.get(path)
	p = postMultipart(cl, path+"/versions", map[string]string{"content": "body{}", "content_type": "text/css"}, "", "", nil)
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, "text/css is not a bundle type")
	require.Contains(t, p.Body, ">body{}</textarea>")
	p = postMultipart(cl, path+"/versions", nil, "big.html", "text/html", bytes.Repeat([]byte("a"), bundle.MaxBundleBytes+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, p.Status, p.Body)
	require.Contains(t, p.Body, "at most 4194304 bytes")
	p = postMultipart(cl, path+"/versions", map[string]string{"content": ""}, "", "", nil)
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, "choose a file or paste the bundle")
	cl.csrf = "forged"
	p = postMultipart(cl, path+"/versions", map[string]string{"content": "<p>x</p>"}, "", "", nil)
	require.Equal(t, http.StatusForbidden, p.Status, p.Body)
	d, err = c.P.Bundles.Get(context.Background(), ws, f.BundleID)
	require.NoError(t, err)
	require.Equal(t, 3, d.LatestVersion, "no refused upload was stored")
}
