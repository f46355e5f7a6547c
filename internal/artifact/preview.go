package artifact

import (
	"context"
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// AuditSessionPreview is the audit action of an admin minting a preview session.
const AuditSessionPreview = "session.preview"

// PreviewVerbs are the verbs a preview session may call
// (runtime.Service.Authorize refuses the others).
var PreviewVerbs = []string{"read"}

// PreviewRequest is an admin's request to preview a bundle version against
// a binding of the workspace (docs/architecture.md#preview-sessions).
type PreviewRequest struct {
	WorkspaceID string
	Actor       string // the audit actor: "user:<id>" or "token:<id>"
	UserID      string // the console's admin; "" with an admin token
	TokenID     string // the admin token; "" in the console
	BundleID    string
	Version     int
	BindingID   string
}

// Preview is what a preview mint returns: the session, the version it
// mounts and the init message a host posts to the frame.
type Preview struct {
	SessionToken  string      `json:"session_token"`
	SessionID     string      `json:"session_id"`
	ExpiresAt     time.Time   `json:"expires_at"`
	Kind          string      `json:"kind"` // "preview"
	BundleURL     string      `json:"bundle_url"`
	BundleSHA     string      `json:"bundle_sha"`
	BundleID      string      `json:"bundle_id"`
	BundleVersion int         `json:"bundle_version"`
	BindingID     string      `json:"binding_id"`
	Init          InitMessage `json:"init"`
}

// Preview mints a read-only preview session of req's bundle version against
// req's binding and records it in the audit log in the same transaction. A
// bundle version or binding of another workspace is the same 404 as a
// missing one.
func (m *Minter) Preview(ctx context.Context, req PreviewRequest) (Preview, error) {
	db := m.Store.DB.WithContext(ctx)
	version := req.Version
	bun, err := bundle.Resolve(ctx, db, req.WorkspaceID, req.BundleID, &version)
	if err != nil {
		return Preview{}, err
	}
	var bind models.Binding
	if models.IsID(req.BindingID) {
		err = db.Select("id").Where("id = ? AND workspace_id = ?", req.BindingID, req.WorkspaceID).Take(&bind).Error
	} else {
		err = gorm.ErrRecordNotFound
	}
	if err := store.NotFound(err, "artifact: load binding", "binding "+req.BindingID); err != nil {
		return Preview{}, err
	}
	token, claims, err := m.Sessions.MintPreview(ctx, session.PreviewInput{
		WorkspaceID: req.WorkspaceID, BindingID: bind.ID, UserID: req.UserID, TokenID: req.TokenID,
		RecordFunc: func(ctx context.Context, tx *gorm.DB, c session.Claims) error {
			return audit.Record(ctx, tx, audit.Entry{WorkspaceID: req.WorkspaceID, Actor: req.Actor, Action: AuditSessionPreview,
				TargetType: "session", TargetID: c.SessionID,
				Detail: map[string]any{"bundle_id": bun.ID, "bundle_version": bun.Version, "binding_id": bind.ID, "expires_at": c.ExpiresAt}})
		},
	})
	if err != nil {
		return Preview{}, err
	}
	rt := Runtime{APIBase: m.RuntimeBase, Verbs: PreviewVerbs, Versions: Versions, Capabilities: []string{},
		HostCapabilities: []string{}, Tools: []string{}, ReasonRequired: []string{}, Params: json.RawMessage(`{}`)}
	return Preview{
		SessionToken: token, SessionID: claims.SessionID, ExpiresAt: claims.ExpiresAt,
		Kind: session.KindPreview, BundleURL: bundle.URL(m.BundleBaseURL, bun.ID, bun.Version), BundleSHA: bun.SHA256,
		BundleID: bun.ID, BundleVersion: bun.Version, BindingID: bind.ID,
		Init: InitMessage{Type: "init", SessionToken: token, ExpiresAt: claims.ExpiresAt, APIBase: m.RuntimeBase,
			Params: rt.Params, Schema: models.JSON(`{}`), Theme: models.JSON(`{}`), Runtime: rt},
	}, nil
}
