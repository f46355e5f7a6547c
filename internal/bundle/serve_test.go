package bundle_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/models"
)

func TestContentSecurityPolicy(t *testing.T) {
	t.Parallel()
	got := bundle.ContentSecurityPolicy("https://api.example.com/", "https://bundles.example.net/b")
	require.Equal(t, "default-src 'none'; "+
		"script-src 'self' https://bundles.example.net 'unsafe-inline' https://api.example.com/sdk/; "+
		"style-src 'self' https://bundles.example.net 'unsafe-inline'; "+
		"img-src 'self' https://bundles.example.net data: blob:; "+
		"font-src 'self' https://bundles.example.net; "+
		"connect-src https://api.example.com/api/app-runtime/; "+
		"frame-src 'none'; child-src 'none'; worker-src 'none'; object-src 'none'; media-src 'none'; manifest-src 'none'; "+
		"base-uri 'none'; form-action 'none'; sandbox allow-scripts", got)

	got = bundle.ContentSecurityPolicy("", "")
	require.Contains(t, got, "connect-src 'none'", "no API configured: no connections at all")
	require.Contains(t, got, "script-src 'self' 'unsafe-inline'")
}

func TestNotModified(t *testing.T) {
	t.Parallel()
	b := models.Bundle{SHA256: "abc"}
	require.Equal(t, `"abc"`, bundle.ETag(b))
	for header, want := range map[string]bool{
		``: false, `"abc"`: true, `W/"abc"`: true, `"x", "abc"`: true, `*`: true, `"abcd"`: false, `abc`: false,
	} {
		require.Equal(t, want, bundle.NotModified(header, bundle.ETag(b)), header)
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	require.Equal(t, "https://cdn.example/b/123/4", bundle.URL("https://cdn.example/b/", "123", 4))
}
