// Package store opens the platform database (PostgreSQL in production, SQLite
// in the embedded dev mode), applies its versioned migrations, and holds the
// queries and transactions shared by the domain packages.
package store
