// Package extract runs structured_data_extraction: it re-reads one
// document with an OpenAI-compatible model (internal/llm) under the
// configured tool's instructions, output schema and validations, and bills
// the pages read.
//
// The caller resolves the input's file_url to the document (a
// managed-storage URL of the session's own task) and hands over its bytes
// and content type. Documents it reads: PDF (sent as a file part; pages
// counted by internal/document), images (one page), spreadsheets (.xlsx:
// the sheets named in the input, or all, each sent as CSV text and counted
// as a page) and text (CSV, plain text, JSON, Markdown: one page). The
// PDFs and sheets are read under internal/document's budgets with the
// job's context, as the api's previews are: the PDF's contents metered
// before pdfcpu counts its pages, each sheet streamed up to the text the
// tool sends (MaxSheetTextBytes) instead of read whole. A document past a
// budget is an over_budget error (422); the job is not run again. The
// text OCR read on a PDF's or an image's pages without a text layer (the
// file's OCR pass, tool.Document.OCR) is sent beside it, and the output's
// ocr_pages names those pages.
package extract
