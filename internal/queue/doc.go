// Package queue lets an admin see and steer the worker fleet's asynq queues
// (the console's Queues page), on asynq.Inspector: per queue the tasks in
// each state and the runs processed and failed today; pause and resume a
// queue; list its tasks by state (kind, payload, attempts, last error); run,
// archive or delete a task and cancel an active one; and the live servers.
// Every action is recorded in the audit log.
package queue
