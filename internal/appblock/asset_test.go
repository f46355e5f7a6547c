package appblock_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/apperr"
)

// TestNewAssetID: ast_ and a ULID, unique, in the seed's pattern.
func TestNewAssetID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := appblock.NewAssetID()
		require.True(t, appblock.IsAssetID(id), id)
		require.False(t, seen[id])
		require.Greater(t, id, prev, "ids sort by creation")
		seen[id], prev = true, id
	}
	require.False(t, appblock.IsAssetID("ast_01arz3ndektsv4rrffq69g5fav"))
	require.False(t, appblock.IsAssetID("bun_01ARZ3NDEKTSV4RRFFQ69G5FAV"))
}

// TestCheckAsset: text/html only, declared and sniffed, at most 4 MiB.
func TestCheckAsset(t *testing.T) {
	t.Parallel()
	page := func(n int) []byte {
		head := "<!doctype html><html><body>"
		return []byte(head + strings.Repeat("x", n-len(head)))
	}
	tests := []struct {
		name     string
		declared string
		data     []byte
		code     apperr.Code // "" when accepted
	}{
		{"html", "text/html", page(100), ""},
		{"html utf-8", "text/html; charset=UTF-8", page(100), ""},
		{"exactly 4 MiB", "text/html", page(appblock.MaxAssetBytes), ""},
		{"4 MiB and a byte", "text/html", page(appblock.MaxAssetBytes + 1), apperr.TooLarge},
		{"empty", "text/html", nil, apperr.Invalid},
		{"declared as javascript", "application/javascript", page(100), apperr.Invalid},
		{"declared as svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>x()</script></svg>`), apperr.Invalid},
		{"declared html, sniffs as png", "text/html", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 100)...), apperr.Invalid},
		{"declared html, sniffs as text", "text/html", []byte("just some text"), apperr.Invalid},
		{"latin-1 charset", "text/html; charset=iso-8859-1", page(100), apperr.Invalid},
		{"no type", "", page(100), apperr.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := appblock.CheckAsset(tt.declared, tt.data)
			if tt.code == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tt.code, apperr.CodeOf(err), "error: %v", err)
		})
	}

	app, err := os.ReadFile("testdata/mcp-app/app.html")
	require.NoError(t, err)
	require.NoError(t, appblock.CheckAsset("text/html", app), "the fixture MCP App is a valid asset")
}

// TestAssetCSP pins every directive of the asset policy.
func TestAssetCSP(t *testing.T) {
	t.Parallel()
	require.Equal(t, "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; font-src 'none'; "+
		"connect-src 'none'; frame-src 'none'; child-src 'none'; worker-src 'none'; object-src 'none'; media-src 'none'; "+
		"manifest-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors https://console.example.test; sandbox allow-scripts",
		appblock.AssetCSP("https://console.example.test"))
	require.Contains(t, appblock.AssetCSP(), "frame-ancestors 'none'")
	require.NotContains(t, appblock.AssetCSP(), "unsafe-eval")
}

// linkTable is testdata/link_policy.json, shared with the browser test of
// static/mcphost.js so both implementations answer the same.
type linkTable struct {
	OwnOrigins []string `json:"own_origins"`
	Cases      []struct {
		URL string `json:"url"`
		OK  bool   `json:"ok"`
		Why string `json:"why"`
	} `json:"cases"`
}

func readLinkTable(t *testing.T) linkTable {
	t.Helper()
	raw, err := os.ReadFile("testdata/link_policy.json")
	require.NoError(t, err)
	var lt linkTable
	require.NoError(t, json.Unmarshal(raw, &lt))
	require.NotEmpty(t, lt.Cases)
	return lt
}

// TestCheckOpenLink runs the link policy table.
func TestCheckOpenLink(t *testing.T) {
	t.Parallel()
	lt := readLinkTable(t)
	for _, c := range lt.Cases {
		err := appblock.CheckOpenLink(c.URL, lt.OwnOrigins)
		if c.OK {
			require.NoError(t, err, "%q should open", c.URL)
		} else {
			require.Error(t, err, "%q should be refused (%s)", c.URL, c.Why)
		}
	}
	require.Error(t, appblock.CheckOpenLink("https://example.com/"+strings.Repeat("a", appblock.MaxLinkLength), nil))
}
