// Package datasource reads and writes the customer's tables that a binding
// exposes: a pgx pool per Postgres integration in production, and a SQLite
// file for the embedded dev mode's demo, behind one small interface.
//
// SQL text is built only from identifiers the binding declared (quoted with
// the dialect's identifier quoting); every value a request carries is a bound
// parameter. The text therefore depends only on the shape of a request, so it
// is cached per shape and pgx caches one prepared statement per text.
package datasource
