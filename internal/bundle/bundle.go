// Package bundle stores versioned HTML/JS bundles and serves them at stable,
// immutable URLs (BUNDLE_BASE_URL/<id>/<version>) under a restrictive
// content security policy, for the sandboxed iframe an artifact mounts.
package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// MaxBundleBytes caps one bundle version (seed 004: an asset is at most
// 4 MiB, 4194304 bytes).
const MaxBundleBytes = 4 << 20

// MaxNameLength bounds a bundle's name, which admins read in lists.
const MaxNameLength = 200

// The content types a bundle is stored and served with. A bundle is either
// the HTML document the iframe loads or a script that document loads.
const (
	ContentTypeHTML       = "text/html; charset=utf-8"
	ContentTypeJavaScript = "text/javascript; charset=utf-8"
)

// acceptedMediaTypes maps an upload's media type to the type it is served
// with; application/javascript is the legacy name of text/javascript (RFC 9239).
var acceptedMediaTypes = map[string]string{
	"text/html":              ContentTypeHTML,
	"text/javascript":        ContentTypeJavaScript,
	"application/javascript": ContentTypeJavaScript,
}

// Service uploads, lists and serves bundles.
type Service struct {
	st      *store.Store
	blobs   storage.Store
	log     *slog.Logger
	baseURL string
	apiURL  string
	csp     string
	allow   []netip.Prefix
}

// Options are what a Service is built from.
type Options struct {
	Store *store.Store
	Blobs storage.Store
	Log   *slog.Logger
	// BundleBaseURL is Config.BundleBaseURL: a version is served at
	// BundleBaseURL/<id>/<version>.
	BundleBaseURL string
	// PublicAPIURL is Config.PublicAPIURL, the only place a bundle may connect to.
	PublicAPIURL string
	// Allow is Config.OutboundAllow: the special-purpose networks a
	// declared origin's literal address may be in (CheckGrants).
	Allow []netip.Prefix
}

// NewService returns a bundle service.
func NewService(o Options) *Service {
	return &Service{
		st: o.Store, blobs: o.Blobs, log: o.Log,
		baseURL: strings.TrimRight(o.BundleBaseURL, "/"),
		apiURL:  o.PublicAPIURL,
		csp:     ContentSecurityPolicy(o.PublicAPIURL, o.BundleBaseURL),
		allow:   o.Allow,
	}
}

// Upload is one bundle version as the admin sent it.
type Upload struct {
	Name        string // required for a new bundle; a new version keeps the bundle's name when empty
	ContentType string // the request's Content-Type
	Content     []byte
	// Grants are the origins the version declares it needs; they take
	// effect once an admin approves them (Decide).
	Grants Grants
}

// Version is one stored bundle version as the admin API shows it.
type Version struct {
	ID          string    `json:"id"`
	Version     int       `json:"version"`
	Name        string    `json:"name"`
	SHA256      string    `json:"sha256"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	URL         string    `json:"url"`
	CreatedAt   time.Time `json:"created_at"`
	// Grant is the version's declared network grants and their state;
	// absent when it declares none.
	Grant *Grant `json:"grants,omitempty"`
}

// Detail is a bundle with every version, oldest first.
type Detail struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	LatestVersion int       `json:"latest_version"`
	Versions      []Version `json:"versions"`
}

// URL returns where version v of bundle id is served.
func (s *Service) URL(id string, v int) string { return URL(s.baseURL, id, v) }

// URL returns where version v of bundle id is served under bundleBaseURL
// (Config.BundleBaseURL): bundleBaseURL/<id>/<version>, the shape the
// serving route and the session mint agree on.
func URL(bundleBaseURL, id string, v int) string {
	return strings.TrimRight(bundleBaseURL, "/") + "/" + id + "/" + strconv.Itoa(v)
}

func (s *Service) view(b models.Bundle) Version {
	return Version{ID: b.ID, Version: b.Version, Name: b.Name, SHA256: b.SHA256, ContentType: b.ContentType,
		Size: b.Size, URL: s.URL(b.ID, b.Version), CreatedAt: b.CreatedAt}
}

// Create stores a new bundle as version 1.
func (s *Service) Create(ctx context.Context, workspaceID, actor string, up Upload) (Version, error) {
	name, err := field.Name(up.Name, "name", MaxNameLength)
	if err != nil {
		return Version{}, err
	}
	b := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: workspaceID, Name: name}
	return s.store(ctx, actor, "bundle.create", b, up)
}

// AddVersion stores the next version of an existing bundle of the workspace.
func (s *Service) AddVersion(ctx context.Context, workspaceID, actor, bundleID string, up Upload) (Version, error) {
	latest, err := Latest(ctx, s.st.DB, workspaceID, bundleID)
	if err != nil {
		return Version{}, err
	}
	name := latest.Name
	if strings.TrimSpace(up.Name) != "" {
		if name, err = field.Name(up.Name, "name", MaxNameLength); err != nil {
			return Version{}, err
		}
	}
	b := models.Bundle{ID: latest.ID, Version: latest.Version + 1, WorkspaceID: workspaceID, Name: name}
	return s.store(ctx, actor, "bundle.version", b, up)
}

// store checks the upload, writes its bytes, then the row and its audit
// entry in one transaction. Each upload has a storage key of its own, so a
// losing concurrent upload of the same version can remove its bytes without
// touching the winner's.
func (s *Service) store(ctx context.Context, actor, action string, b models.Bundle, up Upload) (Version, error) {
	contentType, err := checkContent(up.ContentType, up.Content)
	if err != nil {
		return Version{}, err
	}
	grants, err := CheckGrants(up.Grants, s.allow)
	if err != nil {
		return Version{}, err
	}
	b.CreatedAt = time.Now().UTC()
	sum := sha256.Sum256(up.Content)
	b.SHA256 = hex.EncodeToString(sum[:])
	b.ContentType = contentType
	b.Size = int64(len(up.Content))
	b.StorageKey = "bundles/" + b.ID + "/" + models.NewID()
	if err := s.blobs.Put(ctx, b.StorageKey, contentType, up.Content); err != nil {
		return Version{}, fmt.Errorf("bundle: store bytes: %w", err)
	}
	err = s.st.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&b).Error; err != nil {
			if store.IsUniqueViolation(err) {
				return apperr.Conflictf("version %d of bundle %s was uploaded at the same time; upload again", b.Version, b.ID)
			}
			return fmt.Errorf("bundle: save version: %w", err)
		}
		detail := map[string]any{"version": b.Version, "name": b.Name, "sha256": b.SHA256, "size": b.Size, "content_type": b.ContentType}
		if !grants.Empty() {
			if err := tx.Create(ptr(grantRow(b, grants))).Error; err != nil {
				return fmt.Errorf("bundle: save grants: %w", err)
			}
			detail["grants"] = grants
		}
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: b.WorkspaceID, Actor: actor, Action: action, TargetType: "bundle", TargetID: b.ID, Detail: detail,
		})
	})
	if err != nil {
		if derr := s.blobs.Delete(context.WithoutCancel(ctx), b.StorageKey); derr != nil {
			s.log.WarnContext(ctx, "bundle: cannot remove bytes of a failed upload", "key", b.StorageKey, "error", derr.Error())
		}
		return Version{}, err
	}
	v := s.view(b)
	if !grants.Empty() {
		v.Grant = &Grant{Grants: grants, State: models.GrantPending}
	}
	return v, nil
}

func ptr[T any](v T) *T { return &v }

// checkContent checks an upload's type, size and encoding, and returns the
// content type the bundle is served with.
func checkContent(contentType string, content []byte) (string, error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", apperr.Invalidf("Content-Type %q is not a media type: upload text/html or text/javascript", contentType)
	}
	served, ok := acceptedMediaTypes[mediaType]
	if !ok {
		return "", apperr.Invalidf("Content-Type %s is not a bundle type: upload text/html or text/javascript (application/javascript)", mediaType)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "", apperr.Invalidf("charset %s is not supported: a bundle is UTF-8", cs)
	}
	if len(content) == 0 {
		return "", apperr.Invalidf("the bundle is empty")
	}
	if len(content) > MaxBundleBytes {
		return "", apperr.New(apperr.TooLarge, "the bundle is %d bytes; a bundle is at most %d bytes (4 MiB)", len(content), MaxBundleBytes)
	}
	if !utf8.Valid(content) {
		return "", apperr.Invalidf("the bundle is not valid UTF-8 text")
	}
	return served, nil
}

// List returns the newest version of every bundle of the workspace, by name.
func (s *Service) List(ctx context.Context, workspaceID string) ([]Version, error) {
	var rows []models.Bundle
	if err := s.st.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("id, version").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("bundle: list: %w", err)
	}
	out := []Version{}
	for i, b := range rows {
		if i+1 < len(rows) && rows[i+1].ID == b.ID {
			continue // a newer version follows
		}
		out = append(out, s.view(b))
	}
	slices.SortFunc(out, func(a, b Version) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Get returns a bundle of the workspace with its versions.
func (s *Service) Get(ctx context.Context, workspaceID, bundleID string) (Detail, error) {
	rows, err := versions(ctx, s.st.DB, workspaceID, bundleID)
	if err != nil {
		return Detail{}, err
	}
	grants, err := grantsOf(ctx, s.st.DB, bundleID)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{ID: bundleID, Versions: make([]Version, 0, len(rows))}
	for _, b := range rows {
		v := s.view(b)
		if g, ok := grants[b.Version]; ok {
			v.Grant = &g
		}
		d.Versions = append(d.Versions, v)
	}
	last := rows[len(rows)-1]
	d.Name, d.LatestVersion = last.Name, last.Version
	return d, nil
}

// Delete removes every version of a bundle that no configured tool names.
func (s *Service) Delete(ctx context.Context, workspaceID, actor, bundleID string) error {
	rows, err := versions(ctx, s.st.DB, workspaceID, bundleID)
	if err != nil {
		return err
	}
	err = s.st.Tx(ctx, func(tx *gorm.DB) error {
		var users int64
		if err := tx.Model(&models.ConfiguredTool{}).Where("bundle_id = ?", bundleID).Count(&users).Error; err != nil {
			return fmt.Errorf("bundle: count users: %w", err)
		}
		if users > 0 {
			return apperr.Conflictf("bundle %s is used by %d configured tool(s); point them at another bundle first", bundleID, users)
		}
		if err := tx.Where("id = ? AND workspace_id = ?", bundleID, workspaceID).Delete(&models.Bundle{}).Error; err != nil {
			return fmt.Errorf("bundle: delete: %w", err)
		}
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actor, Action: "bundle.delete", TargetType: "bundle", TargetID: bundleID,
			Detail: map[string]any{"name": rows[0].Name, "versions": len(rows)},
		})
	})
	if err != nil {
		return err
	}
	for _, b := range rows {
		if err := s.blobs.Delete(ctx, b.StorageKey); err != nil {
			s.log.WarnContext(ctx, "bundle: cannot remove bytes of a deleted bundle", "key", b.StorageKey, "error", err.Error())
		}
	}
	return nil
}

// Open returns a version, its bytes, its declaration and the policy it is
// served under, read afresh on every request so a decision takes effect on
// the next load. It is not scoped to a workspace: the URL names the bundle
// by id and version, as the iframe that loads it cannot send a token.
func (s *Service) Open(ctx context.Context, bundleID string, version int) (Served, error) {
	if !models.IsID(bundleID) || version < 1 {
		return Served{}, apperr.NotFoundf("bundle not found")
	}
	v := Served{CSP: s.csp}
	err := s.st.DB.WithContext(ctx).Where("id = ? AND version = ?", bundleID, version).Take(&v.Bundle).Error
	if err != nil {
		return Served{}, store.NotFound(err, "bundle: open", "bundle")
	}
	var rows []models.BundleGrant
	if err := s.st.DB.WithContext(ctx).Where("bundle_id = ? AND version = ?", bundleID, version).Limit(1).Find(&rows).Error; err != nil {
		return Served{}, fmt.Errorf("bundle: open grant: %w", err)
	}
	if len(rows) == 1 {
		g, err := grantOf(rows[0])
		if err != nil {
			return Served{}, err
		}
		v.Grant = &g
		if g.State == models.GrantApproved {
			v.CSP = ContentSecurityPolicyWith(s.apiURL, s.baseURL, g.Grants)
		}
	}
	if v.Content, err = s.blobs.Get(ctx, v.Bundle.StorageKey); err != nil {
		return Served{}, fmt.Errorf("bundle: read bytes of %s v%d: %w", v.Bundle.ID, v.Bundle.Version, err)
	}
	return v, nil
}

// Latest returns the newest version of a bundle of the workspace.
func Latest(ctx context.Context, db *gorm.DB, workspaceID, bundleID string) (models.Bundle, error) {
	var b models.Bundle
	if !models.IsID(bundleID) {
		return b, apperr.NotFoundf("bundle not found")
	}
	err := db.WithContext(ctx).Where("id = ? AND workspace_id = ?", bundleID, workspaceID).Order("version DESC").Take(&b).Error
	return b, store.NotFound(err, "bundle: latest", "bundle")
}

// Resolve returns the version a configured tool uses: the pinned one, or
// else the newest.
func Resolve(ctx context.Context, db *gorm.DB, workspaceID, bundleID string, pinned *int) (models.Bundle, error) {
	if pinned == nil {
		return Latest(ctx, db, workspaceID, bundleID)
	}
	var b models.Bundle
	if !models.IsID(bundleID) {
		return b, apperr.NotFoundf("bundle not found")
	}
	err := db.WithContext(ctx).Where("id = ? AND workspace_id = ? AND version = ?", bundleID, workspaceID, *pinned).Take(&b).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return b, apperr.NotFoundf("bundle %s has no version %d", bundleID, *pinned)
	}
	return b, store.NotFound(err, "bundle: resolve", "bundle")
}

// versions returns every version of a bundle of the workspace, oldest first.
func versions(ctx context.Context, db *gorm.DB, workspaceID, bundleID string) ([]models.Bundle, error) {
	if !models.IsID(bundleID) {
		return nil, apperr.NotFoundf("bundle not found")
	}
	var rows []models.Bundle
	if err := db.WithContext(ctx).Where("id = ? AND workspace_id = ?", bundleID, workspaceID).Order("version").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("bundle: versions: %w", err)
	}
	if len(rows) == 0 {
		return nil, apperr.NotFoundf("bundle not found")
	}
	return rows, nil
}
