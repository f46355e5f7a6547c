// Package datasource reads and writes the customer's tables that a binding
// exposes: a pgx pool per Postgres integration in production, and a SQLite
// file for the embedded dev mode's demo, behind one small interface.
//
// SQL text is built only from identifiers the binding declared (quoted with
// the dialect's identifier quoting); every value a request carries is a bound
// parameter. The text therefore depends only on the shape of a request, so it
// is cached per shape and pgx caches one prepared statement per text.
//
// What a data source may reach is decided here, not by the tenant's admin:
// a Postgres DSN passes CheckPostgresDSN (a URL with one host, allow-listed
// parameters, nothing read from this host's files), every dial goes through
// the gateway's SSRF guard on the resolved address (Options.Allow widens it),
// and the platform's Postgres server (Platform), whatever database a DSN
// names, is refused by address and, after connecting, by its identity. A failure to connect is one generic error
// whatever the cause; errors of queries name only the statement's columns.
package datasource
