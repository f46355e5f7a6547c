package files_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// fixture is a files service on a rolled-back transaction, its blobs in a
// directory of the test's own, with two tasks of one tenant.
type fixture struct {
	svc          *files.Service
	st           *store.Store
	blobs        *faultyBlobs
	blobDir      string
	clock        *clock
	task, other  string
	publicAPIURL string
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// faultyBlobs fails every Put after the first okPuts (negative: never).
type faultyBlobs struct {
	storage.Store
	mu     sync.Mutex
	okPuts int
}

func (f *faultyBlobs) Put(ctx context.Context, key, contentType string, data []byte) error {
	f.mu.Lock()
	if f.okPuts == 0 {
		f.mu.Unlock()
		return errors.New("disk full")
	}
	f.okPuts--
	f.mu.Unlock()
	return f.Store.Put(ctx, key, contentType, data)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := testkit.Tx(t)
	dir := t.TempDir()
	d, err := storage.NewDir(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	f := &fixture{
		st: st, blobs: &faultyBlobs{Store: d, okPuts: -1}, blobDir: dir,
		clock:        &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)},
		publicAPIURL: "https://api.example.test",
	}
	f.svc, err = files.New(files.Options{Store: st, Blobs: f.blobs, SecretsKey: testkit.TestKey, PublicAPIURL: f.publicAPIURL, Now: f.clock.Now})
	require.NoError(t, err)
	tn := testkit.NewTenant(t, st.DB)
	f.task, f.other = newTask(t, st, tn), newTask(t, st, tn)
	return f
}

func newTask(t *testing.T, st *store.Store, tn testkit.Tenant) string {
	t.Helper()
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	return task.ID
}

func (f *fixture) upload(t *testing.T, task, name string, data []byte) models.File {
	t.Helper()
	file, err := f.svc.Upload(context.Background(), task, name, "", bytes.NewReader(data))
	require.NoError(t, err)
	return file
}

// blobCount is how many blobs the directory holds.
func (f *fixture) blobCount(t *testing.T) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(f.blobDir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	}))
	return n
}

func (f *fixture) rowCount(t *testing.T) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.st.DB.Model(&models.File{}).Where("task_id IN ?", []string{f.task, f.other}).Count(&n).Error)
	return n
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 3))))
	return b.Bytes()
}

func TestUpload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	pdf := documenttest.PDF("one", "two", "three")

	file, err := f.svc.Upload(ctx, f.task, `C:\Users\ana\Invoices\March invoice.pdf`, "application/octet-stream", bytes.NewReader(pdf))
	require.NoError(t, err)
	require.Equal(t, "March invoice.pdf", file.Name)
	require.Equal(t, document.TypePDF, file.ContentType)
	require.Equal(t, 3, file.Pages)
	require.EqualValues(t, len(pdf), file.Size)
	require.Equal(t, "files/"+f.task+"/"+file.ID, file.StorageKey)

	var row models.File
	require.NoError(t, f.st.DB.Where("id = ?", file.ID).Take(&row).Error)
	require.Equal(t, file.Name, row.Name)
	require.Equal(t, 3, row.Pages)
	stored, err := os.ReadFile(filepath.Join(f.blobDir, "files", f.task, file.ID))
	require.NoError(t, err)
	require.Equal(t, pdf, stored)

	_, data, err := f.svc.Open(ctx, f.task, file.ID)
	require.NoError(t, err)
	require.Equal(t, pdf, data)
}

// TestUploadTypes runs uploads through sniffing, page counting and name
// cleaning: what is stored is what the bytes are.
func TestUploadTypes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name, declared string
		data           []byte
		wantName       string
		wantType       string
		wantPages      int
		wantCode       apperr.Code
	}{
		{"scan.pdf", "application/pdf", documenttest.PDF("a", "b"), "scan.pdf", document.TypePDF, 2, ""},
		{"photo.pdf", "application/pdf", pngBytes(t), "photo.pdf.png", document.TypePNG, 1, ""},
		{"report.exe", "application/x-msdownload", documenttest.PDF("a"), "report.exe.pdf", document.TypePDF, 1, ""},
		{"rows.csv", "text/csv", []byte("sku,qty\nA-1,4\n"), "rows.csv", document.TypeCSV, 1, ""},
		{"notes", "text/plain", []byte("hello"), "notes.txt", document.TypeText, 1, ""},
		{"page.html", "text/html", []byte("<html><script>alert(1)</script>"), "", "", 0, apperr.UnsupportedMedia},
		{"invoice.pdf", "application/pdf", []byte("<!DOCTYPE html><p>not a pdf"), "", "", 0, apperr.UnsupportedMedia},
		{"logo.svg", "image/svg+xml", []byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), "", "", 0, apperr.UnsupportedMedia},
		{"tool.bin", "", []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0}, "", "", 0, apperr.UnsupportedMedia},
		{"broken.pdf", "application/pdf", []byte("%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF"), "", "", 0, apperr.Invalid},
		{"empty.txt", "text/plain", nil, "", "", 0, apperr.Invalid},
	}
	for _, tc := range cases {
		file, err := f.svc.Upload(context.Background(), f.task, tc.name, tc.declared, bytes.NewReader(tc.data))
		if tc.wantCode != "" {
			require.True(t, apperr.Is(err, tc.wantCode), "%s: %v", tc.name, err)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.wantName, file.Name, tc.name)
		require.Equal(t, tc.wantType, file.ContentType, tc.name)
		require.Equal(t, tc.wantPages, file.Pages, tc.name)
	}
	list, err := f.svc.List(context.Background(), f.task)
	require.NoError(t, err)
	require.Len(t, list, 5, "refused uploads leave no row")
	require.Equal(t, 5, f.blobCount(t), "and no bytes")
}

// endless is an upload that never ends, counting what was read of it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestUploadSizeCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)

	body := &endless{}
	_, err := f.svc.Upload(ctx, f.task, "huge.txt", "text/plain", body)
	require.True(t, apperr.Is(err, apperr.TooLarge), "%v", err)
	require.ErrorContains(t, err, "larger than 50 MiB")
	require.LessOrEqual(t, body.read, int64(files.MaxFileBytes+64<<10), "the excess is not read, let alone buffered")

	exact, err := f.svc.Upload(ctx, f.task, "exact.txt", "text/plain", io.LimitReader(&endless{}, files.MaxFileBytes))
	require.NoError(t, err, "a file of exactly the cap is taken")
	require.EqualValues(t, files.MaxFileBytes, exact.Size)
	require.Equal(t, 1, f.blobCount(t))
}

func TestUploadToATaskThatDoesNotExist(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, task := range []string{models.NewID(), "not-a-uuid", ""} {
		_, err := f.svc.Upload(context.Background(), task, "a.txt", "", strings.NewReader("x"))
		require.True(t, apperr.Is(err, apperr.NotFound), "%q: %v", task, err)
	}
}

func TestUploadFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.blobs.okPuts = 0
	_, err := f.svc.Upload(context.Background(), f.task, "a.txt", "", strings.NewReader("x"))
	require.ErrorContains(t, err, "disk full")
	require.Zero(t, f.rowCount(t))
}

func TestFilesAreScopedToTheirTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	mine := f.upload(t, f.task, "mine.txt", []byte("mine"))
	theirs := f.upload(t, f.other, "theirs.txt", []byte("theirs"))
	later := f.upload(t, f.task, "later.txt", []byte("later"))

	list, err := f.svc.List(ctx, f.task)
	require.NoError(t, err)
	require.Equal(t, []string{mine.ID, later.ID}, []string{list[0].ID, list[1].ID})
	require.Len(t, list, 2, "another task's files are not listed")

	_, err = f.svc.Get(ctx, f.task, theirs.ID)
	require.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
	_, _, otherMsg := apperr.Public(err)
	absent := models.NewID()
	_, err = f.svc.Get(ctx, f.task, absent)
	_, _, absentMsg := apperr.Public(err)
	require.Equal(t, strings.ReplaceAll(absentMsg, absent, theirs.ID), otherMsg, "another task's file reads exactly like a missing one")
	_, _, err = f.svc.Open(ctx, f.task, theirs.ID)
	require.True(t, apperr.Is(err, apperr.NotFound), "%v", err)
	_, err = f.svc.Get(ctx, f.task, "../"+theirs.ID)
	require.True(t, apperr.Is(err, apperr.NotFound), "%v", err)

	got, err := f.svc.Get(ctx, f.other, theirs.ID)
	require.NoError(t, err)
	require.Equal(t, "theirs.txt", got.Name)
}

func TestSplit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	var pages []string
	for i := 1; i <= 12; i++ {
		pages = append(pages, fmt.Sprintf("Page %d of the batch", i))
	}
	src := f.upload(t, f.task, "batch.pdf", documenttest.PDF(pages...))
	require.Equal(t, 12, src.Pages)

	ranges := []document.Range{{From: 1, To: 3}, {From: 4, To: 4}, {From: 5, To: 12}}
	parts, err := f.svc.Split(ctx, f.task, src.ID, ranges)
	require.NoError(t, err)
	require.Len(t, parts, 3)
	for i, part := range parts {
		r := ranges[i]
		require.Equal(t, f.task, part.TaskID)
		require.Equal(t, r.Pages(), part.Pages, "part %d", i)
		_, data, err := f.svc.Open(ctx, f.task, part.ID)
		require.NoError(t, err)
		counted, err := document.PDFPages(data)
		require.NoError(t, err)
		require.Equal(t, r.Pages(), counted, "the stored part %d really has its pages", i)
		first, err := document.PageText(ctx, data, document.TypePDF, 1)
		require.NoError(t, err)
		require.Equal(t, pages[r.From-1], first.Text)
	}
	require.Equal(t, []string{"batch, pages 1-3.pdf", "batch, page 4.pdf", "batch, pages 5-12.pdf"},
		[]string{parts[0].Name, parts[1].Name, parts[2].Name})
	list, err := f.svc.List(ctx, f.task)
	require.NoError(t, err)
	require.Len(t, list, 4, "the parts are new files of the task, the source stays")
}

func TestSplitRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	src := f.upload(t, f.task, "three.pdf", documenttest.PDF("a", "b", "c"))
	theirs := f.upload(t, f.other, "theirs.pdf", documenttest.PDF("x", "y"))
	text := f.upload(t, f.task, "notes.txt", []byte("notes"))
	before := f.blobCount(t)

	_, err := f.svc.Split(ctx, f.task, theirs.ID, []document.Range{{From: 1, To: 1}})
	require.True(t, apperr.Is(err, apperr.NotFound), "another task's file: %v", err)
	_, err = f.svc.Split(ctx, f.task, text.ID, []document.Range{{From: 1, To: 1}})
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.ErrorContains(t, err, `only PDFs can be split; "notes.txt" is text/plain`)
	_, err = f.svc.Split(ctx, f.task, src.ID, []document.Range{{From: 2, To: 5}})
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.ErrorContains(t, err, "the document has 3 pages")

	// The second part cannot be stored: the first is removed, no row is written.
	f.blobs.okPuts = 1
	_, err = f.svc.Split(ctx, f.task, src.ID, []document.Range{{From: 1, To: 1}, {From: 2, To: 3}})
	require.ErrorContains(t, err, "disk full")
	require.Equal(t, before, f.blobCount(t), "no bytes left behind")
	require.EqualValues(t, 3, f.rowCount(t), "no row written")
}

func TestCleanName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ü", 200) + ".pdf" // 404 bytes
	cases := []struct{ in, contentType, want string }{
		{"invoice.pdf", document.TypePDF, "invoice.pdf"},
		{"INVOICE.PDF", document.TypePDF, "INVOICE.PDF"},
		{"../../etc/passwd", document.TypeText, "passwd.txt"},
		{`C:\Users\ana\scan.pdf`, document.TypePDF, "scan.pdf"},
		{"a/b\\c.pdf", document.TypePDF, "c.pdf"},
		{"in\x00voice\r\n.pdf", document.TypePDF, "invoice.pdf"},
		{"invoice\u202efdp.exe", document.TypePDF, "invoicefdp.exe.pdf"},
		{"zero\u200bwidth.pdf", document.TypePDF, "zerowidth.pdf"},
		{"  many   spaces\t here .pdf ", document.TypePDF, "many spaces here .pdf"},
		{"...hidden.pdf", document.TypePDF, "hidden.pdf"},
		{"..", document.TypePDF, "document.pdf"},
		{"", document.TypePNG, "document.png"},
		{"\x01\x02", document.TypeCSV, "document.csv"},
		{"photo.JPEG", document.TypeJPEG, "photo.JPEG"},
		{"photo.jpeg", document.TypePNG, "photo.jpeg.png"},
		{"data", document.TypeXLSX, "data.xlsx"},
		{"bad\xffutf8.txt", document.TypeText, "badutf8.txt"},
		{long, document.TypePDF, strings.Repeat("ü", 125) + ".pdf"},
	}
	for _, tc := range cases {
		got := files.CleanName(tc.in, tc.contentType)
		require.Equal(t, tc.want, got, "%q", tc.in)
		require.LessOrEqual(t, len(got), files.MaxNameBytes)
	}
}
