package web_test

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/web"
)

// TestTheFaviconIsAnSVGBrowsersMayKeep: the icon every page's browser asks
// for is there, typed, and cacheable.
func TestTheFaviconIsAnSVGBrowsersMayKeep(t *testing.T) {
	t.Parallel()
	app := newApp(t, new(bytes.Buffer))
	web.MountFavicon(app)
	res, err := app.Test(httptest.NewRequest("GET", web.FaviconPath, nil), 5000)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "image/svg+xml", res.Header.Get("Content-Type"))
	require.Equal(t, "public, max-age=86400", res.Header.Get("Cache-Control"))
	require.True(t, strings.HasPrefix(string(raw), "<svg "), string(raw))
}
