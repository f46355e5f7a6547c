package files

import (
	"context"
	"mime"
	"net/http"
	"strconv"

	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/models"
)

// sandboxCSP is the Content-Security-Policy of a served file that is not a
// PDF: a unique opaque origin with nothing allowed, so that even a file a
// browser misread as a page could run nothing and reach nothing.
const sandboxCSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"

// Download is a file ready to be sent: its row, its bytes and every
// response header but Content-Length. The route that mounts Serve copies
// Header into its response unchanged.
type Download struct {
	File   models.File
	Body   []byte
	Header http.Header
}

// Serve answers GET FilesPath/{id}?task=&exp=&sig=, the route behind a
// managed-storage URL; t holds the path's id and the query's parameters.
// A URL that is altered, expired or not signed here is 403; a file that no
// longer exists is 404. The headers:
//
//   - Content-Type: the type the bytes were sniffed as at upload (text with
//     charset=utf-8), with X-Content-Type-Options: nosniff, so a browser
//     never second-guesses it;
//   - Content-Disposition: inline for PDFs and images (the viewer shows
//     them), attachment for everything else, with the cleaned name;
//   - Content-Security-Policy: sandbox (sandboxCSP) for everything but
//     PDFs. Browsers' built-in PDF viewers do not render in a sandboxed
//     document (Chromium treats its viewer as a plugin, which no sandbox
//     token re-enables; Safari blocks its viewer's script), so a PDF gets no
//     CSP: it is only ever shown by the browser's own viewer, never as a
//     page of this origin, because its type is exactly application/pdf and
//     nosniff holds;
//   - Cache-Control: private, for as long as the URL lives (paging back in
//     a viewer costs nothing); Referrer-Policy: no-referrer, so the signed
//     URL never leaks to a link's target.
func (s *Service) Serve(ctx context.Context, t Ticket) (Download, error) {
	if err := s.check(t); err != nil {
		return Download{}, err
	}
	f, data, err := s.Open(ctx, t.TaskID, t.FileID)
	if err != nil {
		return Download{}, err
	}
	h := http.Header{}
	contentType := f.ContentType
	if document.IsText(contentType) && contentType != document.TypeJSON {
		contentType += "; charset=utf-8"
	}
	h.Set("Content-Type", contentType)
	disposition := "attachment"
	if f.ContentType == document.TypePDF || document.IsImage(f.ContentType) {
		disposition = "inline"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": f.Name}))
	h.Set("X-Content-Type-Options", "nosniff")
	if f.ContentType != document.TypePDF {
		h.Set("Content-Security-Policy", sandboxCSP)
	}
	exp, _ := strconv.ParseInt(t.Exp, 10, 64) // check has parsed it
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(max(exp-s.now().Unix(), 0), 10))
	h.Set("Referrer-Policy", "no-referrer")
	return Download{File: f, Body: data, Header: h}, nil
}
