// Package worker runs appruntime's background fleet: one asynq server per
// queue class and the outbox relay. Handlers are thin: they
// decode a typed job and call one domain function.
package worker
