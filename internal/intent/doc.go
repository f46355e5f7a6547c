// Package intent makes a data-source write and its feed row survive a crash
// together (docs/architecture.md#the-write-guarantee).
//
// The data source (the customer's database) and the platform database are
// different databases, so no single commit covers both. Before a write may
// commit on the data source, a write intent naming it is committed on the
// platform, as one of a batch of intents opened together (one row for the
// batch); after the data source answered, the write's feed row is written,
// naming its intent, and once every intent of a batch is recorded (or
// dropped, when the data source refused its write) the batch's row goes. A
// crash in between leaves the batch behind: Sweep turns the intents of
// batches whose process is gone, those no feed row names, into
// agent_action_unknown feed rows, which the console and the events endpoint
// show, instead of letting a committed write go unrecorded.
//
// Which process a batch belongs to is its Owner. On Postgres an owner holds
// a session advisory lock on a connection of its own for as long as it
// lives, so Sweep knows a dead owner at once (its lock is free) and never
// touches a live one's batches before StaleAfter. SQLite has no such locks:
// there a batch is abandoned once it is StaleAfter old.
package intent
