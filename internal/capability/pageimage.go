package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/models"
)

// Page images are rendered lazily, on the first request for a file's page
// at a size (the viewer asks for its thumbnails and pages as it shows
// them), by the replica that serves it, with concurrent requests sharing
// one rendering (single-flight) under document.MaxRenderWork; the PNG is
// kept in the blob store under pageImageKey, so every replica serves it
// from there afterwards. A refusal (a hostile or broken page) is kept in
// Redis for PreviewCacheTTL, so that a page that burns its budget does so
// once an hour, not once a request.

// pageImageKey is the blob key of page of file f at size: a file's bytes
// never change under its id, so neither does the image.
func pageImageKey(f models.File, page, size int) string {
	return "pages/" + f.TaskID + "/" + f.ID + "/" + strconv.Itoa(page) + "-" + strconv.Itoa(size) + ".png"
}

// PageImage returns page of the task's file fileID as a PNG whose long
// side is size pixels (document.Sizes), from the blob store or rendered
// here. A page out of range is an invalid error; a document past a budget
// an over_budget one; a file of a type without page images (text, sheets)
// unsupported_media.
func (s *Service) PageImage(ctx context.Context, taskID, fileID string, page, size int) ([]byte, error) {
	if err := requireFileID(fileID); err != nil {
		return nil, err
	}
	f, err := s.files.Get(ctx, taskID, fileID)
	if err != nil {
		return nil, err
	}
	if err := checkPage(page, f); err != nil {
		return nil, err
	}
	key := pageImageKey(f, page, size)
	if s.blobs != nil {
		if img, err := s.blobs.Get(ctx, key); err == nil {
			return img, nil
		} else if !apperr.Is(err, apperr.NotFound) {
			return nil, err
		}
	}
	refusalKey := s.keyPrefix + "pageimage:" + key
	if s.redis != nil {
		if raw, err := s.redis.Get(ctx, refusalKey).Bytes(); err == nil {
			var c cachedPage
			if json.Unmarshal(raw, &c) == nil && c.Code != "" {
				_, err := c.result()
				return nil, err
			}
		}
	}
	ch := s.images.DoChan(key, func() (any, error) {
		work, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.deadline())
		defer cancel()
		data, err := s.files.Content(work, f)
		if err != nil {
			return nil, err
		}
		if work, err = s.gated(work, f); err != nil {
			return nil, err
		}
		img, err := document.RenderPage(work, data, f.ContentType, page, size)
		var e *apperr.Error
		switch {
		case err == nil:
		case errors.As(err, &e) && (e.Code == apperr.OverBudget || e.Code == apperr.Invalid || e.Code == apperr.UnsupportedMedia):
			if s.redis != nil {
				if raw, merr := json.Marshal(cachedPage{Code: e.Code, Message: e.Message}); merr == nil {
					_ = s.redis.Set(work, refusalKey, raw, PreviewCacheTTL).Err() // a cache that cannot be written is only slower
				}
			}
			return nil, err
		default:
			return nil, fmt.Errorf("capability: image of page %d of file %s: %w", page, f.ID, err)
		}
		if s.blobs != nil {
			if err := s.blobs.Put(work, key, "image/png", img); err != nil {
				return nil, err
			}
		}
		return img, nil
	})
	select {
	case <-ctx.Done():
		return nil, apperr.Wrap(ctx.Err(), apperr.Timeout, "rendering page %d of %q was stopped", page, f.Name)
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]byte), nil
	}
}
