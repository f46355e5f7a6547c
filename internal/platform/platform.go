// Package platform builds the domain services a process needs, once, from
// its configuration and connections: the composition root. The api, console
// and worker front doors each take only the services they use
// (APIServices, ConsoleServices, WorkerServices); cmd/appruntime and the
// tests build the platform the same way.
package platform

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	goruntime "runtime"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/agentmcp"
	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/conncheck"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/integration"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/notify"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/queue"
	"github.com/appruntime/appruntime/internal/reply"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/served"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/csvlookup"
	"github.com/appruntime/appruntime/internal/tool/toolset"
	"github.com/appruntime/appruntime/internal/tool/translate"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/internal/toolrun"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Options are the connections and settings every service is built from.
type Options struct {
	Config *config.Config
	Log    *slog.Logger
	Store  *store.Store
	Redis  redis.UniversalClient
	// KeyPrefix starts every Redis key and pub/sub channel ("appruntime:" in
	// production; tests give each test its own).
	KeyPrefix string
	Queues    jobs.Queues
}

// Platform is the set of domain services of one process.
type Platform struct {
	Options

	// Bindings saves bindings (validated, versioned, audited) and serves the
	// runtime's cached Lookup, kept fresh across replicas through Redis.
	Bindings *binding.Service
	// Integrations is the process's one integration cache, which every
	// change evicts on every replica and worker (integration.Lookup).
	Integrations *integration.Lookup
	// Sessions mints, verifies and revokes the bundles' session tokens.
	Sessions *session.Issuer
	// Artifacts mints a session for an app-tool step with its live descriptor.
	Artifacts *artifact.Minter
	// Served is what this deployment serves (capabilities, base tools, the
	// gateway), computed once when the services it names are built; the
	// runtime and the mint read it (docs/architecture.md#what-this-deployment-serves).
	Served *served.Set
	// Relay moves committed outbox rows to the events queue (the worker runs it).
	Relay *outbox.Relay
	// Resumes carries out resume events: the task runs again, the feed
	// records it, the agent's webhook is told (the worker's events handlers).
	Resumes *review.Resumer
	// Parked lets an admin release or abort a parked task's await (the
	// console), audited; a release wakes the outbox relay.
	Parked *review.Parked
	// Notify tells and escalates review pools' waiting work (the worker's
	// notify pass): digests to pools' webhooks and, with SMTP_URL, emails.
	Notify *notify.Notifier
	// Queue hands parked tasks to reviewers with 20-minute claims
	// (POST /api/review/next); the worker's sweep clears expired ones.
	Queue *claim.Queue
	// Secrets seals and opens secrets at rest (Config.SecretsKey); nil when
	// the process has no key (migrate).
	Secrets *crypt.Box
	// Storage keeps bundle and file bytes (the database's blobs table, so
	// every replica sees them without a shared disk, or BLOB_DIR).
	Storage storage.Store
	// Files keeps a task's files and signs their managed-storage URLs; nil
	// when the process has no SECRETS_KEY (migrate).
	Files *files.Service
	// Capabilities serves /capability (list_files, file_preview,
	// split_document, get_translation) on a session's own task; nil with Files.
	Capabilities *capability.Service
	// Bundles uploads bundle versions and serves them at BUNDLE_BASE_URL.
	Bundles *bundle.Service
	// Admin administers workspaces, agents, integrations, users and tokens.
	Admin *admin.Service
	// Tools saves configured tools.
	Tools *toolconfig.Service
	// LLM is the chat-completions client of the summary pass; nil when
	// LLM_BASE_URL is not set.
	LLM *llm.Client
	// Tasks creates agent tasks and app-tool steps and runs the summary pass.
	Tasks *task.Service
	// DataSources holds a pool per data-source integration (the customer's
	// tables a postgres binding reads and writes).
	DataSources *datasource.Registry
	// Limiter is the per-surface rate limit (5/s, burst 20), shared by every
	// replica through Redis; tests raise it with SetRate.
	Limiter *limit.Limiter
	// ExtractionSlots admits at most two structured_data_extraction runs per
	// surface across replicas.
	ExtractionSlots *limit.Semaphore
	// Bulkhead bounds this process's concurrent lookups (Config.LookupConcurrency,
	// waiting up to Config.LookupWait).
	Bulkhead *limit.Bulkhead
	// RunBulkhead bounds this process's concurrent /run calls
	// (Config.RunConcurrency, waiting up to Config.RunWait).
	RunBulkhead *limit.Bulkhead
	// Gateway runs http_calls (lookups on /read, an action's calls) through
	// the SSRF guard, with the integrations' credentials.
	Gateway *gateway.Gateway
	// Runtime runs the verbs bundles call (/read, /write, /action, /run, /capability).
	Runtime *runtime.Service
	// Identity mints the identity tokens of agent tools' app targets and
	// publishes their keys (JWKS); its ring is derived from SESSION_KEYS.
	Identity *agenttool.IdentitySigner
	// AgentCalls saves agent tool declarations and runs their calls and
	// pending-input buttons.
	AgentCalls *agentcall.Service
	// AgentTools lists an agent's tools for LLM APIs and serves them over MCP.
	AgentTools *agentmcp.Service
	// Replies stores agents' HTML assets and their replies (app blocks).
	Replies *reply.Service
	// RunJobs enqueues the jobs the API waits for (/run's tools, agent tool
	// calls) and waits for their outcomes.
	RunJobs *jobwait.Waiter
	// ToolRuns runs /run's jobs on the worker with the configured executors.
	ToolRuns *toolrun.Runner
	// Metrics is the process's Prometheus registry (internal/metrics),
	// served on METRICS_ADDR; every service above records into it.
	Metrics *metrics.Metrics
	// Inspector reads and manages the asynq queues (the queue metrics).
	Inspector *asynq.Inspector
	// JobQueues is the console's view of the queues: counts, tasks, servers,
	// and the audited actions on them.
	JobQueues *queue.Service

	closers []func()
}

// New builds every service. Services with background work (cache
// invalidation subscribers, pools) stop when Close is called.
func New(ctx context.Context, o Options) (*Platform, error) {
	p := &Platform{Options: o}
	p.buildMetrics()
	var err error
	p.Bindings, err = binding.NewService(ctx, binding.ServiceOptions{
		Store: o.Store, Redis: o.Redis, KeyPrefix: o.KeyPrefix, Log: o.Log,
	})
	if err != nil {
		return nil, err
	}
	p.onClose(p.Bindings.Close)
	p.Integrations, err = integration.New(integration.Options{DB: o.Store.DB, Redis: o.Redis, KeyPrefix: o.KeyPrefix, Log: o.Log})
	if err != nil {
		return nil, err
	}
	p.onClose(p.Integrations.Close)
	p.Sessions, err = session.NewIssuer(session.IssuerOptions{
		Store: o.Store, Redis: o.Redis, KeyPrefix: o.KeyPrefix,
		Keys: o.Config.SessionKeys, Issuer: o.Config.SessionIssuer, TTL: o.Config.SessionTTL, Log: o.Log,
	})
	if err != nil {
		return nil, err
	}
	p.onClose(p.Sessions.Close)
	if err := p.buildAdmin(); err != nil {
		return nil, err
	}
	p.Relay = outbox.NewRelay(o.Store, o.Redis, o.KeyPrefix, o.Queues.Events, o.Log)
	p.Relay.ScriptQueue = o.Queues.Script
	p.Relay.ExtractQueue = o.Queues.Extract
	p.Resumes = review.NewResumer(review.ResumerOptions{
		Store: o.Store, Redis: o.Redis, Queue: o.Queues.Events, Secrets: p.Secrets,
		HTTPClient: p.outboundClient(metrics.ClientWebhook), Metrics: p.Metrics, Log: o.Log,
	})
	p.Parked = review.NewParked(o.Store, p.nudgeRelay)
	mailer, err := notify.NewMailer(o.Config.SMTPURL, o.Config.SMTPFrom)
	if err != nil {
		return nil, err
	}
	p.Notify = notify.New(notify.Options{Store: o.Store, Secrets: p.Secrets, HTTPClient: p.outboundClient(metrics.ClientWebhook),
		Mailer: mailer, Log: o.Log})
	p.Queue = claim.NewQueue(claim.QueueOptions{Store: o.Store, ClaimFor: o.Config.ReviewClaimFor})
	if err := p.buildDataAndLimits(ctx); err != nil {
		return nil, err
	}
	p.Gateway = gateway.New(gateway.Options{
		Allow: o.Config.OutboundAllow, Integrations: p.Integrations, Secrets: p.Secrets, Log: o.Log,
		WrapTransportFunc: p.wrapOutbound,
	})
	p.buildTools()
	p.Served = p.served()
	p.Artifacts = &artifact.Minter{
		Store: o.Store, Sessions: p.Sessions,
		BundleBaseURL: o.Config.BundleBaseURL,
		RuntimeBase:   o.Config.PublicAPIURL + artifact.RuntimePath,
		Served:        p.Served,
	}
	journal := intent.NewJournal(o.Store, o.Log)
	p.onClose(journal.Close)
	p.Runtime = &runtime.Service{
		Store: o.Store, Bindings: p.Bindings, Integrations: p.Integrations, Sources: p.DataSources, Limiter: p.Limiter, Bulkhead: p.Bulkhead,
		RunBulkhead:  p.RunBulkhead,
		Gateway:      p.Gateway,
		Journal:      journal,
		Served:       p.Served,
		Capabilities: capabilitiesOrNil(p.Capabilities),
		AfterRelease: p.nudgeRelay,
		CursorKey:    runtime.NewCursorKey(o.Config.SecretsKey),
		Jobs:         p.RunJobs, Queues: o.Queues, ExtractionSlots: p.ExtractionSlots,
	}
	if err := p.buildAgentTools(); err != nil {
		return nil, err
	}
	return p, nil
}

// buildAgentTools builds the agent tools' identity signer, dispatcher and
// services, and the replies service. Builtin targets run translate_text.
func (p *Platform) buildAgentTools() error {
	o := p.Options
	var err error
	p.Identity, err = agenttool.NewIdentitySigner(o.Config.SessionKeys, o.Config.PublicAPIURL)
	if err != nil {
		return err
	}
	var engine translate.Provider
	if lt := translate.NewLibreTranslate(o.Config.Tools.TranslateURL, o.Config.Tools.TranslateAPIKey, o.Config.OutboundAllow); lt != nil {
		engine = lt
	}
	dispatcher := agenttool.NewDispatcher(agenttool.DispatcherOptions{
		Allow: o.Config.OutboundAllow, Signer: p.Identity, Log: o.Log,
		Builtins: tool.Set{models.BaseTranslateText: translate.New(engine)},
	})
	p.AgentCalls = agentcall.NewService(agentcall.Options{
		Store: o.Store, Dispatcher: dispatcher, Log: o.Log, Jobs: p.RunJobs, Queue: o.Queues.Lookup,
		Components:   agenttool.IntegrationComponents{Integrations: p.Integrations, Box: p.Secrets},
		AfterRelease: p.nudgeRelay,
	})
	p.AgentTools = agentmcp.NewService(agentmcp.Options{Calls: p.AgentCalls, Tools: p.Tools, Tasks: p.Tasks,
		Bundles: p.Bundles, Artifacts: p.Artifacts, PublicAPIURL: o.Config.PublicAPIURL, Log: o.Log})
	p.Replies, err = reply.NewService(reply.Options{Store: o.Store, Blobs: p.Storage,
		SecretsKey: o.Config.SecretsKey, PublicAPIURL: o.Config.PublicAPIURL})
	return err
}

// buildTools builds the /run waiter and the executors the worker runs
// /run's jobs with (on the task files buildFiles built).
func (p *Platform) buildTools() {
	o := p.Options
	p.RunJobs = jobwait.NewWaiter(o.Redis, o.KeyPrefix, o.Log)
	p.RunJobs.Share = limit.NewShare(o.Redis, o.KeyPrefix, map[string]int{
		o.Queues.Lookup: o.Config.QueueShares[jobs.QueueLookup], o.Queues.Extract: o.Config.QueueShares[jobs.QueueExtract],
		o.Queues.Script: o.Config.QueueShares[jobs.QueueScript],
	}, o.Config.QueueShareWait)
	p.onClose(p.RunJobs.Close)
	var csvFiles csvlookup.Files
	if p.Files != nil {
		csvFiles = &toolrun.AgentFiles{Store: o.Store, Files: p.Files}
	}
	// The SQL tools reach what data sources reach (buildDataAndLimits).
	set, closeTools := toolset.New(o.Config, p.Secrets, p.DataSources.Guard(), csvFiles)
	p.onClose(closeTools)
	p.ToolRuns = &toolrun.Runner{Store: o.Store, Tools: set, Files: p.Files, Documents: p.Capabilities, Log: o.Log, Integrations: p.Integrations}
}

// buildDataAndLimits builds the data-source pools and the limits the runtime
// verbs apply. Data sources reach public addresses and DataSourceAllow, never
// the platform's Postgres server; SQLite ones only the files the dev seed enables.
func (p *Platform) buildDataAndLimits(ctx context.Context) error {
	o := p.Options
	platformDB, err := datasource.IdentifyPlatform(ctx, o.Store, o.Config.DatabaseURL)
	if err != nil {
		return err
	}
	p.DataSources = datasource.NewRegistry(p.Secrets, datasource.Options{
		Allow: o.Config.DataSourceAllow, Platform: platformDB, ObserveFunc: p.Metrics.ObserveDataSource,
	})
	p.onClose(p.DataSources.Close)
	p.Limiter = limit.NewLimiter(o.Redis, o.KeyPrefix)
	if o.Config.SurfaceRate > 0 && o.Config.SurfaceBurst > 0 {
		p.Limiter.SetRate(limit.Rate{PerSecond: o.Config.SurfaceRate, Burst: o.Config.SurfaceBurst})
	}
	p.ExtractionSlots = limit.NewSemaphore(o.Redis, o.KeyPrefix, "extract", limit.ExtractionSlotsPerSurface, limit.ExtractionHold)
	p.Bulkhead = limit.NewBulkhead("lookups", o.Config.LookupConcurrency, o.Config.LookupWait)
	p.RunBulkhead = limit.NewBulkhead("runs", o.Config.RunConcurrency, o.Config.RunWait)
	return nil
}

// buildAdmin builds storage, bundles, the admin services and the agent task API.
func (p *Platform) buildAdmin() error {
	o := p.Options
	if len(o.Config.SecretsKey) > 0 {
		box, err := crypt.New(o.Config.SecretsKey)
		if err != nil {
			return err
		}
		p.Secrets = box
	}
	blobs, err := storage.Open(o.Config, o.Store.DB)
	if err != nil {
		return err
	}
	p.Storage = blobs
	if err := p.buildFiles(); err != nil {
		return err
	}
	p.Bundles = bundle.NewService(bundle.Options{
		Store: o.Store, Blobs: p.Storage, Log: o.Log,
		BundleBaseURL: o.Config.BundleBaseURL, PublicAPIURL: o.Config.PublicAPIURL, Allow: o.Config.OutboundAllow,
	})
	tokens, err := auth.NewTokenCache(auth.TokenCacheOptions{DB: o.Store.DB, Redis: o.Redis, KeyPrefix: o.KeyPrefix, Log: o.Log})
	if err != nil {
		return err
	}
	p.onClose(tokens.Close)
	p.Admin = admin.NewService(admin.Options{
		Store: o.Store, Secrets: p.Secrets, Sessions: p.Sessions, Tokens: tokens, ReprioritiseFunc: task.Reprioritise,
		Integrations: p.Integrations,
		// The data sources are built after the admin service (they need its
		// secrets box) and before any request.
		CheckSQLiteFunc:   func(dsn string) error { return p.DataSources.CheckSQLite(dsn) },
		CheckPostgresFunc: func(ctx context.Context, dsn string) error { return p.DataSources.CheckPostgres(ctx, dsn) },
		TestConnectionFunc: func(ctx context.Context, kind, baseURL string, secrets map[string]json.RawMessage) (string, error) {
			// A client per test: tests are rare, and none keeps a connection.
			client := p.outboundClient(metrics.ClientConnCheck)
			defer client.CloseIdleConnections()
			c := conncheck.Checker{Guard: p.DataSources.Guard(), HTTP: client, CheckSQLiteFunc: p.DataSources.CheckSQLite}
			return c.Check(ctx, kind, baseURL, secrets)
		},
	})
	p.Tools = toolconfig.NewService(o.Store)
	p.LLM = llm.New(o.Config.LLMBaseURL, o.Config.LLMAPIKey, o.Config.LLMModel)
	p.Tasks = task.NewService(task.Options{Store: o.Store, Log: o.Log, BundleBaseURL: o.Config.BundleBaseURL, LLM: p.LLM,
		AfterQueueFunc: p.nudgeRelay})
	return nil
}

// buildFiles builds the task files and the capabilities on them, and marks
// the capabilities it serves: the file ones always, get_translation when
// TRANSLATE_URL names an engine.
func (p *Platform) buildFiles() error {
	o := p.Options
	if len(o.Config.SecretsKey) == 0 {
		return nil
	}
	var err error
	p.Files, err = files.New(files.Options{
		Store: o.Store, Blobs: p.Storage, SecretsKey: o.Config.SecretsKey, PublicAPIURL: o.Config.PublicAPIURL,
		Presign: o.Config.BlobPresign,
	})
	if err != nil {
		return err
	}
	var engine translate.Provider
	if o.Config.Tools.TranslateURL != "" {
		engine = translate.NewLibreTranslate(o.Config.Tools.TranslateURL, o.Config.Tools.TranslateAPIKey, o.Config.OutboundAllow)
	}
	document.SetOCRLanguages(o.Config.Tools.OCRLanguages)
	gate, share := p.documentGate()
	var passes *limit.Semaphore
	if o.Redis != nil {
		// A workspace runs as many OCR passes from the queue at once as
		// it may run page readers: a pass reads one page at a time.
		passes = limit.NewSemaphore(o.Redis, o.KeyPrefix, "ocr_pass", share, jobs.ExtractDeadline)
	}
	p.Capabilities = capability.New(capability.Options{Store: o.Store, Files: p.Files, Translator: engine, Redis: o.Redis, KeyPrefix: o.KeyPrefix,
		Blobs: p.Storage, Gate: gate, OCRPasses: passes})
	return nil
}

// documentGate is the gate of page renderings and OCR runs (DOCUMENT_RENDER_*)
// and one workspace's share of it; a configuration built in code that
// leaves them zero gets their defaults.
func (p *Platform) documentGate() (*limit.WorkGate, int) {
	o, t := p.Options, p.Options.Config.Tools
	if t.DocumentRenderConcurrency <= 0 {
		t.DocumentRenderConcurrency = goruntime.NumCPU()
	}
	if t.DocumentRenderShare <= 0 {
		t.DocumentRenderShare = max(t.DocumentRenderConcurrency/2, 1)
	}
	if t.DocumentRenderWait <= 0 {
		t.DocumentRenderWait = config.DefaultDocumentRenderWait
	}
	var gate *limit.WorkGate
	observe := p.Metrics.DocumentWork(func() int { return gate.InUse() }, func() int { return gate.Waiting() })
	gate = limit.NewWorkGate(limit.WorkGateOptions{
		What: "page renderings", Redis: o.Redis, KeyPrefix: o.KeyPrefix, Process: t.DocumentRenderConcurrency,
		Share: t.DocumentRenderShare, Wait: t.DocumentRenderWait, Observe: observe,
	})
	return gate, t.DocumentRenderShare
}

// buildMetrics builds the registry with every scrape-time source: the
// queues (through the inspector), the outbox lag and the live sessions.
func (p *Platform) buildMetrics() {
	o := p.Options
	p.Inspector = asynq.NewInspectorFromRedisClient(o.Redis)
	capabilities := make([]string, 0, len(bindingspec.Catalog))
	for _, c := range bindingspec.Catalog {
		capabilities = append(capabilities, c.Name)
	}
	p.JobQueues = queue.New(o.Store, o.Redis, o.Queues.Lookup, o.Queues.Extract, o.Queues.Script, o.Queues.Events)
	var platformDB func() (uint64, uint64)
	if o.Store.Dialect == config.Postgres { // SQLite's statements are not counted
		platformDB = func() (uint64, uint64) {
			c := o.Store.Counted()
			return c.Statements, c.Transactions
		}
	}
	p.Metrics = metrics.New(metrics.Options{
		Capabilities: capabilities,
		Queues: &metrics.QueueSource{Inspector: p.Inspector, Queues: []string{
			o.Queues.Lookup, o.Queues.Extract, o.Queues.Script, o.Queues.Events,
		}},
		OutboxLag:    func(ctx context.Context) (time.Duration, error) { return outbox.OldestUnsentAge(ctx, o.Store.DB) },
		LiveSessions: func(ctx context.Context) (int, error) { return session.CountLive(ctx, o.Store.DB) },
		PlatformDB:   platformDB,
		Log:          o.Log,
	})
}

// wrapOutbound is the transport of every outbound client: it sends the
// request id (X-Request-Id) and, with tracing on, the traceparent of a
// client span, and records the call's latency and status under client.
func (p *Platform) wrapOutbound(client string, rt http.RoundTripper) http.RoundTripper {
	return p.Metrics.Transport(client, tracing.Transport(requestid.Transport(rt)))
}

// outboundClient is an SSRF-guarded client (gateway.NewClient) on
// wrapOutbound's transport.
func (p *Platform) outboundClient(client string) *http.Client {
	c := gateway.NewClient(p.Config.OutboundAllow, 0)
	c.Transport = p.wrapOutbound(client, c.Transport)
	return c
}

// onClose registers fn to run at Close, in reverse order of registration.
func (p *Platform) onClose(fn func()) { p.closers = append(p.closers, fn) }

// Close stops the services' background work and releases their pools.
func (p *Platform) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}

// toolNeeds is what this deployment has of what the base tools need to be
// served, from the configuration alone, so that the api answers 501 for a
// tool whose backing service is not configured without a round trip to the
// worker (which checks again: python's sandbox is found on the worker's host).
func (p *Platform) toolNeeds() basetool.Needs {
	var have basetool.Needs
	if p.Files != nil {
		have |= basetool.NeedsFiles
	}
	if p.Config.Tools.TranslateURL != "" {
		have |= basetool.NeedsTranslateEngine
	}
	if p.Config.Tools.ExtractionBaseURL != "" {
		have |= basetool.NeedsExtractionModel
	}
	return have
}

// served computes what this deployment serves from the services built
// before it: the capabilities the review queue (the host's: the host claims
// and puts back tasks with the reviewer's own token, and shows the document
// whose selection it hands the bundle) and internal/capability implement,
// the base tools whose needs are met when there are workers to run them,
// and the gateway.
func (p *Platform) served() *served.Set {
	capabilities := []string{"document_selection", "next_review_task", "abort_review_task"}
	if p.Capabilities != nil {
		for _, c := range bindingspec.Catalog {
			if p.Capabilities.Serves(c.Name) {
				capabilities = append(capabilities, c.Name)
			}
		}
	}
	var tools []string
	if p.RunJobs != nil {
		tools = basetool.Served(p.toolNeeds())
	}
	return served.New(served.Options{Capabilities: capabilities, Tools: tools, Gateway: p.Gateway != nil})
}

// capabilitiesOrNil keeps a nil *capability.Service a nil interface, which
// the runtime answers with 501.
func capabilitiesOrNil(c *capability.Service) runtime.Capabilities {
	if c == nil {
		return nil
	}
	return c
}

// nudgeRelay wakes the outbox relays after a commit that wrote outbox rows,
// so their jobs are queued at once rather than at the next poll. A failed
// nudge only costs that latency.
func (p *Platform) nudgeRelay(ctx context.Context) {
	_ = outbox.Nudge(ctx, p.Options.Redis, p.Options.KeyPrefix)
}
