package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ledongthuc/pdf"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/appruntime/appruntime/internal/apperr"
)

// MaxRanges is the most page ranges one split cuts: each becomes a file of
// the task, and a reviewer separating a batch scan into its documents
// names one range per document.
const MaxRanges = 50

func init() {
	// pdfcpu would otherwise write a configuration directory under the
	// user's config dir the first time it is used.
	model.ConfigPath = "disable"
}

// pdfConfig is pdfcpu's configuration for cmd: offline (no font
// downloads), relaxed validation (real-world PDFs bend the spec).
func pdfConfig(cmd model.CommandMode) *model.Configuration {
	conf := model.NewDefaultConfiguration()
	conf.Offline = true
	conf.Cmd = cmd
	return conf
}

// PDFPages counts a PDF's pages (PDFPagesContext without a caller's
// deadline: MaxWork bounds it).
func PDFPages(data []byte) (pages int, err error) {
	return PDFPagesContext(context.Background(), data)
}

// PDFPagesContext counts a PDF's pages, its reading stopped when ctx ends
// (a timeout error) or a budget is spent (over_budget); a document the
// metered pass cannot read, or pdfcpu cannot count, is an invalid error.
func PDFPagesContext(ctx context.Context, data []byte) (pages int, err error) {
	if err := preflightPDF(ctx, data); err != nil {
		return 0, err
	}
	err = guard("the file is not a readable PDF", func() (err error) {
		pages, err = api.PageCount(bytes.NewReader(data), pdfConfig(model.VALIDATE))
		return err
	})
	return pages, err
}

// Range is a run of pages, 1-based and inclusive: {from: 2, to: 4} is
// pages 2, 3 and 4.
type Range struct {
	From int `json:"from"`
	To   int `json:"to"`
}

func (r Range) String() string {
	if r.From == r.To {
		return fmt.Sprintf("page %d", r.From)
	}
	return fmt.Sprintf("pages %d-%d", r.From, r.To)
}

// Pages is how many pages r holds.
func (r Range) Pages() int { return r.To - r.From + 1 }

// CheckRanges validates ranges against a document of pages pages: one to
// MaxRanges ranges, each non-empty and within the document. Ranges may
// overlap (a cover page repeated in every part). Errors are invalid errors
// naming the range by its index.
func CheckRanges(ranges []Range, pages int) error {
	switch {
	case len(ranges) == 0:
		return apperr.Invalidf("ranges must hold at least one {from, to} range")
	case len(ranges) > MaxRanges:
		return apperr.Invalidf("ranges holds %d ranges; at most %d per split", len(ranges), MaxRanges)
	}
	for i, r := range ranges {
		switch {
		case r.From < 1:
			return apperr.Invalidf("ranges[%d].from must be a page number from 1, got %d", i, r.From)
		case r.To < r.From:
			return apperr.Invalidf("ranges[%d] is empty: to (%d) is before from (%d)", i, r.To, r.From)
		case r.To > pages:
			return apperr.Invalidf("ranges[%d].to is %d, but the document has %d pages", i, r.To, pages)
		}
	}
	return nil
}

// Split cuts a PDF into one new PDF per range, in order, handing each to
// emit as soon as it is written, so that only one part is held at a time;
// an error from emit stops the split and is returned. The PDF is read
// once. ctx is checked before each part.
func Split(ctx context.Context, data []byte, ranges []Range, emit func(i int, r Range, pdf []byte) error) error {
	if err := preflightPDF(ctx, data); err != nil {
		return err
	}
	var src *model.Context
	err := guard("the file is not a readable PDF", func() (err error) {
		src, err = api.ReadValidateAndOptimize(bytes.NewReader(data), pdfConfig(model.SPLIT))
		return err
	})
	if err != nil {
		return err
	}
	if err := CheckRanges(ranges, src.PageCount); err != nil {
		return err
	}
	for i, r := range ranges {
		if err := ctx.Err(); err != nil {
			return apperr.Wrap(err, apperr.Timeout, "the split was stopped before %s", r)
		}
		var out bytes.Buffer
		err := guard(fmt.Sprintf("%s of the PDF cannot be extracted", r), func() error {
			nrs := make([]int, 0, r.Pages())
			for p := r.From; p <= r.To; p++ {
				nrs = append(nrs, p)
			}
			part, err := pdfcpu.ExtractPages(src, nrs, false)
			if err != nil {
				return err
			}
			return api.WriteContext(part, &out)
		})
		if err != nil {
			return err
		}
		if err := emit(i, r, out.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// preflightPDF decodes every page's content streams once, each as often
// as the page names it, metered against MaxDocumentDecodedBytes, MaxWork
// and ctx, and counts the pages against MaxPages: pdfcpu decodes each
// reference of a content stream whole in memory, with no bound and no
// way to stop it, so a document is handed to it only once its decoded
// size is known to be bounded. A document this pass cannot read (no
// header or end-of-file marker, a broken cross-reference table, a page
// tree that does not hold its pages, a content stream that does not
// decode) is an invalid error saying what is wrong: pdfcpu never sees it,
// since what the metered pass could not read, pdfcpu would read unmetered.
func preflightPDF(ctx context.Context, data []byte) (err error) {
	b := newBudget(ctx, "the document", MaxDocumentDecodedBytes)
	defer b.release()
	defer func() {
		p := recover()
		if berr := b.check(); berr != nil {
			err = berr
			return
		}
		if p != nil {
			err = unreadablePDF(fmt.Errorf("panic: %v", p))
		}
	}()
	r, err := pdf.NewReaderWrapped(bytes.NewReader(data), int64(len(data)), b.reader)
	if err != nil {
		if berr := b.check(); berr != nil {
			return berr
		}
		return unreadablePDF(err)
	}
	n := r.NumPage()
	switch {
	case n > MaxPages:
		return tooManyPages(n)
	case n < 1:
		return unreadablePDF(errors.New("its page tree counts no pages"))
	}
	for i := 1; i <= n; i++ {
		page := r.Page(i)
		if page.V.IsNull() {
			return unreadablePDF(fmt.Errorf("its page tree counts %d pages but does not hold page %d", n, i))
		}
		contents := page.V.Key("Contents")
		streams := []pdf.Value{contents}
		if contents.Kind() == pdf.Array {
			streams = streams[:0]
			for j := 0; j < contents.Len(); j++ {
				streams = append(streams, contents.Index(j))
			}
		}
		for _, s := range streams {
			if s.Kind() != pdf.Stream {
				continue
			}
			if _, err := io.Copy(io.Discard, s.Reader()); err != nil {
				if berr := b.check(); berr != nil {
					return berr
				}
				return unreadablePDF(fmt.Errorf("the contents of page %d do not decode: %w", i, err))
			}
		}
	}
	return b.check()
}

// maxReasonBytes bounds the reader's own words quoted in a refusal.
const maxReasonBytes = 200

// unreadablePDF is the invalid error (400) of a PDF the metered pass cannot
// read, quoting the reader's reason.
func unreadablePDF(cause error) error {
	reason := cause.Error()
	if len(reason) > maxReasonBytes {
		reason = strings.ToValidUTF8(reason[:maxReasonBytes], "") + "…"
	}
	return apperr.Wrap(cause, apperr.Invalid, "the file is not a readable PDF (%s): save or print it again as a PDF and upload that", reason)
}

// guard runs fn, a call into a PDF library, turning its error or panic on
// a malformed document into an invalid error with msg.
func guard(msg string, fn func() error) (err error) {
	defer recovered(&err, msg)
	if err := fn(); err != nil {
		return apperr.Wrap(err, apperr.Invalid, "%s", msg)
	}
	return nil
}

// recovered turns a panic of a PDF library on a malformed document into an
// invalid error with msg; it is deferred by every function that reads one.
func recovered(err *error, msg string) {
	if p := recover(); p != nil {
		*err = apperr.Wrap(fmt.Errorf("panic: %v", p), apperr.Invalid, "%s", msg)
	}
}
