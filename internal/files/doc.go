// Package files keeps the documents attached to a task: uploads (capped,
// typed by their bytes, named safely, their pages counted), the task's list,
// lookups that never cross tasks, PDF splits into new files of the task,
// and managed-storage URLs.
//
// Every lookup is scoped to a task: asking for another task's file is a
// not_found error, the same as asking for one that does not exist, so a
// caller learns nothing about files it cannot see.
//
// A managed-storage URL is what a bundle is handed for a file (list_files,
// file_preview) and what structured_data_extraction accepts as file_url:
//
//	<PUBLIC_API_URL>/api/files/<file id>?task=<task id>&exp=<unix seconds>&sig=<HMAC>
//
// It names the file and its task, lives URLLifetime, and is signed with
// HMAC-SHA256 under a key derived from SECRETS_KEY by HKDF for this purpose
// only, so no other use of SECRETS_KEY can produce or check one. VerifyURL
// accepts only URLs of this deployment's API that are intact and unexpired;
// VerifyURLForTask also requires the file to be the session's own task's.
// Serve answers the route that downloads a file, with the headers that keep
// a browser from running anything in it.
package files
