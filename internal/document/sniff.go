package document

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/apperr"
)

// The content types a task's file may have: what the viewer, the
// capabilities and structured_data_extraction read.
const (
	TypePDF      = "application/pdf"
	TypePNG      = "image/png"
	TypeJPEG     = "image/jpeg"
	TypeGIF      = "image/gif"
	TypeWebP     = "image/webp"
	TypeTIFF     = "image/tiff"
	TypeXLSX     = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	TypeCSV      = "text/csv"
	TypeText     = "text/plain"
	TypeMarkdown = "text/markdown"
	TypeJSON     = "application/json"
)

// extensions are the file name extensions of each type, the first the
// one added to a name that has none of them.
var extensions = map[string][]string{
	TypePDF:      {".pdf"},
	TypePNG:      {".png"},
	TypeJPEG:     {".jpg", ".jpeg"},
	TypeGIF:      {".gif"},
	TypeWebP:     {".webp"},
	TypeTIFF:     {".tif", ".tiff"},
	TypeXLSX:     {".xlsx"},
	TypeCSV:      {".csv"},
	TypeText:     {".txt", ".text", ".log"},
	TypeMarkdown: {".md", ".markdown"},
	TypeJSON:     {".json"},
}

// Extensions returns the file name extensions of contentType (".pdf"), the
// canonical one first; none for a type this package does not accept.
func Extensions(contentType string) []string { return extensions[contentType] }

// HasPageImages reports whether documents of contentType have page
// images (RenderPage) and so may have pages without a text layer to OCR:
// PDFs and images.
func HasPageImages(contentType string) bool {
	return contentType == TypePDF || IsImage(contentType)
}

// IsImage reports whether contentType is one of the image types.
func IsImage(contentType string) bool {
	return contentType == TypePNG || contentType == TypeJPEG || contentType == TypeGIF || contentType == TypeWebP || contentType == TypeTIFF
}

// IsText reports whether contentType is one of the text types (UTF-8).
func IsText(contentType string) bool {
	return contentType == TypeText || contentType == TypeCSV || contentType == TypeMarkdown || contentType == TypeJSON
}

// binarySignatures are the types recognised by their bytes alone: a file
// that starts like one of them is one, whatever its name or declared type
// say.
var binarySignatures = []string{TypePDF, TypePNG, TypeJPEG, TypeGIF, TypeWebP}

// activeTypes are content types a browser would run or render as a page.
var activeTypes = []string{
	"text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml",
	"text/javascript", "application/javascript", "application/ecmascript", "text/ecmascript",
	"text/css", "application/x-httpd-php",
}

// activeExtensions are names that say "open me as a page or a script".
var activeExtensions = []string{".html", ".htm", ".xhtml", ".shtml", ".svg", ".svgz", ".xml", ".xsl", ".xslt", ".js", ".mjs", ".css", ".php"}

// accepted names the accepted kinds for messages.
const accepted = "PDF, PNG, JPEG, GIF, WebP, TIFF, XLSX, CSV, plain text, Markdown and JSON"

// Sniff decides a file's content type from its bytes, using its name and
// the uploader's declared type only to tell text formats apart. The bytes
// win: a file that starts like a PDF is a PDF whatever it is called. A file
// that is, says it is or is named like HTML, SVG, XML, CSS or a script is
// refused (415) rather than stored as application/octet-stream: nothing in
// the product reads such a file, and refusing it means no page of ours
// can ever serve one to a browser. Anything else this package cannot read
// is refused too, naming what is accepted; text must be UTF-8.
func Sniff(name, declared string, data []byte) (string, error) {
	detected, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	if slices.Contains(binarySignatures, detected) {
		return detected, nil
	}
	if bytes.HasPrefix(data, []byte("II*\x00")) || bytes.HasPrefix(data, []byte("MM\x00*")) {
		return TypeTIFF, nil // a TIFF, little- or big-endian, which the standard sniffer does not know
	}
	if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n\f"), []byte("%PDF-")) {
		return TypePDF, nil // pdfcpu, like viewers, allows white space first
	}
	if detected == "application/zip" {
		if isSpreadsheet(data) {
			return TypeXLSX, nil
		}
		return "", apperr.New(apperr.UnsupportedMedia, "the file is a ZIP archive that is not an XLSX spreadsheet; accepted: %s", accepted)
	}
	declaredType, _, _ := mime.ParseMediaType(declared)
	ext := strings.ToLower(path.Ext(name))
	if slices.Contains(activeTypes, detected) || slices.Contains(activeTypes, declaredType) || slices.Contains(activeExtensions, ext) {
		return "", apperr.New(apperr.UnsupportedMedia, "HTML, SVG, XML, CSS and script files are not accepted; accepted: %s", accepted)
	}
	if detected != TypeText {
		return "", apperr.New(apperr.UnsupportedMedia, "the file's content is %s; accepted: %s", detected, accepted)
	}
	if !utf8.Valid(data) {
		return "", apperr.New(apperr.UnsupportedMedia, "text files must be UTF-8")
	}
	for _, t := range []string{TypeCSV, TypeMarkdown, TypeJSON} {
		if declaredType == t || slices.Contains(extensions[t], ext) {
			if t == TypeJSON && !json.Valid(data) {
				break // named JSON, but a reader of JSON could not use it
			}
			return t, nil
		}
	}
	return TypeText, nil
}

// isSpreadsheet reports whether a ZIP archive is an Office Open XML
// workbook. Only the archive's directory is read, never its contents.
func isSpreadsheet(data []byte) bool {
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return false
	}
	var types, workbook bool
	for _, f := range z.File {
		switch f.Name {
		case "[Content_Types].xml":
			types = true
		case "xl/workbook.xml":
			workbook = true
		}
	}
	return types && workbook
}
