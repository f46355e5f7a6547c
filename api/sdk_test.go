package api_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/sdk"
)

func TestTheAPIServesTheSDKWithItsShaAsETag(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	res, err := http.Get(a.URL + sdk.Path)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, sdk.Source(), body)
	require.Equal(t, `"`+sdk.SHA256()+`"`, res.Header.Get("ETag"))
	require.Equal(t, sdk.ContentType, res.Header.Get("Content-Type"))
	require.Equal(t, sdk.CacheControl, res.Header.Get("Cache-Control"), "not the API's no-store")
	require.Equal(t, []string{"nosniff"}, res.Header.Values("X-Content-Type-Options"), "once")
	require.Equal(t, "*", res.Header.Get("Access-Control-Allow-Origin"))

	req, err := http.NewRequest(http.MethodGet, a.URL+sdk.Path, nil)
	require.NoError(t, err)
	req.Header.Set("If-None-Match", sdk.ETag())
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusNotModified, res.StatusCode)
}
