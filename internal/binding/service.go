package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// Audit actions of binding changes.
const (
	AuditCreate  = "binding.create"
	AuditUpdate  = "binding.update"
	AuditRestore = "binding.restore"
	AuditDelete  = "binding.delete"
)

// ServiceOptions are what a Service is built from.
type ServiceOptions struct {
	Store *store.Store
	// Redis carries the "saved" broadcast that keeps every replica's cache
	// fresh. Nil leaves each process on its own: a cached binding is then
	// re-read once it is MaxStaleness old.
	Redis redis.UniversalClient
	// KeyPrefix starts the broadcast's channel and keys (Platform.KeyPrefix).
	KeyPrefix string
	Log       *slog.Logger
	// NowFunc is the clock that ages cache entries; nil is time.Now. Tests
	// set it to age entries without sleeping.
	NowFunc func() time.Time
}

// Service saves bindings (validated, versioned, audited) and serves them to
// the runtime from a cache that every save, on any replica, invalidates.
// Build one per process (internal/platform does) and Close it at shutdown.
type Service struct {
	store     *store.Store
	broadcast *rdb.Broadcast // nil without Redis: entries then only age out
	log       *slog.Logger
	now       func() time.Time

	mu      sync.RWMutex
	entries map[string]*entry
	// evictions counts evictions (guarded by mu). A load that began before
	// one may have read the row as it was before the save that caused it,
	// so it does not cache what it read, and no later call joins it.
	evictions uint64
	loads     singleflight.Group
}

// NewService builds the service and, when it has Redis, listens on the
// broadcast on which every replica announces saves; it returns once the
// subscription is live, so every save announced after NewService returns
// evicts this process's entry before the save's caller gets its answer.
func NewService(ctx context.Context, o ServiceOptions) (*Service, error) {
	s := &Service{store: o.Store, log: o.Log, now: o.NowFunc, entries: map[string]*entry{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if o.Redis == nil {
		return s, nil
	}
	s.broadcast = rdb.NewBroadcast(o.Redis, o.KeyPrefix, "binding:saved", s.log)
	if err := s.broadcast.Listen(s.evict, s.evictAll, subscribeTimeout); err != nil {
		return nil, fmt.Errorf("binding: %w", err)
	}
	return s, nil
}

// Close stops listening for saves.
func (s *Service) Close() {
	s.broadcast.Close()
}

// Patch is a partial update; a nil field keeps the saved value.
type Patch struct {
	// Merge, when set, is a JSON merge patch of the binding's content (bindingspec.Input's
	// fields, strictjson.MergeInto, as every admin entity is patched): a field
	// it names replaces the saved one, null clears it. The fields below
	// apply over it; in-process callers set those instead.
	Merge             json.RawMessage
	Name              *string
	BindingKind       *string
	IntegrationID     *string         // "" clears it
	AllowedOperations json.RawMessage // nil keeps the saved document
	// ExpectedVersion, when not 0, is the version the caller edited; a save
	// over a newer version is refused with 409 instead of losing its changes.
	ExpectedVersion int
}

// List returns the workspace's bindings by name.
func (s *Service) List(ctx context.Context, workspaceID string) ([]Binding, error) {
	var rows []models.Binding
	if err := s.store.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("name, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("binding: list: %w", err)
	}
	out := make([]Binding, 0, len(rows))
	for _, r := range rows {
		b, err := fromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Get returns one binding of the workspace, read from the database (admin
// reads are never cached).
func (s *Service) Get(ctx context.Context, workspaceID, id string) (Binding, error) {
	row, err := findBinding(s.store.DB.WithContext(ctx), workspaceID, id)
	if err != nil {
		return Binding{}, err
	}
	return fromRow(row)
}

// Create validates and saves a new binding as version 1.
func (s *Service) Create(ctx context.Context, workspaceID, actor string, in bindingspec.Input) (Binding, error) {
	var row models.Binding
	err := s.store.Tx(ctx, func(tx *gorm.DB) error {
		spec, err := bindingspec.Validate(ctx, WorkspaceOf(tx, workspaceID), in)
		if err != nil {
			return err
		}
		next := bindingspec.ContentOf(in, spec)
		now := time.Now().UTC()
		row = models.Binding{
			ID: models.NewID(), WorkspaceID: workspaceID, Name: next.Name, BindingKind: next.BindingKind,
			IntegrationID: optional(next.IntegrationID), AllowedOperations: models.MustJSON(spec),
			Version: 1, CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("binding: create: %w", err)
		}
		// A new binding is cached nowhere yet: announcing it after the
		// commit is enough.
		return recordSave(ctx, tx, row, bindingspec.Diff(nil, next), actor, AuditCreate, nil)
	})
	if err != nil {
		return Binding{}, err
	}
	s.announce(ctx, row.ID)
	return fromRow(row)
}

// Update applies p to a binding of the workspace as a new version, validated
// as a whole.
func (s *Service) Update(ctx context.Context, workspaceID, id, actor string, p Patch) (Binding, error) {
	return s.saveOver(ctx, workspaceID, id, actor, AuditUpdate, p.ExpectedVersion, nil, func(_ *gorm.DB, cur models.Binding) (bindingspec.Input, error) {
		in := inputOf(cur)
		if p.Merge != nil {
			in = bindingspec.Input{}
			if err := strictjson.MergeInto(inputOf(cur), p.Merge, &in); err != nil {
				return bindingspec.Input{}, err
			}
		}
		if p.Name != nil {
			in.Name = *p.Name
		}
		if p.BindingKind != nil {
			in.BindingKind = *p.BindingKind
		}
		if p.IntegrationID != nil {
			in.IntegrationID = *p.IntegrationID
		}
		if p.AllowedOperations != nil {
			in.AllowedOperations = p.AllowedOperations
		}
		return in, nil
	})
}

// Restore saves the content of an earlier version as a new version. The old
// content is validated again: an integration deleted since, for example,
// makes the restore a 400.
func (s *Service) Restore(ctx context.Context, workspaceID, id string, version int, actor string) (Binding, error) {
	return s.saveOver(ctx, workspaceID, id, actor, AuditRestore, 0, &version, func(tx *gorm.DB, cur models.Binding) (bindingspec.Input, error) {
		var old models.BindingVersion
		err := tx.Where("binding_id = ? AND version = ?", cur.ID, version).Take(&old).Error
		if err != nil {
			return bindingspec.Input{}, store.NotFound(err, "binding: find version", fmt.Sprintf("version %d of binding %s", version, id))
		}
		in := bindingspec.Input{Name: old.Name, BindingKind: old.BindingKind, AllowedOperations: json.RawMessage(old.AllowedOperations)}
		if old.IntegrationID != nil {
			in.IntegrationID = *old.IntegrationID
		}
		return in, nil
	})
}

// saveOver is every save of an existing binding: lock-free optimistic
// update of the row (version = version + 1 where version is unchanged), the
// version row with its diff and the audit entry, in one transaction.
func (s *Service) saveOver(ctx context.Context, workspaceID, id, actor, action string, expected int, restoredFrom *int,
	build func(tx *gorm.DB, cur models.Binding) (bindingspec.Input, error)) (Binding, error) {
	var row models.Binding
	err := s.store.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := findBinding(tx.WithContext(ctx), workspaceID, id)
		if err != nil {
			return err
		}
		if expected != 0 && expected != cur.Version {
			return apperr.Conflictf("binding %s is at version %d, not %d: reload it and apply your change again", id, cur.Version, expected)
		}
		in, err := build(tx.WithContext(ctx), cur)
		if err != nil {
			return err
		}
		spec, err := bindingspec.Validate(ctx, WorkspaceOf(tx, workspaceID), in)
		if err != nil {
			return err
		}
		prev, err := contentOfRow(cur)
		if err != nil {
			return err
		}
		next := bindingspec.ContentOf(in, spec)
		row = cur
		row.Name, row.BindingKind, row.IntegrationID = next.Name, next.BindingKind, optional(next.IntegrationID)
		row.AllowedOperations, row.Version, row.UpdatedAt = models.MustJSON(spec), cur.Version+1, time.Now().UTC()
		res := tx.WithContext(ctx).Model(&models.Binding{}).Where("id = ? AND version = ?", cur.ID, cur.Version).Updates(map[string]any{
			"name": row.Name, "binding_kind": row.BindingKind, "integration_id": row.IntegrationID,
			"allowed_operations": row.AllowedOperations, "version": row.Version, "updated_at": row.UpdatedAt,
		})
		if res.Error != nil {
			return fmt.Errorf("binding: update: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return apperr.Conflictf("binding %s was saved by someone else meanwhile: reload it and apply your change again", id)
		}
		if err := recordSave(ctx, tx, row, bindingspec.Diff(&prev, next), actor, action, restoredFrom); err != nil {
			return err
		}
		return s.announceBeforeCommit(ctx, row.ID)
	})
	if err != nil {
		if store.IsUniqueViolation(err) {
			return Binding{}, apperr.Conflictf("binding %s was saved by someone else meanwhile: reload it and apply your change again", id)
		}
		return Binding{}, err
	}
	s.announce(ctx, row.ID)
	return fromRow(row)
}

// Delete removes a binding and its history. A binding a configured tool
// still uses is a 409 naming the tools.
func (s *Service) Delete(ctx context.Context, workspaceID, id, actor string) error {
	err := s.store.Tx(ctx, func(tx *gorm.DB) error {
		tx = tx.WithContext(ctx)
		cur, err := findBinding(tx, workspaceID, id)
		if err != nil {
			return err
		}
		var users []string
		if err := tx.Model(&models.ConfiguredTool{}).Where("binding_id = ?", id).Order("display_name").Pluck("display_name", &users).Error; err != nil {
			return fmt.Errorf("binding: find users: %w", err)
		}
		if len(users) > 0 {
			return apperr.Conflictf("binding %s is used by configured tool(s) %s: point them at another binding first", id, quoteList(users))
		}
		if err := tx.Where("id = ?", id).Delete(&models.Binding{}).Error; err != nil {
			return fmt.Errorf("binding: delete: %w", err)
		}
		if err := audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actorOrSystem(actor), Action: AuditDelete, TargetType: "binding", TargetID: id,
			Detail: map[string]any{"name": cur.Name, "version": cur.Version},
		}); err != nil {
			return err
		}
		return s.announceBeforeCommit(ctx, id)
	})
	if err != nil {
		return err
	}
	s.announce(ctx, id)
	return nil
}

// Versions returns a binding's history, newest first.
func (s *Service) Versions(ctx context.Context, workspaceID, id string) ([]Version, error) {
	db := s.store.DB.WithContext(ctx)
	if _, err := findBinding(db, workspaceID, id); err != nil {
		return nil, err
	}
	var rows []models.BindingVersion
	if err := db.Where("binding_id = ?", id).Order("version DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("binding: list versions: %w", err)
	}
	out := make([]Version, 0, len(rows))
	for _, r := range rows {
		v := Version{Version: r.Version, Name: r.Name, BindingKind: r.BindingKind, IntegrationID: r.IntegrationID,
			SavedBy: r.SavedBy, RestoredFrom: r.RestoredFrom, CreatedAt: r.CreatedAt, Diff: []bindingspec.Change{}}
		if err := bindingspec.DecodeStored(r.AllowedOperations, &v.AllowedOperations); err != nil {
			return nil, fmt.Errorf("binding: version %d of %s: %w", r.Version, id, err)
		}
		if err := r.Diff.Decode(&v.Diff); err != nil {
			return nil, fmt.Errorf("binding: diff of version %d of %s: %w", r.Version, id, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// recordSave writes the version row and the audit entry of a save.
func recordSave(ctx context.Context, tx *gorm.DB, row models.Binding, diff []bindingspec.Change, actor, action string, restoredFrom *int) error {
	actor = actorOrSystem(actor)
	v := models.BindingVersion{
		ID: models.NewID(), BindingID: row.ID, Version: row.Version, Name: row.Name, BindingKind: row.BindingKind,
		IntegrationID: row.IntegrationID, AllowedOperations: row.AllowedOperations, Diff: models.MustJSON(diff),
		SavedBy: actor, RestoredFrom: restoredFrom, CreatedAt: row.UpdatedAt,
	}
	if err := tx.WithContext(ctx).Create(&v).Error; err != nil {
		return fmt.Errorf("binding: record version: %w", err)
	}
	detail := map[string]any{"version": row.Version, "name": row.Name, "changes": len(diff)}
	if restoredFrom != nil {
		detail["restored_from"] = *restoredFrom
	}
	return audit.Record(ctx, tx, audit.Entry{
		WorkspaceID: row.WorkspaceID, Actor: actor, Action: action, TargetType: "binding", TargetID: row.ID, Detail: detail,
	})
}

func findBinding(db *gorm.DB, workspaceID, id string) (models.Binding, error) {
	var row models.Binding
	if !models.IsID(id) {
		return row, apperr.NotFoundf("binding %s not found", id)
	}
	err := db.Where("id = ? AND workspace_id = ?", id, workspaceID).Take(&row).Error
	return row, store.NotFound(err, "binding: find", "binding "+id)
}

func fromRow(r models.Binding) (Binding, error) {
	b := Binding{ID: r.ID, WorkspaceID: r.WorkspaceID, Name: r.Name, BindingKind: r.BindingKind,
		IntegrationID: r.IntegrationID, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := bindingspec.DecodeStored(r.AllowedOperations, &b.AllowedOperations); err != nil {
		return Binding{}, fmt.Errorf("binding: %s: %w", r.ID, err)
	}
	return b, nil
}

func inputOf(r models.Binding) bindingspec.Input {
	in := bindingspec.Input{Name: r.Name, BindingKind: r.BindingKind, AllowedOperations: json.RawMessage(r.AllowedOperations)}
	if r.IntegrationID != nil {
		in.IntegrationID = *r.IntegrationID
	}
	return in
}

func contentOfRow(r models.Binding) (bindingspec.Content, error) {
	b, err := fromRow(r)
	if err != nil {
		return bindingspec.Content{}, err
	}
	c := bindingspec.Content{Name: b.Name, BindingKind: b.BindingKind, Spec: b.AllowedOperations}
	if b.IntegrationID != nil {
		c.IntegrationID = *b.IntegrationID
	}
	return c, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func actorOrSystem(actor string) string {
	if actor == "" {
		return "system"
	}
	return actor
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// WorkspaceOf answers what a binding document names (bindingspec.Workspace)
// from the integrations and configured tools of workspaceID in db, the
// transaction the binding is saved in.
func WorkspaceOf(db *gorm.DB, workspaceID string) bindingspec.Workspace {
	return workspace{db: db, id: workspaceID}
}

type workspace struct {
	db *gorm.DB
	id string
}

func (w workspace) Integration(ctx context.Context, id string) (models.Integration, bool, error) {
	var rows []models.Integration
	if err := w.db.WithContext(ctx).Select("id", "workspace_id", "name", "kind", "base_url").
		Where("id = ? AND workspace_id = ?", id, w.id).Limit(1).Find(&rows).Error; err != nil {
		return models.Integration{}, false, fmt.Errorf("binding: find integration: %w", err)
	}
	if len(rows) == 0 {
		return models.Integration{}, false, nil
	}
	return rows[0], true, nil
}

func (w workspace) ConfiguredTools(ctx context.Context, names []string) ([]bindingspec.ConfiguredTool, error) {
	var rows []bindingspec.ConfiguredTool
	if err := w.db.WithContext(ctx).Model(&models.ConfiguredTool{}).Select("display_name", "base_tool").
		Where("workspace_id = ? AND display_name IN ?", w.id, names).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("binding: find configured tools: %w", err)
	}
	return rows, nil
}
