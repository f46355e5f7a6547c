// Package extract runs structured_data_extraction: it re-reads one
// document with an OpenAI-compatible model (internal/llm) under the
// configured tool's instructions, output schema and validations, and bills
// the pages read.
//
// The caller resolves the input's file_url to the document (a
// managed-storage URL of the session's own task) and hands over its bytes
// and content type. Documents it reads: PDF (sent as a file part; pages
// counted with pdfcpu), images (one page), spreadsheets (.xlsx: the sheets
// named in the input, or all, each sent as CSV text and counted as a page)
// and text (CSV, plain text, JSON, Markdown: one page).
package extract
