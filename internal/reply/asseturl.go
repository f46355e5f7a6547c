package reply

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/urlsign"
	"github.com/appruntime/appruntime/models"
)

// AssetsPath is the path, below PUBLIC_API_URL, of the route that serves
// an app block's asset by its signed URL: AssetsPath + "/" + asset id.
const AssetsPath = "/api/assets"

// AssetURLLifetime is how long a signed asset URL works: a host lists a
// task's replies and the person clicks Run within minutes; later, the host
// lists them again for fresh URLs. Short, so a URL copied out of a page
// stops working soon.
const AssetURLLifetime = 10 * time.Minute

// assetURLKeyInfo is the HKDF label of the asset URL key: a key for this
// purpose only, whatever else SECRETS_KEY keys.
const assetURLKeyInfo = "appruntime replies: app block asset URL signing key v1"

// HostView is a reply as a host reads it: with a signed, short-lived URL
// for each asset its app blocks name, which the host's sandboxed frame
// loads (served under the asset's own policy; framable only by the
// origins of ASSET_FRAME_ANCESTORS).
type HostView struct {
	View
	// AssetURLs maps each asset id of the reply's app blocks to its URL;
	// absent when the deployment signs none (no SECRETS_KEY).
	AssetURLs map[string]string `json:"asset_urls,omitempty"`
	// AssetURLsExpireAt is when the URLs stop working.
	AssetURLsExpireAt *time.Time `json:"asset_urls_expire_at,omitempty"`
}

// HostReplies returns the replies of task taskID of workspaceID, oldest
// first, each with signed URLs of its assets; another workspace's task is
// 404.
func (s *Service) HostReplies(ctx context.Context, workspaceID, taskID string) ([]HostView, error) {
	list, err := s.TaskReplies(ctx, workspaceID, taskID)
	if err != nil {
		return nil, err
	}
	out := make([]HostView, 0, len(list))
	for _, r := range list {
		hv := HostView{View: r}
		ids := assetsOf([]View{r})
		if s.urls != nil && len(ids) > 0 {
			expires := s.urls.Expiry(s.now())
			hv.AssetURLsExpireAt = &expires
			hv.AssetURLs = make(map[string]string, len(ids))
			for id := range ids {
				hv.AssetURLs[id] = s.assetURL(id, taskID, expires.Unix())
			}
		}
		out = append(out, hv)
	}
	return out, nil
}

// assetURL is the signed URL of asset id of task taskID until exp.
func (s *Service) assetURL(id, taskID string, exp int64) string {
	q := url.Values{}
	q.Set("task", taskID)
	q.Set("exp", strconv.FormatInt(exp, 10))
	q.Set("sig", s.urls.Sign(exp, id, taskID))
	u := *s.base
	u.Path = strings.TrimRight(s.base.Path, "/") + AssetsPath + "/" + id
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return u.String()
}

// AssetTicket is what a signed asset URL carries besides its path's id.
type AssetTicket struct {
	AssetID string
	TaskID  string
	Exp     string // unix seconds
	Sig     string
}

// errNotSigned refuses an asset URL this deployment did not sign, whatever
// the reason, so a prober learns nothing from the message.
var errNotSigned = apperr.Forbiddenf("the URL is not an asset URL of this deployment: list the task's replies for one")

// ServeAsset returns the bytes an asset URL names: 403 when the URL is
// altered, expired or not signed here, 404 when no reply of its task shows
// the asset any more, 501 when the deployment signs no URLs.
func (s *Service) ServeAsset(ctx context.Context, t AssetTicket) ([]byte, error) {
	if s.urls == nil {
		return nil, apperr.NotImplementedf("this deployment serves no asset URLs (no SECRETS_KEY)")
	}
	if !appblock.IsAssetID(t.AssetID) || !models.IsID(t.TaskID) {
		return nil, errNotSigned
	}
	exp, err := s.urls.Check(t.Sig, t.Exp, s.now(), t.AssetID, t.TaskID)
	switch {
	case errors.Is(err, urlsign.ErrExpired):
		return nil, apperr.Forbiddenf("the asset URL expired at %s: list the task's replies for a fresh one", time.Unix(exp, 0).UTC().Format(time.RFC3339))
	case err != nil:
		return nil, errNotSigned
	}
	// The signature names the task: it was issued to a host of the task's
	// workspace.
	return s.shownAsset(ctx, s.st.DB.WithContext(ctx), t.TaskID, t.AssetID)
}
