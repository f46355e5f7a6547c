// Package postgres runs postgres_execute_query: the configured tool's one
// read-only statement, checked by Postgres's own parser (libpg_query through
// github.com/pganalyze/pg_query_go), then run in a READ ONLY transaction
// with statement and lock timeouts that is always rolled back, on a pooled
// connection that is reset (DISCARD ALL) before it is used again. Its
// connections dial only through the gateway's SSRF guard.
//
// Why pg_query_go rather than the pure-Go wasm build (wasilibs/go-pgquery):
// both parse with the same libpg_query (Postgres 17 grammar), but the wasm
// module is compiled on first use, which took 2.6 s in a plain binary and
// 41 s under the race detector, in every process and every test binary that
// checks a query; a parse then costs about 90 µs (370 µs with -race). The
// cgo build costs about a minute of compiling libpg_query once per build
// cache and needs a C compiler (Debian's gcc, which a Go machine has); a
// parse then costs about 8 µs (18 µs with -race), with nothing to warm up.
package postgres
