// Package apperr is appruntime's one error vocabulary. An application error
// carries a Code; one table (Status) maps codes to HTTP statuses, so handlers
// return errors and a single renderer decides what the client sees.
package apperr
