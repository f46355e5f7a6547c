package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// A PDF or an image uploaded to a task (or split from one) gets an OCR
// pass on the worker (the ocr_file job, relayed from the outbox row its
// upload wrote): every page is read as file_preview reads it (pageText:
// its text layer, or OCR when it has none), each page's reading taking a
// slot of the gate (gate.go) as the viewer's do, so one workspace's
// uploads hold at most its share of the page readers. A page's OCR'd text
// and word boxes are kept in the blob store beside its images
// (pageTextKey) as well as in Redis, since a page's OCR costs seconds and
// Redis keeps a page's text an hour; the pass's outcome, which pages were
// OCR'd, is kept too (ocrKey). A pass that cannot finish (the gate
// refused a page, a deadline) fails and is retried, going on where it
// stopped; a pass lost altogether costs nothing but time, since every
// reader of a page reads it through pageText, which OCRs a page not yet
// read (docs/architecture.md#15-page-images-and-ocr-poppler-and-tesseract-in-a-sandbox).

// MaxOCRPages bounds the pages one OCR pass reads: the most pages an
// extraction reads. A longer document's later pages are read when asked.
const MaxOCRPages = 500

// MaxOCRTextBytes bounds the OCR'd text OCRText returns for one file.
const MaxOCRTextBytes = 2 << 20

// OCRResult is the outcome of a file's OCR pass.
type OCRResult struct {
	// Pages is how many pages the pass read (at most MaxOCRPages).
	Pages int `json:"pages"`
	// OCRPages are the pages without a text layer whose text was read by
	// OCR, in order.
	OCRPages []int `json:"ocr_pages"`
	// Refused are the pages a budget refused (a hostile page), with why.
	Refused map[int]string `json:"refused,omitempty"`
}

// OCRPage is the text OCR read on one page.
type OCRPage struct {
	Page int
	Text string
}

func pageTextKey(f models.File, page int) string {
	return "pages/" + f.TaskID + "/" + f.ID + "/" + strconv.Itoa(page) + "-text.json"
}

func ocrKey(f models.File) string { return "pages/" + f.TaskID + "/" + f.ID + "/ocr.json" }

// ErrOCRPassWaits is OCROutbox's answer when the file's workspace runs as
// many OCR passes from the queue as it may (Options.OCRPasses): the job
// goes back to wait its turn, not counted as a failed try (the worker's
// asynq IsFailure), having held a worker's slot for a few milliseconds
// rather than for its pages. So a workspace that uploads a flood of scans
// holds at most its share of the extract queue's workers, and the jobs of
// other workspaces queued behind its flood (their extraction /runs, their
// uploads' passes) are not held up by it
// (docs/architecture.md#15-page-images-and-ocr-poppler-and-tesseract-in-a-sandbox).
var ErrOCRPassWaits = errors.New("capability: the workspace runs as many OCR passes as it may; this one waits its turn")

// OCROutbox runs the OCR pass of outbox row outboxID's file (the worker's
// ocr_file job). A row or file that no longer exists is done. The pass
// takes one of its workspace's OCR pass slots without waiting; when none
// is free it answers ErrOCRPassWaits, unless mayWait is false (the job's
// last try), when it runs anyway.
func (s *Service) OCROutbox(ctx context.Context, outboxID string, mayWait bool) error {
	var row models.Outbox
	err := s.st.DB.WithContext(ctx).Where("id = ?", outboxID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("capability: load OCR job: %w", err)
	}
	var j jobs.OCRJob
	if err := row.Payload.Decode(&j); err != nil {
		return apperr.Invalidf("the OCR job %s is malformed: %v", outboxID, err)
	}
	f, err := s.files.Get(ctx, j.TaskID, j.FileID)
	if apperr.Is(err, apperr.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if s.ocrPasses != nil && mayWait && document.HasPageImages(f.ContentType) {
		workspace, err := s.workspaceOf(ctx, f)
		if err != nil {
			return err
		}
		release, err := s.ocrPasses.Acquire(ctx, workspace)
		if errors.Is(err, limit.ErrSlotsTaken) {
			return fmt.Errorf("%w: %w", ErrOCRPassWaits, err)
		}
		if err != nil {
			return err
		}
		defer release()
	}
	_, err = s.OCRFile(ctx, f)
	return err
}

// OCRFile returns the outcome of f's OCR pass, kept from an earlier pass
// or run here: its first MaxOCRPages pages read through pageText (a page
// read already costs nothing), the file's bytes read once for the pass. A page a budget refuses is recorded and
// the pass goes on; any other failure (the gate refused, ctx ended,
// storage) stops it with that error, the pages read so far kept.
func (s *Service) OCRFile(ctx context.Context, f models.File) (OCRResult, error) {
	if !document.HasPageImages(f.ContentType) {
		return OCRResult{}, nil
	}
	if s.blobs != nil {
		raw, err := s.blobs.Get(ctx, ocrKey(f))
		if err == nil {
			var r OCRResult
			if json.Unmarshal(raw, &r) == nil {
				return r, nil
			}
		} else if !apperr.Is(err, apperr.NotFound) {
			return OCRResult{}, err
		}
	}
	r := OCRResult{Pages: min(f.Pages, MaxOCRPages), OCRPages: []int{}}
	content := s.onceContent(f) // read once for the pass, not once a page
	for page := 1; page <= r.Pages; page++ {
		text, err := s.pageTextOf(ctx, f, page, content)
		switch code := apperr.CodeOf(err); {
		case err == nil:
			if text.OCR {
				r.OCRPages = append(r.OCRPages, page)
			}
		case code == apperr.OverBudget || code == apperr.Invalid || code == apperr.UnsupportedMedia:
			if r.Refused == nil {
				r.Refused = map[int]string{}
			}
			_, _, r.Refused[page] = apperr.Public(err)
		default:
			return OCRResult{}, err
		}
	}
	if s.blobs != nil {
		raw, err := json.Marshal(r)
		if err != nil {
			return OCRResult{}, fmt.Errorf("capability: encode OCR result: %w", err)
		}
		if err := s.blobs.Put(ctx, ocrKey(f), "application/json", raw); err != nil {
			return OCRResult{}, err
		}
	}
	return r, nil
}

// OCRText returns the text OCR read on f's pages without a text layer (its
// OCR pass, run here when no pass finished yet), in page order, at most
// MaxOCRTextBytes in all: pages past it are left out.
func (s *Service) OCRText(ctx context.Context, f models.File) (OCRResult, []OCRPage, error) {
	r, err := s.OCRFile(ctx, f)
	if err != nil {
		return OCRResult{}, nil, err
	}
	var out []OCRPage
	size := 0
	for _, page := range r.OCRPages {
		text, err := s.pageText(ctx, f, page)
		if err != nil {
			return OCRResult{}, nil, err
		}
		if size += len(text.Text); size > MaxOCRTextBytes {
			break
		}
		out = append(out, OCRPage{Page: page, Text: text.Text})
	}
	return r, out, nil
}
