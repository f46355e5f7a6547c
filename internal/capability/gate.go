package capability

import (
	"context"
	"fmt"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/models"
)

// Page renderings and OCR runs (one subprocess each) go through the
// service's gate (Options.Gate, limit.WorkGate): a bound on the runs of
// this process (DOCUMENT_RENDER_CONCURRENCY) and a share of one workspace
// fleet-wide (DOCUMENT_RENDER_SHARE), waited for up to
// DOCUMENT_RENDER_WAIT, past which the page is refused with a retryable
// 503 (never cached), so a workspace that floods its viewer with pages
// leaves the others' pages slots to render on
// (docs/architecture.md#15-page-images-and-ocr-poppler-and-tesseract-in-a-sandbox).

// gated returns ctx carrying the gate's admission for the workspace of
// f's task.
func (s *Service) gated(ctx context.Context, f models.File) (context.Context, error) {
	if s.gate == nil {
		return ctx, nil
	}
	workspace, err := s.workspaceOf(ctx, f)
	if err != nil {
		return nil, err
	}
	return document.WithAdmission(ctx, func(ctx context.Context, work time.Duration) (func(), error) {
		return s.gate.Acquire(ctx, workspace, work)
	}), nil
}

// workspaceOf is the workspace of f's task.
func (s *Service) workspaceOf(ctx context.Context, f models.File) (string, error) {
	var ws []string
	err := s.st.DB.WithContext(ctx).Model(&models.Task{}).Where("id = ?", f.TaskID).Limit(1).Pluck("workspace_id", &ws).Error
	if err != nil {
		return "", fmt.Errorf("capability: workspace of task %s: %w", f.TaskID, err)
	}
	if len(ws) == 0 {
		return "", apperr.NotFoundf("task %q not found", f.TaskID)
	}
	return ws[0], nil
}

// deadline bounds one computation of a page's text or image: a scanned
// page waits for the gate twice (its rendering, its OCR).
func (s *Service) deadline() time.Duration { return PreviewDeadline + 2*s.gate.MaxWait() }
