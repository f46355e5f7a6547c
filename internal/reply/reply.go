// Package reply stores what an agent answers on a task (seed 004 in
// appruntime's terms): the HTML assets its app blocks run, and its replies,
// validated whole by internal/appblock before anything is stored.
package reply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// Service stores assets and replies. It is safe for concurrent use.
type Service struct {
	st    *store.Store
	blobs storage.Store
}

// NewService returns a Service keeping asset bytes in blobs.
func NewService(st *store.Store, blobs storage.Store) *Service {
	return &Service{st: st, blobs: blobs}
}

// AssetView is an uploaded asset.
type AssetView struct {
	ID        string    `json:"id"`
	SHA256    string    `json:"sha256"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"created_at"`
}

// storageKey is where an asset's bytes live.
func storageKey(id string) string { return "assets/" + id }

// UploadAsset stores an HTML asset for the caller's agent
// (appblock.CheckAsset: text/html declared and sniffed, 1 byte to 4 MiB)
// and returns its new id, ast_ and a ULID. The bytes are stored before the
// row, so a row always has its bytes.
func (s *Service) UploadAsset(ctx context.Context, c task.Caller, contentType string, data []byte) (AssetView, error) {
	if err := appblock.CheckAsset(contentType, data); err != nil {
		return AssetView{}, err
	}
	sum := sha256.Sum256(data)
	row := models.AgentAsset{ID: appblock.NewAssetID(), WorkspaceID: c.WorkspaceID, AgentID: c.AgentID,
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), CreatedAt: time.Now().UTC()}
	row.StorageKey = storageKey(row.ID)
	if err := s.blobs.Put(ctx, row.StorageKey, appblock.AssetContentType, data); err != nil {
		return AssetView{}, fmt.Errorf("reply: store asset: %w", err)
	}
	if err := s.st.DB.WithContext(ctx).Create(&row).Error; err != nil {
		_ = s.blobs.Delete(context.WithoutCancel(ctx), row.StorageKey)
		return AssetView{}, fmt.Errorf("reply: record asset: %w", err)
	}
	return AssetView{ID: row.ID, SHA256: row.SHA256, Size: row.Size, CreatedAt: row.CreatedAt}, nil
}

// AssetOwner implements appblock.Assets.
func (s *Service) AssetOwner(ctx context.Context, id string) (string, error) {
	var row models.AgentAsset
	err := s.st.DB.WithContext(ctx).Select("agent_id").Where("id = ?", id).Take(&row).Error
	if err := store.NotFound(err, "reply: find asset", "asset"); err != nil {
		return "", err
	}
	return row.AgentID, nil
}

// TaskAsset returns the bytes of asset id for a host showing task taskID of
// workspaceID: the asset must be named by an app block of one of the
// task's replies (so a host reaches only what the task shows). Anything
// else is one 404.
func (s *Service) TaskAsset(ctx context.Context, workspaceID, taskID, id string) ([]byte, error) {
	notFound := apperr.NotFoundf("asset not found")
	if !appblock.IsAssetID(id) || !models.IsID(taskID) {
		return nil, notFound
	}
	db := s.st.DB.WithContext(ctx)
	var t models.Task
	if err := db.Select("id", "agent_id").Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, notFound
		}
		return nil, fmt.Errorf("reply: find task: %w", err)
	}
	replies, err := s.List(ctx, taskID)
	if err != nil {
		return nil, err
	}
	shown := false
	for _, r := range replies {
		for _, b := range r.Blocks {
			shown = shown || (b.Type == appblock.TypeApp && b.AssetID == id)
		}
	}
	if !shown {
		return nil, notFound
	}
	var row models.AgentAsset
	if err := db.Where("id = ? AND agent_id = ?", id, t.AgentID).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, notFound
		}
		return nil, fmt.Errorf("reply: find asset: %w", err)
	}
	return s.blobs.Get(ctx, row.StorageKey)
}

// View is a stored reply.
type View struct {
	ID        string           `json:"id"`
	TaskID    string           `json:"task_id"`
	Final     bool             `json:"final"`
	Blocks    []appblock.Block `json:"blocks"`
	CreatedAt time.Time        `json:"created_at"`
}

func viewOf(r models.TaskReply) (View, error) {
	v := View{ID: r.ID, TaskID: r.TaskID, Final: r.Final, CreatedAt: r.CreatedAt}
	if err := json.Unmarshal(r.Blocks, &v.Blocks); err != nil {
		return View{}, fmt.Errorf("reply: stored blocks of %s: %w", r.ID, err)
	}
	return v, nil
}

// Post validates and stores a reply of the caller's agent on one of its
// tasks (appblock.ParseReply: every refusal is one invalid_blocks error
// with a reason per block, and nothing is stored), with a reply feed event
// in the same transaction.
func (s *Service) Post(ctx context.Context, c task.Caller, taskID string, body []byte) (View, error) {
	db := s.st.DB.WithContext(ctx)
	var t models.Task
	if !models.IsID(taskID) {
		return View{}, apperr.NotFoundf("task not found")
	}
	err := db.Where("id = ? AND workspace_id = ? AND agent_id = ?", taskID, c.WorkspaceID, c.AgentID).Take(&t).Error
	if err := store.NotFound(err, "reply: find task", "task"); err != nil {
		return View{}, err
	}
	r, err := appblock.ParseReply(ctx, body, c.AgentID, s)
	if err != nil {
		return View{}, err
	}
	row := models.TaskReply{ID: models.NewID(), TaskID: t.ID, AgentID: c.AgentID, Final: r.Final,
		Blocks: models.MustJSON(r.Blocks), CreatedAt: time.Now().UTC()}
	err = s.st.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("reply: record: %w", err)
		}
		ev := models.FeedEvent{TaskID: t.ID, Type: models.FeedReply, Payload: models.MustJSON(map[string]any{
			"reply_id": row.ID, "final": r.Final, "blocks": r.Blocks}), Actor: c.Actor, CreatedAt: row.CreatedAt}
		return feed.Insert(ctx, tx, false, ev)
	})
	if err != nil {
		return View{}, err
	}
	return View{ID: row.ID, TaskID: row.TaskID, Final: row.Final, Blocks: r.Blocks, CreatedAt: row.CreatedAt}, nil
}

// List returns a task's replies, oldest first (the caller checked the task
// is the workspace's).
func (s *Service) List(ctx context.Context, taskID string) ([]View, error) {
	var rows []models.TaskReply
	if err := s.st.DB.WithContext(ctx).Where("task_id = ?", taskID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("reply: list: %w", err)
	}
	out := make([]View, 0, len(rows))
	for _, r := range rows {
		v, err := viewOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
