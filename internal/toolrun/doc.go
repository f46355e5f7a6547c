// Package toolrun is the worker side of /run: it resolves what a tool call
// needs from the platform database (the configured tool, the agent, the
// bound integration, the document behind a file_url), runs the base tool's
// executor under the job's deadline, and records the run (its step, feed
// card and usage) in one transaction that a cancelled context rolls back.
// It also runs an artifact step's producer (a jobs.ProducerJob) and seeds
// the rows it outputs through the step's binding (StepSeeder, on
// internal/runtime).
package toolrun
