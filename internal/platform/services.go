package platform

import (
	"context"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/console"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/toolrun"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/worker"
)

// health are the dependencies every front door's /readyz pings.
func (p *Platform) health() []web.Check {
	return []web.Check{
		{Name: "database", Func: p.Store.Ping},
		{Name: "redis", Func: func(ctx context.Context) error { return p.Redis.Ping(ctx).Err() }},
	}
}

// APIServices are the services the API front door may use.
func (p *Platform) APIServices() api.Services {
	return api.Services{
		Log: p.Log, Health: p.health(),
		Admin: p.Admin, Artifacts: p.Artifacts, Bindings: p.Bindings, Bundles: p.Bundles,
		Runtime: p.Runtime, Sessions: p.Sessions, Tasks: p.Tasks, Tools: p.Tools,
		AgentCalls: p.AgentCalls, AgentTools: p.AgentTools, Replies: p.Replies, Identity: p.Identity,
		Files: p.Files, Queue: p.Queue, Metrics: p.Metrics,
		AssetFrameAncestors: p.Config.AssetFrameAncestors, Proxies: p.Config.TrustedProxies,
		PublicAPIURL: p.Config.PublicAPIURL,
	}
}

// ConsoleServices are the services the console front door may use.
func (p *Platform) ConsoleServices() console.Services {
	return console.Services{
		Log: p.Log, Health: p.health(), Redis: p.Redis, KeyPrefix: p.KeyPrefix,
		ConsoleKey: p.Config.ConsoleKey, ConsoleURL: p.Config.ConsoleURL, BundleBaseURL: p.Config.BundleBaseURL,
		Admin: p.Admin, Artifacts: p.Artifacts, Bindings: p.Bindings, Bundles: p.Bundles,
		Parked: p.Parked, Tasks: p.Tasks, Tools: p.Tools, Queue: p.Queue, Capabilities: p.Capabilities,
		PublicAPIURL: p.Config.PublicAPIURL, Runtime: p.Runtime,
		AgentCalls: p.AgentCalls, Replies: p.Replies,
		JobQueues: p.JobQueues, OperatorUserIDs: p.Config.OperatorUserIDs, Resumes: p.Resumes, Metrics: p.Metrics,
		Proxies: p.Config.TrustedProxies,
	}
}

// WorkerServices are the services the worker may use.
func (p *Platform) WorkerServices() worker.Services {
	return worker.Services{
		Log: p.Log, Redis: p.Redis, Queues: p.Queues,
		Concurrency: p.Config.WorkerConcurrency, ShutdownTimeout: p.Config.ShutdownTimeout,
		OutboxRetention: p.Config.OutboxRetention,
		SweepInterval:   p.Config.SweepInterval,
		SweepIntents:    func(ctx context.Context) { intent.SweepAndLog(ctx, p.Store, p.Log) },
		Relay:           p.Relay, Resumes: p.Resumes, Tasks: p.Tasks,
		KeyPrefix: p.KeyPrefix, AgentCalls: p.AgentCalls, Metrics: p.Metrics,
		QueueConcurrency: p.Config.QueueConcurrency, QueueServers: p.Config.QueueServers, WorkerQueues: p.Config.WorkerQueues,
		TaskCheckInterval: p.Config.TaskCheckInterval, ToolRuns: p.ToolRuns, Seed: toolrun.StepSeeder(p.Store, p.Runtime),
		Parked: p.Parked, Queue: p.Queue, Documents: p.Capabilities,
		Notify: p.Notify, NotifyInterval: p.Config.NotifyInterval,
	}
}
