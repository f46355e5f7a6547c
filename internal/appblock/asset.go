package appblock

import (
	"mime"
	"net/http"
	"regexp"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Asset rules (seed 004, "Stability").
const (
	// MaxAssetBytes is the largest asset: 4 MiB.
	MaxAssetBytes = 4194304
	// AssetContentType is the only type an asset may have, and the type it
	// is served with.
	AssetContentType = "text/html; charset=utf-8"
	// AssetIDPrefix starts every asset id.
	AssetIDPrefix = "ast_"
)

// assetIDRule is seed 004's asset_id: ast_ and a ULID in Crockford base32.
var assetIDRule = regexp.MustCompile(`^ast_[0-9A-HJKMNP-TV-Z]{26}$`)

// NewAssetID returns a fresh asset id: AssetIDPrefix and a ULID (time
// ordered, 80 random bits from crypto/rand, monotonic within a millisecond
// in this process).
func NewAssetID() string { return AssetIDPrefix + ulid.Make().String() }

// IsAssetID reports whether s has the form of an asset id.
func IsAssetID(s string) bool { return assetIDRule.MatchString(s) }

// CheckAsset checks an upload: at most MaxAssetBytes (413), declared as
// text/html (a charset parameter, if any, utf-8) and sniffed as HTML by the
// rules browsers use (http.DetectContentType, WHATWG MIME sniffing), both
// or it is refused (400). An asset is served as AssetContentType whatever
// it was declared with.
func CheckAsset(declaredType string, data []byte) error {
	if len(data) > MaxAssetBytes {
		return apperr.New(apperr.TooLarge, "the asset is %d bytes; at most %d (4 MiB) are allowed", len(data), MaxAssetBytes)
	}
	if len(data) == 0 {
		return apperr.Invalidf("the asset is empty")
	}
	media, params, err := mime.ParseMediaType(declaredType)
	if err != nil || media != "text/html" {
		return apperr.Invalidf("an asset must be uploaded as text/html")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return apperr.Invalidf("an asset must be UTF-8 (charset=utf-8)")
	}
	if sniffed := http.DetectContentType(data); !strings.HasPrefix(sniffed, "text/html") {
		return apperr.Invalidf("the asset does not look like HTML (it sniffs as %s); start it with <!doctype html>", sniffed)
	}
	return nil
}
