package files

import (
	"context"
	"path"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/models"
)

// Split cuts the PDF fileID of taskID into one new file of the task per
// range (document.Split), named after the source and its pages ("invoice,
// pages 1-3.pdf"), and returns them in the order of ranges. Either every
// part is stored or none is: a failure part way removes the parts already
// written. The file must be a PDF (400); the ranges must fit its pages
// (400); a part over MaxFileBytes, or parts over MaxSplitBytes in all, are
// 413.
func (s *Service) Split(ctx context.Context, taskID, fileID string, ranges []document.Range) ([]models.File, error) {
	src, err := s.Get(ctx, taskID, fileID)
	if err != nil {
		return nil, err
	}
	if src.ContentType != document.TypePDF {
		return nil, apperr.Invalidf("only PDFs can be split; %q is %s", src.Name, src.ContentType)
	}
	if err := document.CheckRanges(ranges, src.Pages); err != nil {
		return nil, err
	}
	data, err := s.Content(ctx, src)
	if err != nil {
		return nil, err
	}
	return s.store(ctx, func(b *batch) error {
		total := 0
		return document.Split(ctx, data, ranges, func(_ int, r document.Range, pdf []byte) error {
			if len(pdf) > MaxFileBytes {
				return apperr.New(apperr.TooLarge, "%s would be a file larger than %d MiB", r, MaxFileBytes>>20)
			}
			if total += len(pdf); total > MaxSplitBytes {
				return apperr.New(apperr.TooLarge, "the parts would hold more than %d MiB in all; split into fewer ranges", MaxSplitBytes>>20)
			}
			return b.put(ctx, s.newFile(taskID, partName(src.Name, r), document.TypePDF, r.Pages(), pdf), pdf)
		})
	})
}

// partName names the part of source holding r: "invoice, pages 1-3.pdf".
func partName(source string, r document.Range) string {
	stem := strings.TrimSuffix(source, path.Ext(source))
	return CleanName(stem+", "+r.String()+".pdf", document.TypePDF)
}
