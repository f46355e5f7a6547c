package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFaviconNeedsNoSessionAndEveryPageLinksIt: the browser asks for the
// icon on every page, the sign-in page included; it used to be sent to
// sign in (303) before a session and answered 404 after one.
func TestFaviconNeedsNoSessionAndEveryPageLinksIt(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	for _, cl := range []*client{c.client(t), c.signedIn(t)} {
		p := cl.get("/favicon.ico")
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		require.Equal(t, "image/svg+xml", p.Header.Get("Content-Type"))
		require.Equal(t, "public, max-age=86400", p.Header.Get("Cache-Control"))
		require.Contains(t, p.Body, "<svg ")
	}
	for _, p := range []page{c.client(t).get("/login"), c.signedIn(t).get("/")} {
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		require.Contains(t, p.Body, `<link rel="icon" href="/favicon.ico" type="image/svg+xml">`)
	}
}
