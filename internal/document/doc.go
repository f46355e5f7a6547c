// Package document reads the documents attached to a task, without a
// database: it decides what a file is from its bytes (Sniff), counts its
// pages (Pages), cuts a PDF into page ranges (Split) and reads the text of
// one page (PageText).
//
// What a page is depends on the kind of document, and is the same rule
// structured_data_extraction bills by: a PDF's pages (counted by pdfcpu); a
// TIFF's images (tiff.go); another image is one page; a text file (plain, CSV, Markdown, JSON) is one page
// holding the whole text; a spreadsheet has one page per sheet, its text
// the sheet as CSV.
//
// PDFs are split with pdfcpu (github.com/pdfcpu/pdfcpu), which writes
// valid documents carrying only the objects the kept pages use. Page text
// comes from github.com/ledongthuc/pdf, a pure-Go reader (a fork of
// rsc.io/pdf) that decodes fonts' encodings and ToUnicode maps; this
// package walks each page's content stream itself to put spaces, line
// breaks and paragraph breaks where the text moves, since the library's own
// plain-text output runs words of one text object together. Pure Go rather
// than poppler's pdftotext: no subprocess to sandbox, bound and install on
// every worker, and the same behaviour in dev and in production. Its
// limits: text drawn inside form XObjects and text in images is not read
// from the text layer.
//
// Pages are rendered to images (RenderPage, render.go) by poppler's
// pdftoppm, and pages without a text layer (scans, image uploads) are
// OCR'd by tesseract (ocr.go), both as subprocesses in a bubblewrap
// sandbox under rlimits and a wall time (sandbox.go); docs/architecture.md
// (decision 15) says why not go-pdfium's WebAssembly build.
//
// Work is bounded by budgets (budget.go), whatever a document's size on
// disk: the decoded bytes of streams read for one page's text
// (MaxPageDecodedBytes, a stream counting each time it is named) and for
// one operation over a whole document (MaxDocumentDecodedBytes), its
// pages, a sheet's cells, and a wall time (MaxWork) checked with the
// caller's context on every read of decoded bytes, so that white space,
// which draws nothing, still stops. Past one, an over_budget error (422)
// names the limit. The PDF reader is a patched copy (third_party/pdf) that
// lets this package meter every stream it decodes; pdfcpu, which decodes
// each reference of a stream whole, gets a document only once a metered
// pass over its pages' contents stayed within budget, so a refused split
// writes nothing. Sheets are streamed (sheet.go): the sheet's XML is read
// token by token, a run of text is never held past MaxPageTextBytes, and
// reading stops at the page's text cap. A sheet shows its cells' stored
// values: numbers unformatted (a date is its serial number).
package document
