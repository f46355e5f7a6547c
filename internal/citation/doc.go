// Package citation keeps a task's citations (issue 30 §2): what a tool
// result cites (a file of the task by name, a page, the quoted text and,
// where known, the box on the page). A tool result carrying a top-level
// "citations" array has them checked (Parse), stored on the task with
// numeric ids in the run's own transaction (Save), and its array rewritten
// with those ids (Attach); a bundle lists them (the list_citations
// capability, internal/capability) and opens one in the reviewer's viewer
// by id (open_citation's citation_ids, console's review page), which reads
// them back by id within the task (ByIDs). See
// docs/architecture.md#data-model.
package citation
