package console

import (
	"io"
	"mime/multipart"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/web"
)

// bundleUploadForm is what the bundle page's upload forms hold: a chosen
// file, or pasted text with the type picked next to it.
type bundleUploadForm struct {
	Pasted      string
	ContentType string
	// The declared origins as typed, one text box per list.
	ConnectDomains, ResourceDomains, FrameDomains string
	// From is the form that was sent ("file" or "paste", its hidden
	// "from" field), and Refusal why its upload was refused, beside the
	// field it names: a grant list, else the form's file or text.
	From    string
	Refusal formRefusal
}

// bundleUploadFields are the upload fields a refusal may name.
var bundleUploadFields = []string{bundle.ListConnect, bundle.ListResource, bundle.ListFrame}

// About returns the refusal when it is about field of the form from, for
// the page to show beside that field.
func (f bundleUploadForm) About(from, field string) *fieldRefusal {
	if f.From != from {
		return nil
	}
	return f.Refusal.About(field)
}

// GrantsOpen reports whether the form from shows its network grants
// unfolded: the admin typed some, or a refusal is about one.
func (f bundleUploadForm) GrantsOpen(from string) bool {
	return f.From == from && (f.ConnectDomains != "" || f.ResourceDomains != "" || f.FrameDomains != "")
}

// bundlePage is the bundle page's data: the bundle and, after a refused
// upload, what the admin pasted so it is not lost.
type bundlePage struct {
	bundle.Detail
	// Uses are the configured tools that mount the bundle.
	Uses []bundle.Use
	Form bundleUploadForm
}

// bundlePageOf loads the bundle page's data.
func (s *server) bundlePageOf(c *fiber.Ctx, id string, form bundleUploadForm) (bundlePage, error) {
	ws := adminOf(c).WorkspaceID
	d, err := s.Bundles.Get(c.UserContext(), ws, id)
	if err != nil {
		return bundlePage{}, err
	}
	uses, err := s.Bundles.Uses(c.UserContext(), ws, id)
	if err != nil {
		return bundlePage{}, err
	}
	return bundlePage{Detail: d, Uses: uses, Form: form}, nil
}

// showBundleRefusal shows the bundle page again with the message and status
// of err, a refused upload or decision, keeping what the admin typed.
func (s *server) showBundleRefusal(c *fiber.Ctx, id string, form bundleUploadForm, err error) error {
	pg, gerr := s.bundlePageOf(c, id, form)
	if gerr != nil {
		return gerr
	}
	_, status, msg := apperr.Public(err)
	v := view{Title: "Bundle " + pg.Name, Section: "bundles", Data: pg}
	if form.From == "" {
		v.Error = msg
	}
	return s.renderView(c, status, "bundle", v)
}

// uploadRefusal is the refusal of an upload from the form from, beside the
// grant list its message names, else beside the form's file or text.
func uploadRefusal(from string, err error) formRefusal {
	_, status, msg := apperr.Public(err)
	field := fieldNamed(msg, bundleUploadFields)
	if field == "" {
		field = "content"
		if from == "file" {
			field = "file"
		}
	}
	return formRefusal{Status: status, Field: field, Message: msg}
}

// uploadBundleVersion answers POST /bundles/:id/versions (multipart): the
// chosen file, or else the pasted text, stored as the bundle's next version
// through the same service, limits and audit entry as the admin API's
// POST /api/admin/bundles/:id/versions (docs/admins.md#the-console). A
// refused upload shows the page again with the message and the pasted text.
func (s *server) uploadBundleVersion(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	id := c.Params("id")
	form, err := c.MultipartForm()
	if err != nil {
		return apperr.Invalidf("the upload is not a multipart form: choose a file or paste the bundle")
	}
	up, pasted, err := uploadOfForm(form)
	if err == nil {
		_, err = s.Bundles.AddVersion(ctx, a.WorkspaceID, a.actor(), id, up)
	}
	if apperr.Is(err, apperr.Invalid) || apperr.Is(err, apperr.TooLarge) || apperr.Is(err, apperr.Conflict) {
		pasted.From = "paste"
		if firstValue(form, "from") == "file" {
			pasted.From = "file"
		}
		pasted.Refusal = uploadRefusal(pasted.From, err)
		return s.showBundleRefusal(c, id, pasted, err)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/bundles/"+id, "uploaded")
}

// uploadOfForm reads the upload forms: a non-empty "file" wins over the
// "content" text, whose type is the "content_type" field; the
// connectDomains, resourceDomains and frameDomains fields declare network
// grants (origins separated by commas, spaces or lines). A file's type is
// the one its browser sent, or else read from its extension.
func uploadOfForm(form *multipart.Form) (bundle.Upload, bundleUploadForm, error) {
	pasted := bundleUploadForm{Pasted: firstValue(form, "content"), ContentType: firstValue(form, "content_type"),
		ConnectDomains: firstValue(form, bundle.ListConnect), ResourceDomains: firstValue(form, bundle.ListResource),
		FrameDomains: firstValue(form, bundle.ListFrame)}
	grants := bundle.Grants{ConnectDomains: bundle.SplitOrigins(pasted.ConnectDomains),
		ResourceDomains: bundle.SplitOrigins(pasted.ResourceDomains), FrameDomains: bundle.SplitOrigins(pasted.FrameDomains)}
	if files := form.File["file"]; len(files) > 0 && files[0].Size > 0 {
		fh := files[0]
		if fh.Size > bundle.MaxBundleBytes {
			return bundle.Upload{}, pasted, apperr.New(apperr.TooLarge, "%s is %d bytes; a bundle is at most %d bytes (4 MiB)", fh.Filename, fh.Size, bundle.MaxBundleBytes)
		}
		content, err := readFormFile(fh)
		if err != nil {
			return bundle.Upload{}, pasted, err
		}
		return bundle.Upload{ContentType: fileContentType(fh), Content: content, Grants: grants}, pasted, nil
	}
	if pasted.Pasted == "" {
		return bundle.Upload{}, pasted, apperr.Invalidf("choose a file or paste the bundle")
	}
	ct := pasted.ContentType
	if ct == "" {
		ct = "text/html"
	}
	// Browsers send a textarea's line breaks as CRLF; the bundle is stored
	// as the admin wrote it, with LF.
	return bundle.Upload{ContentType: ct, Content: []byte(strings.ReplaceAll(pasted.Pasted, "\r\n", "\n")), Grants: grants}, pasted, nil
}

// fileContentType is the type of an uploaded file: what the browser sent,
// unless that says nothing (application/octet-stream), then by extension.
func fileContentType(fh *multipart.FileHeader) string {
	ct := fh.Header.Get(fiber.HeaderContentType)
	if ct != "" && ct != fiber.MIMEOctetStream {
		return ct
	}
	switch strings.ToLower(path.Ext(fh.Filename)) {
	case ".html", ".htm":
		return "text/html"
	case ".js", ".mjs":
		return "text/javascript"
	}
	return ct
}

func readFormFile(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, apperr.Invalidf("the chosen file cannot be read")
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, bundle.MaxBundleBytes+1))
	if err != nil {
		return nil, apperr.Invalidf("the chosen file cannot be read")
	}
	return content, nil
}

func firstValue(form *multipart.Form, name string) string {
	if vs := form.Value[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// bodyLimit is the most bytes a console request may send: a bundle upload
// takes a whole bundle and its form, everything else the default.
func bodyLimit(c *fiber.Ctx) int {
	if c.Method() == fiber.MethodPost && isBundleUpload(c.Path()) {
		return web.MaxUploadBytes
	}
	return web.DefaultMaxBodyBytes
}

// isBundleUpload reports whether p is /bundles/<id>/versions.
func isBundleUpload(p string) bool {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	return len(parts) == 3 && parts[0] == "bundles" && parts[2] == "versions"
}
