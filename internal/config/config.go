// Package config reads appruntime's settings from environment variables and
// validates them at start-up, so that a bad value stops the process with a
// message naming the variable instead of failing later on first use.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MinKeyBytes is the smallest signing or encryption key accepted.
const MinKeyBytes = 32

// Config is every setting of every process. Fields that a process does not
// need may be zero for it; Load checks what the chosen Role needs.
type Config struct {
	DatabaseURL string // postgres://… or sqlite:PATH
	RedisURL    string // redis://…; empty only in dev (embedded Redis)

	APIAddr     string
	ConsoleAddr string
	// MetricsAddr is where the process serves /metrics (internal/metrics);
	// empty turns the metrics server off. It must be a private address: it
	// is never the API's or the console's.
	MetricsAddr   string
	PublicAPIURL  string // how browsers and agents reach the API
	ConsoleURL    string // how admins reach the console
	BundleBaseURL string // where bundles are served from (ideally a separate origin)
	// AssetFrameAncestors are the integrators' host origins that may frame
	// app block assets served by signed URL from the API
	// (ASSET_FRAME_ANCESTORS, comma-separated https origins); empty: none.
	AssetFrameAncestors []string

	SessionKeys   []Key  // the first signs; all verify
	SessionIssuer string // iss of session JWTs
	SecretsKey    []byte // AES-256 key for integration secrets and webhook secrets at rest
	ConsoleKey    []byte // signs console cookies and CSRF tokens

	// OutboundAllow lists networks the outbound SSRF guard lets through although
	// they are private or loopback. Empty in production; tests name 127.0.0.0/8.
	OutboundAllow []netip.Prefix
	// DataSourceAllow lists networks a data source (a customer database) may
	// be reached at although they are private or loopback, such as the
	// subnet of the customers' databases. Apart from OutboundAllow, so that
	// letting data sources reach a private database never opens http_calls
	// to the services beside it. The platform's Postgres server stays refused.
	DataSourceAllow []netip.Prefix
	// TrustedProxies are the networks of the hops (load balancers, reverse
	// proxies) whose X-Forwarded-For the api and console believe when they
	// name a client (the sign-in throttle, the access log). Empty: none; a
	// client is its connection's address.
	TrustedProxies []netip.Prefix

	LLMBaseURL string // OpenAI-compatible chat-completions endpoint; empty disables the summary pass
	LLMAPIKey  string
	LLMModel   string

	// Tools configures the executors of /run (internal/tool/...).
	Tools Tools
	// Tracing is the OpenTelemetry trace settings (OTEL_*).
	Tracing Tracing

	// BlobDir is where task files and bundle versions are stored
	// (internal/storage.Open): a directory on a volume every api and worker
	// replica mounts. Empty keeps them in the platform database, which every
	// replica already shares; dev mode fills it with a directory of its own.
	BlobDir string
	// BlobURL, when set, puts blobs in an S3-compatible bucket instead
	// (s3://bucket/prefix?endpoint=…&region=…; internal/storage.Open parses
	// it); credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
	// or the AWS credential chain. See docs/deploy.md#choose-a-blob-store.
	BlobURL string
	// BlobPresign (BLOB_PRESIGN, with BLOB_URL only) answers a
	// managed-storage URL of a PDF or an image with a redirect to a
	// presigned GET of the bucket, once the URL's own signature and expiry
	// are checked; see docs/deploy.md#presigned-downloads.
	BlobPresign bool

	WorkerConcurrency int
	// QueueConcurrency is the worker's concurrency per queue class
	// (WORKER_CONCURRENCY_LOOKUP, _EXTRACT, _SCRIPT, _EVENTS; each defaults
	// to WORKER_CONCURRENCY), so slow work never takes fast work's slots.
	QueueConcurrency map[string]int
	// QueueServers is how many asynq servers of a worker process share a
	// queue class's concurrency (WORKER_SERVERS_LOOKUP, _EXTRACT, _SCRIPT,
	// _EVENTS; lookup 4, the others 1). An asynq server takes one job per
	// Redis round trip, one after another, so under a burst of short jobs
	// one server's pickups queue behind each other; every server also
	// polls Redis while idle.
	QueueServers map[string]int
	// QueueShares is how many jobs of a queue class one workspace may have
	// at once across the fleet, enqueued or running (WORKER_SHARE_LOOKUP,
	// _EXTRACT, _SCRIPT; each defaults to half the class's
	// WORKER_CONCURRENCY_<CLASS>, at least 1): past it the workspace's
	// jobs wait or are refused, so another workspace's job finds a free
	// slot. The events class, the platform's own jobs, has none.
	QueueShares map[string]int
	// QueueShareWait is how long an enqueue waits for a slot of its
	// workspace's share before it is refused with 429 (WORKER_SHARE_WAIT).
	QueueShareWait time.Duration
	// WorkerQueues are the queue classes this worker serves (WORKER_QUEUES
	// or `appruntime worker --queues lookup,script`); empty serves all.
	WorkerQueues []string
	// TaskCheckInterval is how often an idle asynq server looks for a new
	// job (WORKER_TASK_CHECK_INTERVAL): a /run's pickup latency.
	TaskCheckInterval time.Duration
	LookupConcurrency int           // process-wide bulkhead for lookups
	LookupWait        time.Duration // how long a lookup waits for the bulkhead before 503
	// RunConcurrency and RunWait are /run's own process-wide bulkhead
	// (RUN_CONCURRENCY, RUN_WAIT): a run holds its slot while its job runs
	// on the worker fleet, so it is bounded apart from lookups
	// (docs/operators.md#run-on-the-worker-fleet).
	RunConcurrency  int
	RunWait         time.Duration
	ShutdownTimeout time.Duration // how long SIGTERM waits for in-flight work
	// SurfaceRate and SurfaceBurst are the per-surface rate limit of /run,
	// /action and lookups (seed 000: 5/s, burst 20). Only benchmarks change it.
	SurfaceRate  int
	SurfaceBurst int
	// ReviewClaimFor is how long a review claim holds; zero is the seed's
	// 20 minutes (claim.Duration). No variable sets it: tests shorten it.
	ReviewClaimFor time.Duration
	// OperatorUserIDs are the console users who are the deployment's
	// operators (OPERATOR_USER_IDS, comma-separated user ids): only they may
	// pause a queue or act on its tasks, which reach every workspace. User
	// ids, not emails: an email is unique only within a workspace, so any
	// workspace's admin could create a user with an operator's email.
	OperatorUserIDs []string
	// SessionTTL is how long an app session token lives; zero is the seed's
	// 15 minutes (session.TTL), which is also its bound. No variable sets it:
	// tests shorten it to see a bundle renew its session.
	SessionTTL time.Duration

	LogLevel slog.Level

	// DebugAddr is where the api and the worker serve Go's profiler; "" (the default)
	// serves none. It must be a loopback address.
	DebugAddr string

	// RedisKeyPrefix starts every Redis key, channel and queue name of the
	// deployment, so that several share one Redis (DefaultRedisKeyPrefix).
	RedisKeyPrefix string
	// OutboxRetention is how long a sent outbox row is kept before the
	// worker prunes it (DefaultOutboxRetention, at least MinOutboxRetention).
	OutboxRetention time.Duration
	// SweepInterval is how often the worker re-creates owed jobs Redis
	// lost (DefaultSweepInterval, SWEEP_INTERVAL).
	SweepInterval time.Duration
	// NotifyInterval is how often the worker's notify pass tells and
	// escalates waiting work (DefaultNotifyInterval, NOTIFY_INTERVAL).
	NotifyInterval time.Duration
	// SMTPURL is the relay digests are emailed through
	// (smtp://[user:pass@]host:port, STARTTLS when offered, or smtps://);
	// empty emails nothing. SMTPFrom is their sender (SMTP_FROM).
	SMTPURL  string
	SMTPFrom string
}

// Tools configures the executors of the base tools a bundle runs through
// /run. A provider left unset makes its tool answer 501.
type Tools struct {
	PythonBin              string        // PYTHON_BIN: the interpreter, under /usr
	PythonBwrap            string        // PYTHON_BWRAP: the bubblewrap binary
	PythonAllowUnsandboxed bool          // PYTHON_ALLOW_UNSANDBOXED: run scripts without bwrap when it is missing
	PythonCPUTime          time.Duration // PYTHON_CPU_TIME: CPU time per run
	PythonMemoryBytes      int64         // PYTHON_MEMORY_MB: address space per run
	PythonFileBytes        int64         // PYTHON_FILE_MB: largest file a script writes, and its /tmp
	PythonMaxProcesses     int           // PYTHON_MAX_PROCESSES: processes and threads per run
	PythonCgroup           string        // PYTHON_CGROUP: the delegated cgroup each run's memory cgroup goes under
	PythonAllowNoCgroup    bool          // PYTHON_ALLOW_NO_CGROUP: run scripts without a memory cgroup when none works

	CSVMaxFileBytes int64 // CSV_MAX_FILE_MB: largest CSV indexed
	CSVCacheBytes   int64 // CSV_CACHE_MB: memory for parsed and indexed CSV files

	OCRLanguages string // OCR_LANGUAGES: tesseract's languages for scanned pages, "eng+deu"

	// DocumentRenderConcurrency is how many page renderings and OCR runs
	// (subprocesses) this process runs at once (DOCUMENT_RENDER_CONCURRENCY,
	// default the machine's cores); DocumentRenderShare how many one
	// workspace runs at once fleet-wide (DOCUMENT_RENDER_SHARE, default half
	// the concurrency, at least 1); DocumentRenderWait how long a run waits
	// for both before it is refused with 503 (DOCUMENT_RENDER_WAIT).
	DocumentRenderConcurrency int
	DocumentRenderShare       int
	DocumentRenderWait        time.Duration

	SQLStatementTimeout time.Duration // SQL_STATEMENT_TIMEOUT
	SQLLockTimeout      time.Duration // SQL_LOCK_TIMEOUT
	SQLMaxConns         int           // SQL_MAX_CONNS: pool size per integration

	TranslateURL    string // TRANSLATE_URL: a LibreTranslate-compatible engine; empty: translate_text is 501
	TranslateAPIKey string // TRANSLATE_API_KEY

	ExtractionBaseURL string // EXTRACTION_BASE_URL (default LLM_BASE_URL); empty: extraction is 501
	ExtractionAPIKey  string // EXTRACTION_API_KEY (default LLM_API_KEY)
	ExtractionModel   string // EXTRACTION_MODEL (default LLM_MODEL)
}

// Bounds of the tool settings: a run's CPU time fits the script queue's
// 900 s deadline, a statement the lookup queue's 60 s.
const (
	MaxPythonCPUTime       = 900 * time.Second
	MaxSQLStatementTimeout = 60 * time.Second
)

// QueueClasses are the worker's queue classes (jobs.Queues' fields).
var QueueClasses = []string{"lookup", "extract", "script", "events"}

// SharedQueueClasses are the queue classes whose slots are shared fairly
// between workspaces (Config.QueueShares): the ones tenants' work runs on.
var SharedQueueClasses = []string{"lookup", "extract", "script"}

// DOCUMENT_RENDER_WAIT's default and bound: a page the viewer waits for
// longer than this is better refused (it retries).
const (
	DefaultDocumentRenderWait = 5 * time.Second
	MaxDocumentRenderWait     = 30 * time.Second
)

// DefaultQueueShareWait is WORKER_SHARE_WAIT's default.
const DefaultQueueShareWait = time.Second

// defaultQueueServers are WORKER_SERVERS_<CLASS>'s defaults: only the
// lookup class, whose jobs are short and waited for, splits its concurrency
// across servers (any class not named here: 1).
var defaultQueueServers = map[string]int{"lookup": 4, "extract": 1, "script": 1, "events": 1}

// DefaultTaskCheckInterval is WORKER_TASK_CHECK_INTERVAL's default: a
// waiting /run's job is picked up within it (asynq's own default is 1 s).
const DefaultTaskCheckInterval = 5 * time.Millisecond

// DevTaskCheckInterval is WORKER_TASK_CHECK_INTERVAL's default in dev, where
// every queue class also has one server (WORKER_SERVERS_<CLASS>).
const DevTaskCheckInterval = 50 * time.Millisecond

// ParseQueueList reads a comma-separated list of queue classes.
func ParseQueueList(v string) ([]string, error) {
	var out []string
	for _, q := range strings.Split(v, ",") {
		q = strings.TrimSpace(q)
		if q == "" {
			continue
		}
		if !slices.Contains(QueueClasses, q) {
			return nil, fmt.Errorf("unknown queue %q (want some of %s)", q, strings.Join(QueueClasses, ","))
		}
		out = append(out, q)
	}
	return out, nil
}

// queueList reads a variable of queue classes.
// idList reads a comma-separated list of ids (UUIDs, as the database
// writes them: lower case); empty entries are skipped.
func (r *reader) idList(name string) []string {
	var ids []string
	for _, v := range strings.Split(r.getenv(name), ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !idPattern.MatchString(v) {
			r.fail(name, fmt.Sprintf("want user ids such as 0b6c3f9e-6d0a-4c38-9a51-3f3b5d3f0f7e, got %q", v))
			continue
		}
		ids = append(ids, v)
	}
	return ids
}

// idPattern is a lower-case UUID, the form of every id the database holds.
var idPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func (r *reader) queueList(name string) []string {
	qs, err := ParseQueueList(r.getenv(name))
	if err != nil {
		r.fail(name, err.Error())
	}
	return qs
}

// DefaultRedisKeyPrefix is REDIS_KEY_PREFIX's default; with it the queues
// keep their plain names (jobs.DefaultQueues).
const DefaultRedisKeyPrefix = "appruntime:"

// Outbox retention: the default, and the least accepted. A resume event's
// webhook deliveries read its outbox row for as long as they are retried
// (about five hours), so a sent row must outlive that.
const (
	DefaultOutboxRetention = 7 * 24 * time.Hour
	MinOutboxRetention     = 24 * time.Hour
)

// DefaultSweepInterval is how often the worker's sweep re-creates the jobs
// Postgres says are owed and Redis may have lost
// (docs/operators.md#running-in-production).
const DefaultSweepInterval = 15 * time.Second

// DefaultNotifyInterval is how often the worker's notify pass looks for
// work waiting past its pool's thresholds
// (docs/admins.md#notifications-of-waiting-work).
const DefaultNotifyInterval = time.Minute

// Key is one entry of a key ring.
type Key struct {
	ID     string
	Secret []byte
}

// Role says which process is starting; it decides which settings are required.
type Role string

// The processes of the binary.
const (
	RoleDev     Role = "dev"
	RoleAPI     Role = "api"
	RoleConsole Role = "console"
	RoleWorker  Role = "worker"
	RoleMigrate Role = "migrate"
	// RoleOperator is a command-line operator task on the database (such as
	// creating a workspace): like migrate, it needs DATABASE_URL only.
	RoleOperator Role = "operator"
)

// Error names the variable that is wrong.
type Error struct {
	Var    string
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("config: %s: %s", e.Var, e.Reason) }

// Load reads the environment through getenv and validates it for role. In dev
// mode missing secrets and stores are left empty for the caller to fill with
// embedded defaults; every other role must have them.
func Load(role Role, getenv func(string) string) (*Config, error) {
	r := reader{getenv: getenv}
	// Production listens on every interface; dev, a demo with printed
	// passwords and tokens, only on this machine unless told otherwise.
	apiAddr, consoleAddr := ":8080", ":8081"
	if role == RoleDev {
		apiAddr, consoleAddr = "127.0.0.1:8080", "127.0.0.1:8081"
	}
	c := &Config{
		DatabaseURL:       strings.TrimSpace(getenv("DATABASE_URL")),
		RedisURL:          strings.TrimSpace(getenv("REDIS_URL")),
		APIAddr:           r.addr("API_ADDR", apiAddr),
		ConsoleAddr:       r.addr("CONSOLE_ADDR", consoleAddr),
		MetricsAddr:       r.optionalAddr("METRICS_ADDR"),
		SessionIssuer:     r.str("SESSION_ISSUER", "appruntime"),
		LLMBaseURL:        r.url("LLM_BASE_URL", ""),
		LLMAPIKey:         getenv("LLM_API_KEY"),
		LLMModel:          r.str("LLM_MODEL", "gpt-4o-mini"),
		WorkerConcurrency: r.int("WORKER_CONCURRENCY", 10, 1, 1000),
		LookupConcurrency: r.int("LOOKUP_CONCURRENCY", 64, 1, 100000),
		LookupWait:        r.duration("LOOKUP_WAIT", 250*time.Millisecond),
		RunConcurrency:    r.int("RUN_CONCURRENCY", 256, 1, 100000),
		RunWait:           r.duration("RUN_WAIT", 250*time.Millisecond),
		SurfaceRate:       r.int("SURFACE_RATE_PER_SECOND", 5, 1, 1000000),
		SurfaceBurst:      r.int("SURFACE_BURST", 20, 1, 1000000),
		ShutdownTimeout:   r.duration("SHUTDOWN_TIMEOUT", 8*time.Second),
		LogLevel:          r.level("LOG_LEVEL"),
		OutboundAllow:     r.prefixes("OUTBOUND_ALLOW_CIDRS"),
		DataSourceAllow:   r.prefixes("DATASOURCE_ALLOW_CIDRS"),
		TrustedProxies:    r.prefixes("TRUSTED_PROXIES"),
		DebugAddr:         r.loopbackAddr("DEBUG_ADDR"),
		RedisKeyPrefix:    r.keyPrefix("REDIS_KEY_PREFIX", DefaultRedisKeyPrefix),
		OutboxRetention:   r.duration("OUTBOX_RETENTION", DefaultOutboxRetention),
		SweepInterval:     r.duration("SWEEP_INTERVAL", DefaultSweepInterval),
		NotifyInterval:    r.durationIn("NOTIFY_INTERVAL", DefaultNotifyInterval, time.Second, time.Hour),
		SMTPURL:           strings.TrimSpace(getenv("SMTP_URL")),
		SMTPFrom:          r.str("SMTP_FROM", "appruntime@localhost"),
		BlobDir:           r.blobDir("BLOB_DIR", role),
		BlobURL:           strings.TrimSpace(getenv("BLOB_URL")),
		BlobPresign:       r.bool("BLOB_PRESIGN"),
	}
	if c.BlobPresign && c.BlobURL == "" {
		r.fail("BLOB_PRESIGN", "presigned downloads need an S3 bucket: set BLOB_URL too, or unset BLOB_PRESIGN")
	}
	if c.BlobURL != "" && !strings.HasPrefix(c.BlobURL, "s3://") {
		r.fail("BLOB_URL", fmt.Sprintf("want s3://bucket/prefix?endpoint=…&region=…, got %q", c.BlobURL))
	}
	if c.BlobURL != "" && strings.TrimSpace(getenv("BLOB_DIR")) != "" {
		r.fail("BLOB_URL", "set BLOB_URL or BLOB_DIR, not both")
	}
	if c.OutboxRetention < MinOutboxRetention {
		r.fail("OUTBOX_RETENTION", fmt.Sprintf("want at least %s (webhook deliveries read sent rows while they retry), got %s",
			MinOutboxRetention, c.OutboxRetention))
	}
	c.PublicAPIURL = r.url("PUBLIC_API_URL", "http://"+localURLHost(c.APIAddr))
	c.ConsoleURL = r.url("CONSOLE_URL", "http://"+localURLHost(c.ConsoleAddr))
	c.BundleBaseURL = r.url("BUNDLE_BASE_URL", strings.TrimRight(c.PublicAPIURL, "/")+"/bundles")
	c.AssetFrameAncestors = r.origins("ASSET_FRAME_ANCESTORS")
	c.Tools = r.tools(c, role)
	c.Tracing = r.tracing()
	c.QueueConcurrency = map[string]int{}
	for _, q := range QueueClasses {
		c.QueueConcurrency[q] = r.int("WORKER_CONCURRENCY_"+strings.ToUpper(q), c.WorkerConcurrency, 1, 1000)
	}
	// An idle asynq server runs a dequeue script every check interval. In
	// dev that is the in-process Redis's Lua, dear: at the production
	// defaults an idle dev process took half a core. The demo picks a /run
	// up within DevTaskCheckInterval instead.
	servers, checkInterval := defaultQueueServers, DefaultTaskCheckInterval
	if role == RoleDev {
		servers, checkInterval = map[string]int{}, DevTaskCheckInterval
	}
	c.QueueServers = map[string]int{}
	for _, q := range QueueClasses {
		c.QueueServers[q] = r.int("WORKER_SERVERS_"+strings.ToUpper(q), max(servers[q], 1), 1, 64)
	}
	c.QueueShares = map[string]int{}
	for _, q := range SharedQueueClasses {
		c.QueueShares[q] = r.int("WORKER_SHARE_"+strings.ToUpper(q), max(c.QueueConcurrency[q]/2, 1), 1, 100000)
	}
	c.QueueShareWait = r.durationIn("WORKER_SHARE_WAIT", DefaultQueueShareWait, 0, time.Minute)
	c.WorkerQueues = r.queueList("WORKER_QUEUES")
	c.OperatorUserIDs = r.idList("OPERATOR_USER_IDS")
	c.TaskCheckInterval = r.durationIn("WORKER_TASK_CHECK_INTERVAL", checkInterval, time.Millisecond, time.Second)
	c.SessionKeys = r.keyRing("SESSION_KEYS")
	c.SecretsKey = r.key("SECRETS_KEY")
	c.ConsoleKey = r.key("CONSOLE_SESSION_KEY")

	if c.DatabaseURL != "" {
		if _, _, err := ParseDatabaseURL(c.DatabaseURL); err != nil {
			r.fail("DATABASE_URL", err.Error())
		}
	}
	if c.RedisURL != "" {
		if _, err := ParseRedisURL(c.RedisURL); err != nil {
			r.fail("REDIS_URL", err.Error())
		}
	}
	r.checkMetricsAddr(role, c)
	if role != RoleDev {
		r.require("DATABASE_URL", c.DatabaseURL != "")
		if role != RoleMigrate && role != RoleOperator {
			r.require("REDIS_URL", c.RedisURL != "")
			r.require("SECRETS_KEY", c.SecretsKey != nil)
		}
		// Both the API (a host opening a step) and the console (its
		// artifact page) mint app sessions.
		if role == RoleAPI || role == RoleConsole {
			r.require("SESSION_KEYS", len(c.SessionKeys) > 0)
		}
		if role == RoleConsole {
			r.require("CONSOLE_SESSION_KEY", c.ConsoleKey != nil)
		}
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return c, nil
}

// tools reads the tool settings; the extraction model defaults to the LLM's.
// Only dev runs scripts without a memory cgroup unless told to.
func (r *reader) tools(c *Config, role Role) Tools {
	const mib = 1 << 20
	t := Tools{
		PythonBin:                 r.str("PYTHON_BIN", "/usr/bin/python3"),
		PythonBwrap:               r.str("PYTHON_BWRAP", "bwrap"),
		PythonAllowUnsandboxed:    r.bool("PYTHON_ALLOW_UNSANDBOXED"),
		PythonCPUTime:             r.durationIn("PYTHON_CPU_TIME", 60*time.Second, time.Second, MaxPythonCPUTime),
		PythonMemoryBytes:         int64(r.int("PYTHON_MEMORY_MB", 512, 64, 1<<16)) * mib,
		PythonFileBytes:           int64(r.int("PYTHON_FILE_MB", 64, 1, 1<<12)) * mib,
		PythonMaxProcesses:        r.int("PYTHON_MAX_PROCESSES", 32, 1, 4096),
		PythonCgroup:              r.str("PYTHON_CGROUP", ""),
		PythonAllowNoCgroup:       r.boolOr("PYTHON_ALLOW_NO_CGROUP", role == RoleDev),
		CSVMaxFileBytes:           int64(r.int("CSV_MAX_FILE_MB", 64, 1, 1<<12)) * mib,
		CSVCacheBytes:             int64(r.int("CSV_CACHE_MB", 256, 1, 1<<16)) * mib,
		OCRLanguages:              r.str("OCR_LANGUAGES", "eng"),
		DocumentRenderConcurrency: r.int("DOCUMENT_RENDER_CONCURRENCY", runtime.NumCPU(), 1, 1024),
		DocumentRenderWait:        r.durationIn("DOCUMENT_RENDER_WAIT", DefaultDocumentRenderWait, 100*time.Millisecond, MaxDocumentRenderWait),
		SQLStatementTimeout:       r.durationIn("SQL_STATEMENT_TIMEOUT", 30*time.Second, 100*time.Millisecond, MaxSQLStatementTimeout),
		SQLLockTimeout:            r.durationIn("SQL_LOCK_TIMEOUT", 5*time.Second, 10*time.Millisecond, MaxSQLStatementTimeout),
		SQLMaxConns:               r.int("SQL_MAX_CONNS", 4, 1, 100),
		TranslateURL:              r.url("TRANSLATE_URL", ""),
		TranslateAPIKey:           r.getenv("TRANSLATE_API_KEY"),
		ExtractionBaseURL:         r.url("EXTRACTION_BASE_URL", c.LLMBaseURL),
		ExtractionAPIKey:          r.str("EXTRACTION_API_KEY", c.LLMAPIKey),
		ExtractionModel:           r.str("EXTRACTION_MODEL", c.LLMModel),
	}
	if t.PythonCgroup != "" && !filepath.IsAbs(t.PythonCgroup) {
		r.fail("PYTHON_CGROUP", fmt.Sprintf("want an absolute path such as /sys/fs/cgroup/appruntime, got %q", t.PythonCgroup))
	}
	if !strings.HasPrefix(t.PythonBin, "/") {
		r.fail("PYTHON_BIN", fmt.Sprintf("want an absolute path such as /usr/bin/python3, got %q", t.PythonBin))
	}
	t.DocumentRenderShare = r.int("DOCUMENT_RENDER_SHARE", max(t.DocumentRenderConcurrency/2, 1), 1, 1024)
	if !ocrLanguages.MatchString(t.OCRLanguages) {
		r.fail("OCR_LANGUAGES", fmt.Sprintf("want tesseract's language names joined by +, such as eng or eng+deu, got %q", t.OCRLanguages))
	}
	if t.SQLLockTimeout > t.SQLStatementTimeout {
		r.fail("SQL_LOCK_TIMEOUT", fmt.Sprintf("%s is longer than SQL_STATEMENT_TIMEOUT (%s), which would end the wait first", t.SQLLockTimeout, t.SQLStatementTimeout))
	}
	return t
}

// ocrLanguages is what OCR_LANGUAGES may hold: tesseract's language names
// (each a Debian package tesseract-ocr-NAME) joined by "+".
var ocrLanguages = regexp.MustCompile(`^[a-z][a-z_]{1,30}(\+[a-z][a-z_]{1,30})*$`)

// Dialect names a SQL database family.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// ParseDatabaseURL splits a DATABASE_URL into its dialect and the DSN the
// driver takes. Postgres: postgres:// or postgresql://. SQLite: sqlite:PATH
// (sqlite:///abs/path and sqlite:relative/path).
func ParseDatabaseURL(raw string) (Dialect, string, error) {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("invalid postgres URL (want postgres://user@host:port/db)")
		}
		return Postgres, raw, nil
	case strings.HasPrefix(raw, "sqlite:"):
		path := strings.TrimPrefix(raw, "sqlite:")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return "", "", fmt.Errorf("sqlite URL names no file (want sqlite:PATH)")
		}
		return SQLite, path, nil
	default:
		return "", "", fmt.Errorf("unsupported scheme in %q (want postgres://… or sqlite:PATH)", redact(raw))
	}
}

// redact hides a password in a URL before it is put in a message.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// localURLHost turns a listen address into a host:port a local browser can use.
func localURLHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

type reader struct {
	getenv func(string) string
	errs   []error
}

func (r *reader) fail(name, reason string) {
	r.errs = append(r.errs, &Error{Var: name, Reason: reason})
}

func (r *reader) require(name string, ok bool) {
	if !ok {
		r.fail(name, "required but not set")
	}
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) addr(name, def string) string {
	v := r.str(name, def)
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		r.fail(name, fmt.Sprintf("invalid listen address %q (want host:port or :port)", v))
	}
	return v
}

// loopbackAddr reads a listen address that only this machine can reach:
// host:port whose host is a loopback IP or "localhost"; "" when unset.
func (r *reader) loopbackAddr(name string) string {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(v)
	if err == nil && port != "" && isLoopbackHost(host) {
		return v
	}
	r.fail(name, fmt.Sprintf("must be a loopback address such as 127.0.0.1:6060, got %q (the profiler must never be reachable from another machine)", v))
	return ""
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// optionalAddr reads a listen address that may be unset (off).
func (r *reader) optionalAddr(name string) string {
	if strings.TrimSpace(r.getenv(name)) == "" {
		return ""
	}
	return r.addr(name, "")
}

// checkMetricsAddr refuses a METRICS_ADDR that would share a listener with
// the role's public server: /metrics would then be public, or the process
// could not start.
func (r *reader) checkMetricsAddr(role Role, c *Config) {
	if c.MetricsAddr == "" {
		return
	}
	public := map[string]string{}
	switch role {
	case RoleAPI:
		public["API_ADDR"] = c.APIAddr
	case RoleConsole:
		public["CONSOLE_ADDR"] = c.ConsoleAddr
	case RoleDev:
		public["API_ADDR"], public["CONSOLE_ADDR"] = c.APIAddr, c.ConsoleAddr
	}
	for name, addr := range public {
		if sameListener(c.MetricsAddr, addr) {
			r.fail("METRICS_ADDR", fmt.Sprintf("%s is the %s listener: serve metrics on a private address of their own", c.MetricsAddr, name))
		}
	}
}

// sameListener reports whether two listen addresses would take the same
// port on a common interface (an empty or unspecified host is every one).
func sameListener(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return wildcard(ha) || wildcard(hb) || strings.EqualFold(ha, hb)
}

func (r *reader) url(name, def string) string {
	v := r.str(name, def)
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.fail(name, fmt.Sprintf("invalid URL %q (want http(s)://host[:port][/path])", v))
	}
	return strings.TrimRight(v, "/")
}

func (r *reader) int(name string, def, lo, hi int) int {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.fail(name, fmt.Sprintf("want a whole number from %d to %d, got %q", lo, hi, v))
		return def
	}
	return n
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		r.fail(name, fmt.Sprintf("want a duration such as 250ms or 10s, got %q", v))
		return def
	}
	return d
}

// durationIn reads a duration between lo and hi.
func (r *reader) durationIn(name string, def, lo, hi time.Duration) time.Duration {
	d := r.duration(name, def)
	if d < lo || d > hi {
		r.fail(name, fmt.Sprintf("want a duration from %s to %s, got %s", lo, hi, d))
		return def
	}
	return d
}

// bool reads true or false (also 1/0, yes/no); unset is false.
func (r *reader) bool(name string) bool { return r.boolOr(name, false) }

// boolOr reads true or false (also 1/0, yes/no); unset is def.
func (r *reader) boolOr(name string, def bool) bool {
	switch strings.ToLower(strings.TrimSpace(r.getenv(name))) {
	case "":
		return def
	case "false", "0", "no":
		return false
	case "true", "1", "yes":
		return true
	}
	r.fail(name, fmt.Sprintf("want true or false, got %q", r.getenv(name)))
	return false
}

// blobDir reads a directory path for blobs; "" when unset. Every process
// but dev must be given an absolute path: a relative one would name a
// different directory in each process's working directory. Whether the
// directory can be written is checked when the store opens it.
func (r *reader) blobDir(name string, role Role) string {
	v := strings.TrimSpace(r.getenv(name))
	switch {
	case v == "":
		return ""
	case strings.ContainsRune(v, 0):
		r.fail(name, "the path contains a NUL byte")
	case role != RoleDev && !filepath.IsAbs(v):
		r.fail(name, fmt.Sprintf("want an absolute path such as /var/lib/appruntime/blobs, got %q", v))
	case filepath.Clean(v) == "/":
		r.fail(name, "refusing the file system root: give a directory of its own")
	default:
		return filepath.Clean(v)
	}
	return ""
}

// keyPrefix reads a Redis key prefix: letters, digits, '_', '-', '.' and
// ':', ending with ':'.
func (r *reader) keyPrefix(name, def string) string {
	v := r.str(name, def)
	ok := strings.HasSuffix(v, ":") && len(v) <= 64
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-.:", c)) {
			ok = false
		}
	}
	if !ok {
		r.fail(name, fmt.Sprintf("want letters, digits, _ - . and : ending with ':' (at most 64), got %q", v))
		return def
	}
	return v
}

func (r *reader) level(name string) slog.Level {
	var l slog.Level
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return slog.LevelInfo
	}
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.fail(name, fmt.Sprintf("want debug, info, warn or error, got %q", v))
	}
	return l
}

func (r *reader) prefixes(name string) []netip.Prefix {
	var out []netip.Prefix
	for _, f := range strings.Split(r.getenv(name), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			r.fail(name, fmt.Sprintf("invalid CIDR %q", f))
			continue
		}
		out = append(out, p.Masked())
	}
	return out
}

// origins reads a comma-separated list of origins (scheme://host[:port],
// no path, query or user; https, or http on a loopback host for tests),
// each as written in a CSP source expression.
func (r *reader) origins(name string) []string {
	var out []string
	for _, f := range strings.Split(r.getenv(name), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		u, err := url.Parse(f)
		if err != nil {
			r.fail(name, fmt.Sprintf("invalid origin %q (want https://host[:port])", f))
			continue
		}
		ip, ipErr := netip.ParseAddr(u.Hostname())
		loopback := u.Hostname() == "localhost" || (ipErr == nil && ip.IsLoopback())
		if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" ||
			(u.Scheme != "https" && !(u.Scheme == "http" && loopback)) || strings.ContainsAny(u.Host, "*; '") {
			r.fail(name, fmt.Sprintf("invalid origin %q (want https://host[:port])", f))
			continue
		}
		out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	return out
}

// key reads a base64 key of at least MinKeyBytes bytes; nil when unset.
func (r *reader) key(name string) []byte {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return nil
	}
	b, err := decodeKey(v)
	if err != nil {
		r.fail(name, err.Error())
		return nil
	}
	return b
}

// keyRing reads "kid:base64key,kid2:base64key"; the first entry signs.
func (r *reader) keyRing(name string) []Key {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return nil
	}
	var ring []Key
	seen := map[string]bool{}
	for _, entry := range strings.Split(v, ",") {
		kid, secret, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok || kid == "" {
			r.fail(name, "want kid:base64key[,kid:base64key…]")
			return nil
		}
		if seen[kid] {
			r.fail(name, fmt.Sprintf("key id %q appears twice", kid))
			return nil
		}
		seen[kid] = true
		b, err := decodeKey(secret)
		if err != nil {
			r.fail(name, fmt.Sprintf("key %q: %v", kid, err))
			return nil
		}
		ring = append(ring, Key{ID: kid, Secret: b})
	}
	return ring
}

func decodeKey(v string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawURLEncoding.DecodeString(v)
	}
	if err != nil {
		return nil, fmt.Errorf("not valid base64")
	}
	if len(b) < MinKeyBytes {
		return nil, fmt.Errorf("key is %d bytes, want at least %d (openssl rand -base64 32)", len(b), MinKeyBytes)
	}
	return b, nil
}
