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
	"net/url"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/urlsign"
	"github.com/appruntime/appruntime/models"
)

// Service stores assets and replies. It is safe for concurrent use.
type Service struct {
	st    *store.Store
	blobs storage.Store
	// urls signs asset URLs for hosts (nil: the deployment has no
	// SECRETS_KEY and hands out none); base is PUBLIC_API_URL.
	urls *urlsign.Signer
	base *url.URL
	now  func() time.Time
}

// Options are what a Service needs.
type Options struct {
	Store *store.Store
	// Blobs keep the asset bytes.
	Blobs storage.Store
	// SecretsKey keys the signed asset URLs handed to hosts; without it
	// the replies carry none.
	SecretsKey []byte
	// PublicAPIURL is where the API serves AssetsPath.
	PublicAPIURL string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NewService returns a Service on o.
func NewService(o Options) (*Service, error) {
	s := &Service{st: o.Store, blobs: o.Blobs, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if len(o.SecretsKey) > 0 {
		var err error
		if s.urls, err = urlsign.New(o.SecretsKey, assetURLKeyInfo, AssetURLLifetime); err != nil {
			return nil, err
		}
		if s.base, err = url.Parse(o.PublicAPIURL); err != nil || s.base.Host == "" {
			return nil, fmt.Errorf("reply: PUBLIC_API_URL %q is not a URL", o.PublicAPIURL)
		}
	}
	return s, nil
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
	return s.shownAsset(ctx, s.st.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID), taskID, id)
}

// shownAsset returns the bytes of asset id when an app block of a reply of
// task taskID (found in tasks, a scoped query) names it; 404 otherwise.
func (s *Service) shownAsset(ctx context.Context, tasks *gorm.DB, taskID, id string) ([]byte, error) {
	notFound := apperr.NotFoundf("asset not found")
	if !appblock.IsAssetID(id) || !models.IsID(taskID) {
		return nil, notFound
	}
	var t models.Task
	if err := tasks.Select("id", "agent_id").Where("id = ?", taskID).Take(&t).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, notFound
		}
		return nil, fmt.Errorf("reply: find task: %w", err)
	}
	replies, err := s.List(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if _, shown := assetsOf(replies)[id]; !shown {
		return nil, notFound
	}
	var row models.AgentAsset
	if err := s.st.DB.WithContext(ctx).Where("id = ? AND agent_id = ?", id, t.AgentID).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, notFound
		}
		return nil, fmt.Errorf("reply: find asset: %w", err)
	}
	return s.blobs.Get(ctx, row.StorageKey)
}

// assetsOf is the set of asset ids the app blocks of replies name.
func assetsOf(replies []View) map[string]struct{} {
	ids := map[string]struct{}{}
	for _, r := range replies {
		for _, b := range r.Blocks {
			if b.Type == appblock.TypeApp {
				ids[b.AssetID] = struct{}{}
			}
		}
	}
	return ids
}

// View is a stored reply.
type View struct {
	ID        string           `json:"id"`
	TaskID    string           `json:"task_id"`
	Final     bool             `json:"final"`
	Blocks    []appblock.Block `json:"blocks"`
	CreatedAt time.Time        `json:"created_at"`
	// TaskStatus is the task's status once the reply was stored (only on
	// Post's answer): completed after a final reply on a running task.
	TaskStatus string `json:"task_status,omitempty"`
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
//
// A final reply is the agent's whole answer: on a running task it completes
// the task in that transaction. On a parked task (waiting_for_input) it
// ends the agent's turn and the await still decides: the task stays parked
// and the person who answers it sees the reply. A completed or failed task
// takes no reply (409, nothing stored).
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
	status := ""
	err = s.st.Tx(ctx, func(tx *gorm.DB) error {
		if status, err = settleTask(tx, t.ID, r.Final, row.CreatedAt); err != nil {
			return err
		}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("reply: record: %w", err)
		}
		ev := models.FeedEvent{TaskID: t.ID, Type: models.FeedReply, Payload: models.MustJSON(map[string]any{
			"reply_id": row.ID, "final": r.Final, "blocks": r.Blocks, "task_status": status}), Actor: c.Actor, CreatedAt: row.CreatedAt}
		return feed.Insert(ctx, tx, false, ev)
	})
	if err != nil {
		return View{}, err
	}
	return View{ID: row.ID, TaskID: row.TaskID, Final: row.Final, Blocks: r.Blocks, CreatedAt: row.CreatedAt, TaskStatus: status}, nil
}

// settleTask takes a reply on task taskID inside tx and returns the task's
// status after it. The conditional updates lock the task's row until tx
// ends, so a reply and a step or a resume on the same task are ordered: a
// final reply completes a running task, any reply leaves a parked one
// parked, and a task that is over refuses the reply.
func settleTask(tx *gorm.DB, taskID string, final bool, now time.Time) (string, error) {
	if final {
		res := tx.Model(&models.Task{}).Where("id = ? AND status = ?", taskID, models.TaskRunning).
			Updates(map[string]any{"status": models.TaskCompleted, "updated_at": now})
		if res.Error != nil {
			return "", fmt.Errorf("reply: complete task: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			return models.TaskCompleted, nil
		}
	}
	res := tx.Model(&models.Task{}).Where("id = ? AND status IN ?", taskID, []string{models.TaskRunning, models.TaskWaitingForInput}).
		Update("updated_at", now)
	if res.Error != nil {
		return "", fmt.Errorf("reply: lock task: %w", res.Error)
	}
	var current models.Task
	if err := tx.Select("status").Where("id = ?", taskID).Take(&current).Error; err != nil {
		return "", store.NotFound(err, "reply: reload task", "task")
	}
	if res.RowsAffected == 0 {
		return "", apperr.Conflictf("task is %s; it takes no more replies", current.Status)
	}
	return current.Status, nil
}

// TaskReplies returns the replies of task taskID of workspaceID, oldest
// first, for a host showing the task; another workspace's task is 404.
func (s *Service) TaskReplies(ctx context.Context, workspaceID, taskID string) ([]View, error) {
	if !models.IsID(taskID) {
		return nil, apperr.NotFoundf("task not found")
	}
	var t models.Task
	err := s.st.DB.WithContext(ctx).Select("id").Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if err := store.NotFound(err, "reply: find task", "task"); err != nil {
		return nil, err
	}
	return s.List(ctx, t.ID)
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
