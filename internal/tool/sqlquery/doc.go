// Package sqlquery is what postgres_execute_query and mssql_execute_query
// share: the stored query and the arguments a bundle supplies for its
// placeholders, the table a run returns and its caps, the Refused error of
// the read-only gates, and a cache of connection pools per integration.
// The dialects live below it: postgres (a real Postgres parser, pgx) and
// mssql (a strict T-SQL tokenizer, go-mssqldb).
package sqlquery
