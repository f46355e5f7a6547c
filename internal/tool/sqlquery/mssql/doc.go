// Package mssql runs mssql_execute_query: the configured tool's one
// read-only statement, checked by a strict T-SQL tokenizer (SQL Server
// offers no parser to embed), then run through go-mssqldb inside a
// transaction that is always rolled back, on a pooled connection that the
// driver resets (sp_reset_connection) before it is used again. Its
// connections dial only through the gateway's SSRF guard.
//
// SQL Server has no READ ONLY transaction: the tokenizer, the rollback and
// a login that can only read (db_datareader) are the three layers.
package mssql
