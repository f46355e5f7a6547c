// Package capability serves the platform features a bundle reaches through
// /capability on its session's own task (seed 000, "Capabilities"):
// list_files, file_preview, split_document and get_translation. The
// runtime verb resolves the session, the binding's grant and whether this
// deployment serves the name (Serves); it then hands the task id, the name
// and the payload to Call, which decodes the payload strictly (400), keeps
// every file lookup inside the task (another task's file is 404, exactly
// like one that does not exist) and returns the capability's result.
//
// get_translation returns the cached translation of one page of a file
// (the translations table, one row per file, page, target language and
// granularity), producing it through the translation engine on a miss. It
// is not billed, needs the agent's document_translation_enabled (403) and
// answers 501 on a deployment without an engine. Concurrent misses
// produce a translation once, across replicas: the first inserts the row
// as pending (its content NULL) and translates; the others find the
// pending row and wait for its content. A producer that fails deletes its
// pending row, so the next call tries again; one that crashed leaves a row
// that is taken over once it is older than a production may last.
package capability
