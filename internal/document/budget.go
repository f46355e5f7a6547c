package document

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Budgets of the work one document operation may do. A document past one
// is refused with an over_budget error (422) naming the limit, whatever
// its size on disk: a 67 KB PDF can name one 64 MiB compressed stream 200
// times, a 1.3 MB spreadsheet can hold 232 MB of cells.
const (
	// MaxPageDecodedBytes bounds the bytes of decoded streams read for one
	// page's text (its contents, fonts and the object streams that hold
	// them), counting a stream again each time it is referenced. A page
	// of prose decodes to tens of KB; a dense vector drawing to a few MiB.
	MaxPageDecodedBytes = 16 << 20
	// MaxDocumentDecodedBytes bounds the decoded bytes one operation over a
	// whole document reads (a split, a count of pages, a sheet's XML).
	MaxDocumentDecodedBytes = 64 << 20
	// MaxPages is the most pages a document may have.
	MaxPages = 5000
	// MaxSheetCells bounds the cells read to render one sheet.
	MaxSheetCells = 1_000_000
	// MaxWork is the wall time one document operation may take, checked on
	// every read of decoded bytes: past it the work stops, even when the
	// caller's own deadline is later.
	MaxWork = 10 * time.Second
)

// errWorkTime is the cause of a budget's own deadline, told apart from the
// caller's context ending.
var errWorkTime = errors.New("document: work time spent")

// budget meters the decoded bytes of one document operation and stops it
// when its context ends, its wall time (MaxWork) is spent or the bytes
// pass limit. The first error is kept: every later read returns it, so a
// library that swallows one error still stops at the next read.
type budget struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	what   string // what is read, for messages: "the text of page 3"
	limit  int64
	used   int64
	err    error
}

// newBudget returns a budget of limit decoded bytes for reading what under
// ctx and MaxWork; its release must be called when the work is done.
func newBudget(ctx context.Context, what string, limit int64) *budget {
	child, cancel := context.WithTimeoutCause(ctx, MaxWork, errWorkTime)
	return &budget{parent: ctx, ctx: child, cancel: cancel, what: what, limit: limit}
}

func (b *budget) release() { b.cancel() }

// check returns the budget's error, recording one when its context ended.
func (b *budget) check() error {
	if b.err != nil {
		return b.err
	}
	if err := b.parent.Err(); err != nil {
		b.err = apperr.Wrap(err, apperr.Timeout, "reading %s was stopped", b.what)
	} else if err := b.ctx.Err(); err != nil {
		if errors.Is(context.Cause(b.ctx), errWorkTime) {
			b.err = apperr.New(apperr.OverBudget, "reading %s took more than %s, the most one document operation may take", b.what, MaxWork)
		} else {
			b.err = apperr.Wrap(err, apperr.Timeout, "reading %s was stopped", b.what)
		}
	}
	return b.err
}

// spend counts n decoded bytes.
func (b *budget) spend(n int64) error {
	b.used += n
	if b.err == nil && b.used > b.limit {
		b.err = apperr.New(apperr.OverBudget, "reading %s passed %s of decoded streams (a stream counts each time it is named); documents are read up to %s a page and %s a document",
			b.what, mib(b.limit), mib(MaxPageDecodedBytes), mib(MaxDocumentDecodedBytes))
	}
	return b.err
}

// reader meters r's bytes against the budget.
func (b *budget) reader(r io.Reader) io.Reader { return &meteredReader{r: r, b: b} }

type meteredReader struct {
	r io.Reader
	b *budget
}

func (m *meteredReader) Read(p []byte) (int, error) {
	if err := m.b.check(); err != nil {
		return 0, err
	}
	n, err := m.r.Read(p)
	if berr := m.b.spend(int64(n)); berr != nil {
		return 0, berr
	}
	return n, err
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }
