package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/models"
)

// Page text is computed once per file and page: concurrent calls (on
// this replica) share one computation, and its outcome, a refusal
// included, is kept in Redis for PreviewCacheTTL, so that a document
// that burns its budget does so once an hour, not once a call; a page
// read by OCR is kept in the blob store too, for good (ocr.go). A file's
// bytes never change under its id, so the entry never goes stale. A
// refusal that holds for every page (document.WholeFile: a file that
// cannot be opened, a workbook's shared strings past their budget) is kept
// once for the file as well, so that its other pages cost one Redis read,
// not a parse each.
const (
	// PreviewCacheTTL is how long a page's text (or its refusal) is kept.
	PreviewCacheTTL = time.Hour
	// PreviewDeadline bounds one computation of a page's text, whoever
	// waits for it: past it the computation stops (document.MaxWork is
	// the budget's own, shorter bound). A scanned page is rendered and
	// OCR'd within it (document.MaxRenderWork, document.MaxOCRWork).
	PreviewDeadline = document.MaxWork + document.MaxRenderWork + document.MaxOCRWork
)

// cachedPage is a page's text or the refusal of reading it, as cached.
type cachedPage struct {
	Text      string          `json:"text,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
	OCR       bool            `json:"ocr,omitempty"`
	Words     []document.Word `json:"words,omitempty"`
	Sheet     string          `json:"sheet,omitempty"`
	Code      apperr.Code     `json:"code,omitempty"`
	Message   string          `json:"message,omitempty"`
	// wholeFile: the refusal holds for every page of the file.
	wholeFile bool
}

func (c cachedPage) result() (document.Text, error) {
	if c.Code != "" {
		return document.Text{}, apperr.New(c.Code, "%s", c.Message)
	}
	return document.Text{Text: c.Text, Truncated: c.Truncated, OCR: c.OCR, Words: c.Words, Sheet: c.Sheet}, nil
}

// contentFunc returns a file's bytes.
type contentFunc func(ctx context.Context) ([]byte, error)

// onceContent reads f's bytes on first use and keeps them, for a pass
// over its pages (OCRFile) that would otherwise read the file once per page.
func (s *Service) onceContent(f models.File) contentFunc {
	var (
		mu   sync.Mutex
		data []byte
	)
	return func(ctx context.Context) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if data != nil {
			return data, nil
		}
		d, err := s.files.Content(ctx, f)
		if err != nil {
			return nil, err
		}
		data = d
		return data, nil
	}
}

// pageText returns the text of page of f, from the cache, from a
// computation another call on this replica runs, or computed here under
// PreviewDeadline; a caller who hangs up stops waiting at once.
func (s *Service) pageText(ctx context.Context, f models.File, page int) (document.Text, error) {
	return s.pageTextOf(ctx, f, page, func(ctx context.Context) ([]byte, error) { return s.files.Content(ctx, f) })
}

// pageTextOf is pageText reading f's bytes, when it must, through content.
func (s *Service) pageTextOf(ctx context.Context, f models.File, page int, content contentFunc) (document.Text, error) {
	key := s.keyPrefix + "preview:" + f.ID + ":" + strconv.Itoa(page)
	fileKey := s.keyPrefix + "preview:" + f.ID + ":file"
	if s.redis != nil {
		// The page's entry, or else the file's refusal (one key per
		// command: docs/operators.md#redis-sentinel-and-cluster).
		for _, k := range [...]string{key, fileKey} {
			if raw, err := s.redis.Get(ctx, k).Bytes(); err == nil {
				var c cachedPage
				if json.Unmarshal(raw, &c) == nil {
					return c.result()
				}
			}
		}
	}
	ch := s.previews.DoChan(key, func() (any, error) {
		// Detached from the first caller: the others wait for it too.
		work, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.deadline())
		defer cancel()
		c, kept, err := s.keptOCR(work, f, page)
		if err != nil {
			return nil, err
		}
		if !kept {
			if c, err = s.computePage(work, f, page, content); err != nil {
				return nil, err
			}
		}
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("capability: encode page %d of file %s: %w", page, f.ID, err)
		}
		if c.OCR && !kept && s.blobs != nil {
			// OCR costs seconds: its text outlives Redis's hour (ocr.go).
			if err := s.blobs.Put(work, pageTextKey(f, page), "application/json", raw); err != nil {
				return nil, err
			}
		}
		if s.redis != nil {
			// A cache that cannot be written is only slower.
			if c.wholeFile {
				_ = s.redis.Set(work, fileKey, raw, PreviewCacheTTL).Err()
			}
			_ = s.redis.Set(work, key, raw, PreviewCacheTTL).Err()
		}
		return c, nil
	})
	select {
	case <-ctx.Done():
		return document.Text{}, apperr.Wrap(ctx.Err(), apperr.Timeout, "reading page %d of %q was stopped", page, f.Name)
	case r := <-ch:
		if r.Err != nil {
			return document.Text{}, r.Err
		}
		return r.Val.(cachedPage).result()
	}
}

// keptOCR returns page of f's OCR'd text as the blob store keeps it
// (ocr.go), kept false when it keeps none.
func (s *Service) keptOCR(ctx context.Context, f models.File, page int) (c cachedPage, kept bool, err error) {
	if s.blobs == nil || !document.HasPageImages(f.ContentType) {
		return c, false, nil
	}
	raw, err := s.blobs.Get(ctx, pageTextKey(f, page))
	if apperr.Is(err, apperr.NotFound) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	return c, json.Unmarshal(raw, &c) == nil, nil
}

// computePage reads page of f: its text, or a refusal that reading it
// again would repeat (an invalid or over-budget document) as a
// cachedPage; any other failure (storage, a deadline) is an error, not
// cached.
func (s *Service) computePage(ctx context.Context, f models.File, page int, content contentFunc) (cachedPage, error) {
	data, err := content(ctx)
	if err != nil {
		return cachedPage{}, err
	}
	ctx, err = s.gated(ctx, f)
	if err != nil {
		return cachedPage{}, err
	}
	text, err := document.PageText(ctx, data, f.ContentType, page)
	var e *apperr.Error
	switch {
	case err == nil:
		return cachedPage{Text: text.Text, Truncated: text.Truncated, OCR: text.OCR, Words: text.Words, Sheet: text.Sheet}, nil
	case errors.As(err, &e) && (e.Code == apperr.OverBudget || e.Code == apperr.Invalid || e.Code == apperr.UnsupportedMedia):
		return cachedPage{Code: e.Code, Message: e.Message, wholeFile: document.WholeFile(err)}, nil
	}
	return cachedPage{}, fmt.Errorf("capability: page %d of file %s: %w", page, f.ID, err)
}
