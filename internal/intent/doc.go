// Package intent makes a data-source write and its feed row survive a crash
// together (ARCHITECTURE.md decision 8, README "The write guarantee").
//
// The data source (the customer's database) and the platform database are
// different databases, so no single commit covers both. Before a write may
// commit on the data source, a write intent naming it is committed on the
// platform; after the data source answered, the intent is turned into the
// write's feed row (or dropped, when the data source refused the write) in
// one statement. A crash between the two leaves the intent behind: Sweep
// turns intents whose process is gone into agent_action_unknown feed rows,
// which the console and the events endpoint show, instead of letting a
// committed write go unrecorded.
//
// Which process an intent belongs to is its Owner. On Postgres an owner
// holds a session advisory lock on a connection of its own for as long as
// it lives, so Sweep knows a dead owner at once (its lock is free) and never
// touches a live one's intents before StaleAfter. SQLite has no such locks:
// there an intent is abandoned once it is StaleAfter old.
package intent
