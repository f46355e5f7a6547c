package sdk_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/openapi"
	"github.com/appruntime/appruntime/internal/sdk"
)

func TestTheSDKIsServedWithItsShaAsETag(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256(sdk.Source())
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	require.Equal(t, etag, sdk.ETag())

	srv := httptest.NewServer(sdk.Handler())
	t.Cleanup(srv.Close)
	tests := []struct {
		name, method, ifNoneMatch string
		status                    int
		body                      bool
	}{
		{"a first fetch", http.MethodGet, "", http.StatusOK, true},
		{"a cached copy that is current", http.MethodGet, etag, http.StatusNotModified, false},
		{"one of several tags", http.MethodGet, `"old", ` + etag, http.StatusNotModified, false},
		{"a weak comparison", http.MethodGet, "W/" + etag, http.StatusNotModified, false},
		{"a stale copy", http.MethodGet, `"0000"`, http.StatusOK, true},
		{"HEAD", http.MethodHead, "", http.StatusOK, false},
		{"POST", http.MethodPost, "", http.StatusMethodNotAllowed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tc.method, srv.URL+sdk.Path, nil)
			require.NoError(t, err)
			if tc.ifNoneMatch != "" {
				req.Header.Set("If-None-Match", tc.ifNoneMatch)
			}
			res, err := srv.Client().Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, tc.status, res.StatusCode)
			if tc.status == http.StatusMethodNotAllowed {
				require.Equal(t, "GET, HEAD", res.Header.Get("Allow"))
				return
			}
			require.Equal(t, etag, res.Header.Get("ETag"))
			require.Equal(t, sdk.CacheControl, res.Header.Get("Cache-Control"))
			if tc.status == http.StatusOK {
				require.Equal(t, "text/javascript; charset=utf-8", res.Header.Get("Content-Type"))
				require.Equal(t, "*", res.Header.Get("Access-Control-Allow-Origin"), "an opaque-origin bundle imports it with CORS")
				require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
			}
			if tc.body {
				require.Equal(t, sdk.Source(), body)
			} else {
				require.Empty(t, body)
			}
		})
	}
}

// TestTheSDKMountsOnFiber is how the API will serve it: through Fiber's
// net/http adaptor, with the same headers and revalidation.
func TestTheSDKMountsOnFiber(t *testing.T) {
	t.Parallel()
	app := fiber.New()
	app.Get(sdk.Path, adaptor.HTTPHandler(sdk.Handler()))
	res, err := app.Test(httptest.NewRequest(http.MethodGet, sdk.Path, nil))
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, sdk.Source(), body)
	require.Equal(t, sdk.ETag(), res.Header.Get("ETag"))
	require.Equal(t, "text/javascript; charset=utf-8", res.Header.Get("Content-Type"))

	req := httptest.NewRequest(http.MethodGet, sdk.Path, nil)
	req.Header.Set("If-None-Match", sdk.ETag())
	res, err = app.Test(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotModified, res.StatusCode)
}

// TestThePackageVersionIsTheAPIVersion keeps the npm package
// (sdk/package.json), the SDK's VERSION and the OpenAPI document's
// info.version in step: the package's major version is the API version
// (npm needs a full semver, "1.0.0", where the API says "1").
func TestThePackageVersionIsTheAPIVersion(t *testing.T) {
	t.Parallel()
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	require.NoError(t, json.Unmarshal(openapi.Document, &doc))
	require.NotEmpty(t, doc.Info.Version)

	raw, err := os.ReadFile("../../sdk/package.json")
	require.NoError(t, err)
	var pkg struct {
		Name    string                     `json:"name"`
		Version string                     `json:"version"`
		Type    string                     `json:"type"`
		Types   string                     `json:"types"`
		Exports map[string]json.RawMessage `json:"exports"`
	}
	require.NoError(t, json.Unmarshal(raw, &pkg))
	require.Equal(t, "@appruntime/sdk", pkg.Name)
	require.Equal(t, "module", pkg.Type)
	require.Equal(t, "./appruntime.d.ts", pkg.Types)
	require.Contains(t, pkg.Exports, ".")
	major, _, _ := strings.Cut(pkg.Version, ".")
	require.Equal(t, doc.Info.Version, major, "package.json's version %s", pkg.Version)
	require.Contains(t, string(sdk.Source()), `export const VERSION = "`+doc.Info.Version+`";`)

	// The served bytes are the package's source, byte for byte.
	src, err := os.ReadFile("../../sdk/appruntime.js")
	require.NoError(t, err)
	require.Equal(t, src, sdk.Source())
}
