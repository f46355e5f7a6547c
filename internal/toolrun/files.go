package toolrun

import (
	"context"
	"errors"
	"fmt"
	"io"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/tool/csvlookup"
	"github.com/appruntime/appruntime/models"
)

// AgentFiles finds a csv_lookup_tool's file: the newest file of that name
// uploaded to any task of the configured tool's agent. Files never change
// once stored, so a file's id is its version, and a new upload of the same
// name is a new version indexed once.
type AgentFiles struct {
	Store *store.Store
	Files *files.Service

	current ttlCache[csvlookup.FileRef]
}

// Current implements csvlookup.Files.
// A new upload of the name is seen within rowTTL.
func (a *AgentFiles) Current(ctx context.Context, t *models.ConfiguredTool, name string) (csvlookup.FileRef, error) {
	return a.current.get(ctx, t.WorkspaceID+"/"+t.AgentID+"/"+name, func(ctx context.Context) (csvlookup.FileRef, error) {
		return a.newest(ctx, t, name)
	})
}

func (a *AgentFiles) newest(ctx context.Context, t *models.ConfiguredTool, name string) (csvlookup.FileRef, error) {
	var f models.File
	err := a.Store.DB.WithContext(ctx).Model(&models.File{}).Select("files.id").
		Joins("JOIN tasks ON tasks.id = files.task_id").
		Where("tasks.agent_id = ? AND tasks.workspace_id = ? AND files.name = ?", t.AgentID, t.WorkspaceID, name).
		Order("files.created_at DESC").Order("files.id DESC").Take(&f).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return csvlookup.FileRef{}, apperr.NotFoundf("no file %q has been uploaded for this agent yet", name)
	}
	if err != nil {
		return csvlookup.FileRef{}, fmt.Errorf("toolrun: find file %q: %w", name, err)
	}
	return csvlookup.FileRef{ID: f.ID, Version: f.ID}, nil
}

// Open implements csvlookup.Files: the file streams from storage, never
// held whole.
func (a *AgentFiles) Open(ctx context.Context, ref csvlookup.FileRef) (io.ReadCloser, error) {
	var f models.File
	if err := a.Store.DB.WithContext(ctx).Where("id = ?", ref.ID).Take(&f).Error; err != nil {
		return nil, fmt.Errorf("toolrun: load file %s: %w", ref.ID, err)
	}
	return a.Files.Reader(ctx, f)
}
