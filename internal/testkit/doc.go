// Package testkit gives tests real servers with isolation, so tests run in
// parallel against one PostgreSQL and one Redis:
//
//   - Tx: a gorm transaction on a migrated schema, rolled back at cleanup.
//   - Schema: a fresh migrated schema of its own, dropped at cleanup, for
//     tests whose goroutines must see each other's committed rows.
//   - SQLite: a migrated SQLite file in the test's temp directory.
//   - Redis: a shared client with a key prefix and queue names of the test's own.
//
// A test that needs a server and finds none fails; with -short it is skipped.
// TEST_DATABASE_URL and TEST_REDIS_URL name the servers (defaults: the local ones).
package testkit
