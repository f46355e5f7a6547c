package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/urlsign"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// MaxFileBytes is the largest file a task takes, by upload or by split.
// 50 MiB holds a 500-page scan (the most pages an extraction reads) at
// about 100 KB a page, and is above the 32 MiB an extraction sends to its
// model on purpose: a larger scan can still be uploaded and split into
// parts that fit. It also bounds the memory one upload holds, since the
// file is read once to be typed and its pages counted.
const MaxFileBytes = 50 << 20

// MaxSplitBytes bounds what one split writes in all: its parts together
// may exceed the source (fonts and images shared by the parts are copied
// into each), but never by more than this.
const MaxSplitBytes = 4 * MaxFileBytes

// Service keeps a task's files.
type Service struct {
	st      *store.Store
	blobs   storage.Store
	urls    *urlsign.Signer
	baseURL *url.URL
	now     func() time.Time
	presign storage.Presigner // nil: every download streams through Serve
}

// Options configure a Service.
type Options struct {
	Store *store.Store
	// Blobs holds the bytes (storage.Open).
	Blobs storage.Store
	// SecretsKey is the deployment's SECRETS_KEY; the URL signing key is
	// derived from it.
	SecretsKey []byte
	// PublicAPIURL is how browsers and the worker reach the API: the base
	// of every managed-storage URL.
	PublicAPIURL string
	// Presign (BLOB_PRESIGN) answers a download of a PDF or an image with
	// a redirect to a presigned GET of the bucket (see Serve); it needs
	// Blobs to be a storage.Presigner (BLOB_URL).
	Presign bool
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// New returns a Service.
func New(o Options) (*Service, error) {
	base, err := url.Parse(strings.TrimRight(o.PublicAPIURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.RawQuery != "" || base.Fragment != "" || base.User != nil {
		return nil, fmt.Errorf("files: PUBLIC_API_URL %q is not an http(s) base URL", o.PublicAPIURL)
	}
	urls, err := urlsign.New(o.SecretsKey, urlKeyInfo, URLLifetime)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	svc := &Service{st: o.Store, blobs: o.Blobs, urls: urls, baseURL: base, now: now}
	if o.Presign {
		p, ok := o.Blobs.(storage.Presigner)
		if !ok {
			return nil, errors.New("files: BLOB_PRESIGN needs a blob store that presigns (BLOB_URL)")
		}
		svc.presign = p
	}
	return svc, nil
}

// Info is a file as the capabilities and the agent API show it.
type Info struct {
	FileID      string    `json:"file_id"`
	Name        string    `json:"name"`
	ContentType string    `json:"content_type"`
	Pages       int       `json:"pages"`
	Size        int64     `json:"size"`
	CreatedAt   time.Time `json:"created_at"`
}

// InfoOf returns f's Info.
func InfoOf(f models.File) Info {
	return Info{FileID: f.ID, Name: f.Name, ContentType: f.ContentType, Pages: f.Pages, Size: f.Size, CreatedAt: f.CreatedAt}
}

// Upload stores a file of taskID read from body: at most MaxFileBytes (one
// byte more is read to know, never the rest: 413), typed by its bytes
// (document.Sniff: 415 for a kind the product does not read or that a
// browser would run), its name cleaned (CleanName) and its pages counted
// (400 when the document is not what its bytes claim). A task that does
// not exist is not_found.
func (s *Service) Upload(ctx context.Context, taskID, name, declaredType string, body io.Reader) (models.File, error) {
	if err := s.taskExists(ctx, taskID); err != nil {
		return models.File{}, err
	}
	data, err := io.ReadAll(io.LimitReader(body, MaxFileBytes+1))
	if err != nil {
		return models.File{}, apperr.Wrap(err, apperr.Invalid, "the upload could not be read to its end")
	}
	if len(data) > MaxFileBytes {
		return models.File{}, apperr.New(apperr.TooLarge, "the file is larger than %d MiB", MaxFileBytes>>20)
	}
	if len(data) == 0 {
		return models.File{}, apperr.Invalidf("the file is empty")
	}
	contentType, err := document.Sniff(name, declaredType, data)
	if err != nil {
		return models.File{}, err
	}
	pages, err := document.PagesContext(ctx, data, contentType)
	if err != nil {
		return models.File{}, err
	}
	f := s.newFile(taskID, CleanName(name, contentType), contentType, pages, data)
	if _, err := s.store(ctx, func(b *batch) error { return b.put(ctx, f, data) }); err != nil {
		return models.File{}, err
	}
	return f, nil
}

func (s *Service) newFile(taskID, name, contentType string, pages int, data []byte) models.File {
	id := models.NewID()
	return models.File{
		ID: id, TaskID: taskID, Name: name, ContentType: contentType, Pages: pages,
		Size: int64(len(data)), StorageKey: "files/" + taskID + "/" + id, CreatedAt: s.now().UTC(),
	}
}

// batch stores new files: their bytes as they come (so a split holds one
// part at a time), then all their rows in one transaction. Until commit
// succeeds nothing is visible; abort removes the bytes already stored.
type batch struct {
	s     *Service
	files []models.File
}

func (b *batch) put(ctx context.Context, f models.File, data []byte) error {
	if err := b.s.blobs.Put(ctx, f.StorageKey, f.ContentType, data); err != nil {
		return fmt.Errorf("files: store %s: %w", f.Name, err)
	}
	b.files = append(b.files, f)
	return nil
}

// commit writes the batch's rows and, beside each PDF and image, the
// outbox row of its OCR pass (jobs.OCRFile): the pass is owed from the
// moment the file exists, so a worker that dies, or a Redis that loses
// the job, delays it by a sweep and loses nothing
// (docs/architecture.md#15-page-images-and-ocr-poppler-and-tesseract-in-a-sandbox).
func (b *batch) commit(ctx context.Context) error {
	return b.s.st.Tx(ctx, func(tx *gorm.DB) error {
		for i := range b.files {
			f := &b.files[i]
			if err := tx.Create(f).Error; err != nil {
				return fmt.Errorf("files: save %s: %w", f.Name, err)
			}
			if !document.HasPageImages(f.ContentType) {
				continue
			}
			if _, err := outbox.Add(tx, outbox.KindOCR, jobs.OCRJob{TaskID: f.TaskID, FileID: f.ID}); err != nil {
				return err
			}
		}
		return nil
	})
}

// abort removes the stored bytes, even when ctx has ended (a client that
// went away must not leave them behind).
func (b *batch) abort(ctx context.Context) {
	cleanup := context.WithoutCancel(ctx)
	for _, f := range b.files {
		_ = b.s.blobs.Delete(cleanup, f.StorageKey)
	}
}

// store runs fill on a new batch and commits it, or aborts it when fill
// or the commit fails.
func (s *Service) store(ctx context.Context, fill func(b *batch) error) ([]models.File, error) {
	b := &batch{s: s}
	err := fill(b)
	if err == nil {
		err = b.commit(ctx)
	}
	if err != nil {
		b.abort(ctx)
		return nil, err
	}
	return b.files, nil
}

func (s *Service) taskExists(ctx context.Context, taskID string) error {
	if !models.IsID(taskID) {
		return apperr.NotFoundf("task %s not found", taskID)
	}
	var n int64
	if err := s.st.DB.WithContext(ctx).Model(&models.Task{}).Where("id = ?", taskID).Count(&n).Error; err != nil {
		return fmt.Errorf("files: find task: %w", err)
	}
	if n == 0 {
		return apperr.NotFoundf("task %s not found", taskID)
	}
	return nil
}

// List returns the files of taskID, oldest first.
func (s *Service) List(ctx context.Context, taskID string) ([]models.File, error) {
	out := []models.File{}
	if !models.IsID(taskID) {
		return out, nil
	}
	err := s.st.DB.WithContext(ctx).Where("task_id = ?", taskID).Order("created_at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("files: list: %w", err)
	}
	return out, nil
}

// Get returns the file fileID of taskID. A file of another task is
// not_found, exactly like one that does not exist.
func (s *Service) Get(ctx context.Context, taskID, fileID string) (models.File, error) {
	var f models.File
	if !models.IsID(fileID) || !models.IsID(taskID) {
		return f, notFound(fileID)
	}
	err := s.st.DB.WithContext(ctx).Where("id = ? AND task_id = ?", fileID, taskID).Take(&f).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return f, notFound(fileID)
	}
	if err != nil {
		return f, fmt.Errorf("files: get: %w", err)
	}
	return f, nil
}

func notFound(fileID string) error {
	return apperr.NotFoundf("file %q not found on this task", fileID)
}

// Open returns the file fileID of taskID (as Get) and its bytes.
func (s *Service) Open(ctx context.Context, taskID, fileID string) (models.File, []byte, error) {
	f, err := s.Get(ctx, taskID, fileID)
	if err != nil {
		return f, nil, err
	}
	data, err := s.Content(ctx, f)
	return f, data, err
}

// Reader returns a reader of f's bytes that never holds them whole
// (storage.Store.Open); missing bytes are an internal error, as in Content.
func (s *Service) Reader(ctx context.Context, f models.File) (io.ReadCloser, error) {
	r, err := s.blobs.Open(ctx, f.StorageKey)
	if err != nil {
		return nil, fmt.Errorf("files: the bytes of file %s (%s) are unreadable: %v", f.ID, f.StorageKey, err)
	}
	return r, nil
}

// Content returns the bytes of f. Bytes missing from the blob store while
// the row exists are an internal error (storage lost them), not a 404, so
// the blob store's error is formatted (%v), not wrapped: its not_found code
// must not become the caller's.
func (s *Service) Content(ctx context.Context, f models.File) ([]byte, error) {
	data, err := s.blobs.Get(ctx, f.StorageKey)
	if err != nil {
		return nil, fmt.Errorf("files: the bytes of file %s (%s) are unreadable: %v", f.ID, f.StorageKey, err)
	}
	return data, nil
}
