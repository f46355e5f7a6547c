// Package queue lets an admin see and steer the worker fleet's asynq queues
// (the console's Queues page), on asynq.Inspector: per queue the tasks in
// each state, the runs processed and failed per day, latency and memory;
// pause and resume a queue; list its tasks by state (kind, payload,
// attempts, last error), filtered by id and type; one task's details; run,
// archive or delete a task, or several at once, and cancel an active one;
// and the live servers. Every action is recorded in the audit log.
package queue
