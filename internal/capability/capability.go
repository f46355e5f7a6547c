package capability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/citation"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/internal/tool/translate"
	"github.com/appruntime/appruntime/models"
)

// The capabilities this package serves.
const (
	ListFiles      = "list_files"
	FilePreview    = "file_preview"
	SplitDocument  = "split_document"
	GetTranslation = "get_translation"
	ListCitations  = "list_citations"
)

// Service serves the capabilities.
type Service struct {
	st         *store.Store
	files      *files.Service
	translator translate.Provider
	now        func() time.Time
	poll       time.Duration
	redis      redis.UniversalClient
	keyPrefix  string
	previews   singleflight.Group
	blobs      storage.Store
	images     singleflight.Group
	gate       *limit.WorkGate
	ocrPasses  *limit.Semaphore
}

// Options configure a Service.
type Options struct {
	Store *store.Store
	Files *files.Service
	// Translator is the translation engine of get_translation; nil means
	// this deployment does not serve it (501).
	Translator translate.Provider
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Poll is how often a call waiting for another's translation looks
	// for it; zero is DefaultPoll.
	Poll time.Duration
	// Redis keeps each page's text (or its refusal) for PreviewCacheTTL,
	// under keys starting with KeyPrefix; nil computes it on every call
	// not shared with a concurrent one.
	Redis     redis.UniversalClient
	KeyPrefix string
	// Blobs keeps the page images PageImage renders; nil renders them on
	// every call not shared with a concurrent one.
	Blobs storage.Store
	// Gate admits each page rendering and OCR run (gate.go); nil runs
	// them unbounded but by their own budgets.
	Gate *limit.WorkGate
	// OCRPasses bounds the OCR passes from the queue one workspace runs at
	// once, fleet-wide (OCROutbox); nil bounds none.
	OCRPasses *limit.Semaphore
}

// DefaultPoll is how often a get_translation waiting for a translation
// another call is producing checks for it.
const DefaultPoll = 100 * time.Millisecond

// New returns a Service.
func New(o Options) *Service {
	s := &Service{st: o.Store, files: o.Files, translator: o.Translator, now: o.Now, poll: o.Poll, redis: o.Redis, keyPrefix: o.KeyPrefix, blobs: o.Blobs, gate: o.Gate, ocrPasses: o.OCRPasses}
	if s.now == nil {
		s.now = time.Now
	}
	if s.poll <= 0 {
		s.poll = DefaultPoll
	}
	return s
}

// Serves reports whether this deployment serves capability name: the file
// capabilities always, get_translation when a translation engine is
// configured. It is what runtime.capabilities is built from.
func (s *Service) Serves(name string) bool {
	switch name {
	case ListFiles, FilePreview, SplitDocument, ListCitations:
		return true
	case GetTranslation:
		return s.translator != nil
	}
	return false
}

// Call runs capability name for a session of taskID with payload, a JSON
// object (absent or null is {}), and returns its result. An unknown
// payload key or a value of the wrong type is 400; a name this package
// does not serve is 501.
func (s *Service) Call(ctx context.Context, taskID, name string, payload json.RawMessage) (any, error) {
	switch name {
	case ListFiles:
		var p struct{}
		if err := decode(payload, &p); err != nil {
			return nil, err
		}
		return s.ListFiles(ctx, taskID)
	case FilePreview:
		var p PreviewParams
		if err := decode(payload, &p); err != nil {
			return nil, err
		}
		return s.FilePreview(ctx, taskID, p)
	case SplitDocument:
		var p SplitParams
		if err := decode(payload, &p); err != nil {
			return nil, err
		}
		return s.SplitDocument(ctx, taskID, p)
	case GetTranslation:
		if s.translator == nil {
			return nil, errNoEngine
		}
		var p TranslationParams
		if err := decode(payload, &p); err != nil {
			return nil, err
		}
		return s.GetTranslation(ctx, taskID, p)
	case ListCitations:
		var p CitationParams
		if err := decode(payload, &p); err != nil {
			return nil, err
		}
		return s.ListCitations(ctx, taskID, p)
	}
	return nil, apperr.NotImplementedf("this deployment does not serve capability %q", name)
}

var errNoEngine = apperr.NotImplementedf("get_translation cannot run on this deployment: no translation engine is configured")

// decode reads a payload strictly into v.
func decode(payload json.RawMessage, v any) error {
	t := bytes.TrimSpace(payload)
	if len(t) == 0 || string(t) == "null" {
		t = []byte("{}")
	}
	if err := strictjson.Unmarshal(t, v); err != nil {
		return apperr.Invalidf("bad payload: %s", err)
	}
	return nil
}

// File is a file of the task as the capabilities return it: its Info and
// a managed-storage URL (what structured_data_extraction's file_url takes)
// with its expiry.
type File struct {
	files.Info
	URL          string    `json:"url"`
	URLExpiresAt time.Time `json:"url_expires_at"`
}

func (s *Service) describe(f models.File) File {
	url, expires := s.files.URL(f)
	return File{Info: files.InfoOf(f), URL: url, URLExpiresAt: expires}
}

// FileList is list_files' result.
type FileList struct {
	Files []File `json:"files"`
}

// ListFiles is list_files: the task's files, oldest first, each with a
// fresh managed-storage URL.
func (s *Service) ListFiles(ctx context.Context, taskID string) (FileList, error) {
	list, err := s.files.List(ctx, taskID)
	if err != nil {
		return FileList{}, err
	}
	out := FileList{Files: make([]File, len(list))}
	for i, f := range list {
		out.Files[i] = s.describe(f)
	}
	return out, nil
}

// PreviewParams are file_preview's: the file and the page (default 1).
type PreviewParams struct {
	FileID string `json:"file_id"`
	Page   *int   `json:"page"`
}

// Preview is file_preview's result: the file, the page asked for and its
// text (document.PageText), and a managed-storage URL of the whole file.
// OCR says the page had no text layer and its text was read by OCR; Words
// are then OCR's words with their boxes (fractions of the page), which the
// viewer lays over the page's image.
type Preview struct {
	File
	Page      int             `json:"page"`
	Text      string          `json:"text"`
	Truncated bool            `json:"truncated"`
	OCR       bool            `json:"ocr"`
	Words     []document.Word `json:"words,omitempty"`
	// Sheet is the sheet's name when the page is a spreadsheet's sheet.
	Sheet string `json:"sheet,omitempty"`
}

// FilePreview is file_preview.
func (s *Service) FilePreview(ctx context.Context, taskID string, p PreviewParams) (Preview, error) {
	if err := requireFileID(p.FileID); err != nil {
		return Preview{}, err
	}
	page := 1
	if p.Page != nil {
		page = *p.Page
	}
	f, err := s.files.Get(ctx, taskID, p.FileID)
	if err != nil {
		return Preview{}, err
	}
	if err := checkPage(page, f); err != nil {
		return Preview{}, err
	}
	text, err := s.pageText(ctx, f, page)
	if err != nil {
		return Preview{}, err
	}
	return Preview{File: s.describe(f), Page: page, Text: text.Text, Truncated: text.Truncated, OCR: text.OCR, Words: text.Words, Sheet: text.Sheet}, nil
}

func requireFileID(id string) error {
	if id == "" {
		return apperr.Invalidf("payload.file_id is required: the file_id of one of list_files' files")
	}
	return nil
}

// checkPage refuses a page outside the file (400).
func checkPage(page int, f models.File) error {
	if page < 1 || page > f.Pages {
		return apperr.Invalidf("payload.page must be from 1 to %d (the pages of %q), got %d", f.Pages, f.Name, page)
	}
	return nil
}

// SplitParams are split_document's: a PDF of the task and the page ranges
// to cut it into.
type SplitParams struct {
	FileID string           `json:"file_id"`
	Ranges []document.Range `json:"ranges"`
}

// Part is one file split_document made, with the range it holds.
type Part struct {
	File
	From int `json:"from"`
	To   int `json:"to"`
}

// SplitResult is split_document's result, in the order of the ranges.
type SplitResult struct {
	Files []Part `json:"files"`
}

// SplitDocument is split_document (files.Service.Split).
func (s *Service) SplitDocument(ctx context.Context, taskID string, p SplitParams) (SplitResult, error) {
	if err := requireFileID(p.FileID); err != nil {
		return SplitResult{}, err
	}
	parts, err := s.files.Split(ctx, taskID, p.FileID, p.Ranges)
	if err != nil {
		return SplitResult{}, err
	}
	out := SplitResult{Files: make([]Part, len(parts))}
	for i, f := range parts {
		out.Files[i] = Part{File: s.describe(f), From: p.Ranges[i].From, To: p.Ranges[i].To}
	}
	return out, nil
}

// agentOf returns the agent of taskID.
func (s *Service) agentOf(ctx context.Context, taskID string) (models.Agent, error) {
	var a models.Agent
	if !models.IsID(taskID) {
		return a, apperr.NotFoundf("task %s not found", taskID)
	}
	err := s.st.DB.WithContext(ctx).
		Joins("JOIN tasks ON tasks.agent_id = agents.id").
		Where("tasks.id = ?", taskID).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return a, apperr.NotFoundf("task %s not found", taskID)
	}
	if err != nil {
		return a, fmt.Errorf("capability: find the task's agent: %w", err)
	}
	return a, nil
}

// CitationParams are list_citations': file_name, when set, keeps the
// citations of that file of the task.
type CitationParams struct {
	FileName string `json:"file_name"`
}

// CitationList is list_citations' result: the task's citations, oldest
// first, each with the id open_citation's citation_ids takes.
type CitationList struct {
	Citations []citation.Citation `json:"citations"`
}

// ListCitations is list_citations (internal/citation).
func (s *Service) ListCitations(ctx context.Context, taskID string, p CitationParams) (CitationList, error) {
	if !models.IsID(taskID) {
		return CitationList{}, apperr.NotFoundf("task %s not found", taskID)
	}
	list, err := citation.List(ctx, s.st.DB, taskID, p.FileName)
	if err != nil {
		return CitationList{}, err
	}
	return CitationList{Citations: list}, nil
}

// Citations returns taskID's citations with ids, in the order asked, for
// the reviewer's viewer (open_citation's citation_ids); an id the task
// does not hold is a not_found error naming it (citation.ByIDs).
func (s *Service) Citations(ctx context.Context, taskID string, ids []int64) ([]citation.Citation, error) {
	return citation.ByIDs(ctx, s.st.DB, taskID, ids)
}
