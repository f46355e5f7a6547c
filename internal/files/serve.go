package files

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/models"
)

// sandboxCSP is the Content-Security-Policy of a served file that is not a
// PDF: a unique opaque origin with nothing allowed, so that even a file a
// browser misread as a page could run nothing and reach nothing.
const sandboxCSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"

// Download is a file ready to be sent: its row, its bytes and every
// response header but Content-Length. The route that mounts Serve copies
// Header into its response unchanged. When Redirect is set, Body is nil and
// the answer is a 302 to Redirect (a presigned GET of the bucket) with
// Header.
type Download struct {
	File     models.File
	Body     []byte
	Header   http.Header
	Redirect string
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
//
// With presigned downloads on (Options.Presign), a PDF or an image the
// bucket holds is a redirect instead: the same checks first, then a
// presigned GET that lives no longer than the URL, answered by the bucket
// with the same Content-Type, Content-Disposition and Cache-Control. Other
// types always stream through here, since a bucket cannot send the sandbox
// CSP and nosniff that keep them inert; see
// docs/deploy.md#presigned-downloads.
func (s *Service) Serve(ctx context.Context, t Ticket) (Download, error) {
	if err := s.check(t); err != nil {
		return Download{}, err
	}
	f, err := s.Get(ctx, t.TaskID, t.FileID)
	if err != nil {
		return Download{}, err
	}
	exp, _ := strconv.ParseInt(t.Exp, 10, 64) // check has parsed it
	h := downloadHeader(f, max(exp-s.now().Unix(), 0))
	if d, ok, err := s.presigned(ctx, f, exp, h); ok || err != nil {
		return d, err
	}
	data, err := s.Content(ctx, f)
	if err != nil {
		return Download{}, err
	}
	return Download{File: f, Body: data, Header: h}, nil
}

// presigned is f's download as a redirect to a presigned GET, when
// presigning is on, f is a PDF or an image, at least a second of the URL's
// life is left and the bucket holds the bytes (older blobs live in the
// database); ok is false when f is to be streamed instead.
func (s *Service) presigned(ctx context.Context, f models.File, exp int64, h http.Header) (Download, bool, error) {
	left := time.Unix(exp, 0).Sub(s.now())
	if s.presign == nil || !(f.ContentType == document.TypePDF || document.IsImage(f.ContentType)) || left < time.Second {
		return Download{}, false, nil
	}
	params := url.Values{}
	for param, header := range presignedHeaders {
		params.Set(param, h.Get(header))
	}
	u, err := s.presign.PresignExisting(ctx, f.StorageKey, left, params)
	if apperr.Is(err, apperr.NotFound) {
		return Download{}, false, nil
	}
	if err != nil {
		return Download{}, false, fmt.Errorf("files: presigning file %s: %v", f.ID, err)
	}
	redirect := http.Header{}
	redirect.Set("Cache-Control", h.Get("Cache-Control"))
	redirect.Set("Referrer-Policy", h.Get("Referrer-Policy"))
	return Download{File: f, Header: redirect, Redirect: u.String()}, true, nil
}

// presignedHeaders are the response headers a bucket sets from a presigned
// GET's overrides (S3's response-* parameters), by parameter.
var presignedHeaders = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-disposition": "Content-Disposition",
	"response-cache-control":       "Cache-Control",
}

// downloadHeader is the response header of f's bytes (see Serve), cached
// for maxAge seconds.
func downloadHeader(f models.File, maxAge int64) http.Header {
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
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(maxAge, 10))
	h.Set("Referrer-Policy", "no-referrer")
	return h
}
