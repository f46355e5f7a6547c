package config_test

import (
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
)

var key32 = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func validAPI() map[string]string {
	return map[string]string{
		"DATABASE_URL": "postgres://u@127.0.0.1:5432/db",
		"REDIS_URL":    "redis://127.0.0.1:6379/0",
		"SECRETS_KEY":  key32,
		"SESSION_KEYS": "k1:" + key32,
	}
}

func TestLoadValidAPIConfig(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Equal(t, ":8080", c.APIAddr)
	require.Equal(t, "http://localhost:8080", c.PublicAPIURL)
	require.Equal(t, "http://localhost:8080/bundles", c.BundleBaseURL)
	require.Len(t, c.SessionKeys, 1)
	require.Equal(t, "k1", c.SessionKeys[0].ID)
}

func TestDataSourceAllowIsOffByDefaultAndApartFromOutbound(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Empty(t, c.DataSourceAllow, "data sources reach public addresses only unless configured")
	e := validAPI()
	e["DATASOURCE_ALLOW_CIDRS"] = "10.20.0.0/16, ::1/128"
	c, err = config.Load(config.RoleAPI, env(e))
	require.NoError(t, err)
	require.Equal(t, "[10.20.0.0/16 ::1/128]", fmt.Sprint(c.DataSourceAllow))
	require.Empty(t, c.OutboundAllow, "allowing a database subnet does not open http_calls to it")
}

func TestOperatorUserIDs(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleConsole, env(validConsole()))
	require.NoError(t, err)
	require.Empty(t, c.OperatorUserIDs, "no operator unless named")
	e := validConsole()
	e["OPERATOR_USER_IDS"] = " 0b6c3f9e-6d0a-4c38-9a51-3f3b5d3f0f7e, ,019a1c2e-0000-7000-8000-000000000001"
	c, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, []string{"0b6c3f9e-6d0a-4c38-9a51-3f3b5d3f0f7e", "019a1c2e-0000-7000-8000-000000000001"}, c.OperatorUserIDs)
}

func validConsole() map[string]string {
	e := validAPI()
	e["CONSOLE_SESSION_KEY"] = key32
	return e
}

func TestAssetFrameAncestors(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Empty(t, c.AssetFrameAncestors, "no integrator frames assets by default")
	e := validAPI()
	e["ASSET_FRAME_ANCESTORS"] = " https://Host.Example.com , https://app.example.org:8443/,http://127.0.0.1:9000"
	c, err = config.Load(config.RoleAPI, env(e))
	require.NoError(t, err)
	require.Equal(t, []string{"https://host.example.com", "https://app.example.org:8443", "http://127.0.0.1:9000"}, c.AssetFrameAncestors)
}

func TestRedisKeyPrefixAndOutboxRetention(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleWorker, env(validAPI()))
	require.NoError(t, err)
	require.Equal(t, config.DefaultRedisKeyPrefix, c.RedisKeyPrefix)
	require.Equal(t, config.DefaultOutboxRetention, c.OutboxRetention)

	e := validAPI()
	e["REDIS_KEY_PREFIX"] = "tenant-b:"
	e["OUTBOX_RETENTION"] = "48h"
	c, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, "tenant-b:", c.RedisKeyPrefix)
	require.Equal(t, 48*time.Hour, c.OutboxRetention)
}

func TestBadValuesNameTheVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, variable, value, want string
	}{
		{"redis scheme", "REDIS_URL", "http://localhost:6379", "REDIS_URL"},
		{"redis garbage", "REDIS_URL", "redis://:bad:port:x", "REDIS_URL"},
		{"sentinel without master", "REDIS_URL", "redis-sentinel://127.0.0.1:26379/0", "REDIS_URL"},
		{"sentinel without address", "REDIS_URL", "redis-sentinel:///0?master_name=m", "REDIS_URL"},
		{"cluster with a database", "REDIS_URL", "redis-cluster://127.0.0.1:7000/2", "REDIS_URL"},
		{"database scheme", "DATABASE_URL", "mysql://x", "DATABASE_URL"},
		{"short key", "SECRETS_KEY", base64.StdEncoding.EncodeToString([]byte("short")), "SECRETS_KEY"},
		{"key ring", "SESSION_KEYS", "nokid", "SESSION_KEYS"},
		{"duplicate kid", "SESSION_KEYS", "a:" + key32 + ",a:" + key32, "SESSION_KEYS"},
		{"listen address", "API_ADDR", "8080", "API_ADDR"},
		{"metrics address", "METRICS_ADDR", "9090", "METRICS_ADDR"},
		{"metrics on the API's port", "METRICS_ADDR", "127.0.0.1:8080", "METRICS_ADDR: 127.0.0.1:8080 is the API_ADDR listener"},
		{"cidr", "OUTBOUND_ALLOW_CIDRS", "127.0.0.1/99", "OUTBOUND_ALLOW_CIDRS"},
		{"data-source cidr", "DATASOURCE_ALLOW_CIDRS", "10.0.0.0/33", "DATASOURCE_ALLOW_CIDRS"},
		{"duration", "LOOKUP_WAIT", "soon", "LOOKUP_WAIT"},
		{"run wait", "RUN_WAIT", "soon", "RUN_WAIT"},
		{"run concurrency", "RUN_CONCURRENCY", "0", "RUN_CONCURRENCY"},
		{"operator email", "OPERATOR_USER_IDS", "ops@example.com", "OPERATOR_USER_IDS"},
		{"operator id in capitals", "OPERATOR_USER_IDS", "0B6C3F9E-6D0A-4C38-9A51-3F3B5D3F0F7E", "OPERATOR_USER_IDS"},
		{"number", "WORKER_CONCURRENCY", "0", "WORKER_CONCURRENCY"},
		{"public url", "PUBLIC_API_URL", "ftp://x", "PUBLIC_API_URL"},
		{"python path", "PYTHON_BIN", "python3", "PYTHON_BIN"},
		{"unsandboxed", "PYTHON_ALLOW_UNSANDBOXED", "maybe", "PYTHON_ALLOW_UNSANDBOXED"},
		{"cpu time", "PYTHON_CPU_TIME", "20m", "PYTHON_CPU_TIME"},
		{"memory", "PYTHON_MEMORY_MB", "8", "PYTHON_MEMORY_MB"},
		{"processes", "PYTHON_MAX_PROCESSES", "-1", "PYTHON_MAX_PROCESSES"},
		{"csv cache", "CSV_CACHE_MB", "lots", "CSV_CACHE_MB"},
		{"statement timeout", "SQL_STATEMENT_TIMEOUT", "2m", "SQL_STATEMENT_TIMEOUT"},
		{"lock over statement", "SQL_LOCK_TIMEOUT", "45s", "SQL_LOCK_TIMEOUT"},
		{"translate url", "TRANSLATE_URL", "libretranslate:5000", "TRANSLATE_URL"},
		{"extraction url", "EXTRACTION_BASE_URL", "ftp://model", "EXTRACTION_BASE_URL"},
		{"debug on every interface", "DEBUG_ADDR", ":6060", "DEBUG_ADDR: must be a loopback address"},
		{"debug on the wildcard", "DEBUG_ADDR", "0.0.0.0:6060", "DEBUG_ADDR: must be a loopback address"},
		{"debug on the IPv6 wildcard", "DEBUG_ADDR", "[::]:6060", "DEBUG_ADDR: must be a loopback address"},
		{"debug on a private address", "DEBUG_ADDR", "10.0.0.5:6060", "DEBUG_ADDR: must be a loopback address"},
		{"debug on a name", "DEBUG_ADDR", "debug.internal:6060", "DEBUG_ADDR: must be a loopback address"},
		{"debug without a port", "DEBUG_ADDR", "127.0.0.1", "DEBUG_ADDR: must be a loopback address"},
		{"key prefix without colon", "REDIS_KEY_PREFIX", "appruntime", "REDIS_KEY_PREFIX"},
		{"key prefix with a space", "REDIS_KEY_PREFIX", "app runtime:", "REDIS_KEY_PREFIX"},
		{"key prefix with a glob", "REDIS_KEY_PREFIX", "app*:", "REDIS_KEY_PREFIX"},
		{"outbox retention not a duration", "OUTBOX_RETENTION", "a week", "OUTBOX_RETENTION"},
		{"outbox retention under a day", "OUTBOX_RETENTION", "5h", "OUTBOX_RETENTION"},
		{"relative blob dir", "BLOB_DIR", "blobs", "BLOB_DIR: want an absolute path"},
		{"blob dir at the root", "BLOB_DIR", "/", "BLOB_DIR: refusing the file system root"},
		{"blob dir with NUL", "BLOB_DIR", "/var/\x00blobs", "BLOB_DIR: the path contains a NUL byte"},
		{"blob url not s3", "BLOB_URL", "https://bucket.example.com", "BLOB_URL: want s3://bucket"},
		{"presign without a bucket", "BLOB_PRESIGN", "true", "BLOB_PRESIGN: presigned downloads need an S3 bucket"},
		{"frame ancestor over http", "ASSET_FRAME_ANCESTORS", "http://host.example.com", "ASSET_FRAME_ANCESTORS"},
		{"frame ancestor with a path", "ASSET_FRAME_ANCESTORS", "https://host.example.com/app", "ASSET_FRAME_ANCESTORS"},
		{"frame ancestor wildcard", "ASSET_FRAME_ANCESTORS", "https://*.example.com", "ASSET_FRAME_ANCESTORS"},
		{"frame ancestor keyword", "ASSET_FRAME_ANCESTORS", "'self'", "ASSET_FRAME_ANCESTORS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := validAPI()
			e[tc.variable] = tc.value
			_, err := config.Load(config.RoleAPI, env(e))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestBlobURLWithBlobDir(t *testing.T) {
	t.Parallel()
	e := validAPI()
	e["BLOB_URL"] = "s3://blobs"
	c, err := config.Load(config.RoleAPI, env(e))
	require.NoError(t, err)
	require.Equal(t, "s3://blobs", c.BlobURL)
	require.False(t, c.BlobPresign)
	e["BLOB_PRESIGN"] = "true"
	c, err = config.Load(config.RoleAPI, env(e))
	require.NoError(t, err)
	require.True(t, c.BlobPresign)
	e["BLOB_DIR"] = "/srv/blobs"
	_, err = config.Load(config.RoleAPI, env(e))
	require.ErrorContains(t, err, "BLOB_URL: set BLOB_URL or BLOB_DIR, not both")
}

func TestBlobDir(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Empty(t, c.BlobDir, "unset: blobs stay in the platform database every replica shares")

	e := validAPI()
	e["BLOB_DIR"] = " /srv/appruntime//blobs/ "
	c, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, "/srv/appruntime/blobs", c.BlobDir)

	c, err = config.Load(config.RoleDev, env(map[string]string{"BLOB_DIR": "tmp/blobs"}))
	require.NoError(t, err, "dev runs in one process, so a relative directory names one place")
	require.Equal(t, "tmp/blobs", c.BlobDir)
}

func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Empty(t, c.MetricsAddr, "the metrics server is off unless configured")

	tests := []struct {
		name    string
		role    config.Role
		vars    map[string]string
		wantErr string
	}{
		{"a private port of its own", config.RoleAPI, map[string]string{"METRICS_ADDR": "127.0.0.1:9090"}, ""},
		{"every interface, another port", config.RoleAPI, map[string]string{"METRICS_ADDR": ":9090"}, ""},
		{"the API's port on another interface", config.RoleAPI, map[string]string{"API_ADDR": "10.0.0.5:8080", "METRICS_ADDR": "127.0.0.1:8080"}, ""},
		{"the API's listener", config.RoleAPI, map[string]string{"METRICS_ADDR": ":8080"}, "API_ADDR"},
		{"the API's port, API on every interface", config.RoleAPI, map[string]string{"API_ADDR": "0.0.0.0:8080", "METRICS_ADDR": "127.0.0.1:8080"}, "API_ADDR"},
		{"the console's listener", config.RoleConsole, map[string]string{"CONSOLE_SESSION_KEY": key32, "METRICS_ADDR": "localhost:8081", "CONSOLE_ADDR": "localhost:8081"}, "CONSOLE_ADDR"},
		{"dev checks both", config.RoleDev, map[string]string{"METRICS_ADDR": ":8081"}, "CONSOLE_ADDR"},
		{"the worker has no public listener", config.RoleWorker, map[string]string{"METRICS_ADDR": ":8080"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := validAPI()
			for k, v := range tc.vars {
				e[k] = v
			}
			c, err := config.Load(tc.role, env(e))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, "METRICS_ADDR")
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.vars["METRICS_ADDR"], c.MetricsAddr)
		})
	}
}

func TestRequiredVariablesPerRole(t *testing.T) {
	t.Parallel()
	_, err := config.Load(config.RoleAPI, env(map[string]string{}))
	require.Error(t, err)
	for _, v := range []string{"DATABASE_URL", "REDIS_URL", "SECRETS_KEY", "SESSION_KEYS"} {
		require.Contains(t, err.Error(), v)
	}
	_, err = config.Load(config.RoleMigrate, env(map[string]string{"DATABASE_URL": "sqlite:x.db"}))
	require.NoError(t, err, "migrate needs only the database")

	_, err = config.Load(config.RoleConsole, env(validAPI()))
	require.ErrorContains(t, err, "CONSOLE_SESSION_KEY")

	// The console mints app sessions too (its artifact page).
	console := validAPI()
	console["CONSOLE_SESSION_KEY"] = key32
	_, err = config.Load(config.RoleConsole, env(console))
	require.NoError(t, err)
	delete(console, "SESSION_KEYS")
	_, err = config.Load(config.RoleConsole, env(console))
	require.ErrorContains(t, err, "SESSION_KEYS")
	_, err = config.Load(config.RoleWorker, env(console))
	require.NoError(t, err, "the worker mints nothing")

	c, err := config.Load(config.RoleDev, env(map[string]string{}))
	require.NoError(t, err, "dev fills everything with embedded defaults")
	require.Empty(t, c.RedisURL)
}

func TestQueueServers(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleWorker, env(validAPI()))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"lookup": 4, "extract": 1, "script": 1, "events": 1}, c.QueueServers)
	require.Equal(t, config.DefaultTaskCheckInterval, c.TaskCheckInterval)
	// The demo polls its in-process Redis less: one server a class, 50 ms.
	dev, err := config.Load(config.RoleDev, env(map[string]string{}))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"lookup": 1, "extract": 1, "script": 1, "events": 1}, dev.QueueServers)
	require.Equal(t, config.DevTaskCheckInterval, dev.TaskCheckInterval)
	dev, err = config.Load(config.RoleDev, env(map[string]string{"WORKER_SERVERS_LOOKUP": "3", "WORKER_TASK_CHECK_INTERVAL": "5ms"}))
	require.NoError(t, err)
	require.Equal(t, 3, dev.QueueServers["lookup"])
	require.Equal(t, 5*time.Millisecond, dev.TaskCheckInterval)
	e := validAPI()
	e["WORKER_SERVERS_EVENTS"] = "2"
	c, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, 2, c.QueueServers["events"])
	for _, bad := range []string{"0", "65", "x"} {
		e["WORKER_SERVERS_EVENTS"] = bad
		_, err = config.Load(config.RoleWorker, env(e))
		require.ErrorContains(t, err, "WORKER_SERVERS_EVENTS", bad)
	}
}

func TestQueueShares(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"lookup": 5, "extract": 5, "script": 5}, c.QueueShares, "half of WORKER_CONCURRENCY's 10")
	require.Equal(t, config.DefaultQueueShareWait, c.QueueShareWait)
	e := validAPI()
	e["WORKER_CONCURRENCY_SCRIPT"] = "1"
	e["WORKER_CONCURRENCY_LOOKUP"] = "40"
	e["WORKER_SHARE_EXTRACT"] = "3"
	e["WORKER_SHARE_WAIT"] = "250ms"
	c, err = config.Load(config.RoleAPI, env(e))
	require.NoError(t, err)
	require.Equal(t, map[string]int{"lookup": 20, "extract": 3, "script": 1}, c.QueueShares, "at least 1")
	require.Equal(t, 250*time.Millisecond, c.QueueShareWait)
	for name, bad := range map[string]string{"WORKER_SHARE_SCRIPT": "0", "WORKER_SHARE_LOOKUP": "x", "WORKER_SHARE_WAIT": "2m"} {
		e := validAPI()
		e[name] = bad
		_, err = config.Load(config.RoleAPI, env(e))
		require.ErrorContains(t, err, name, bad)
	}
}

func TestToolSettings(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Equal(t, config.Tools{
		PythonBin: "/usr/bin/python3", PythonBwrap: "bwrap", PythonCPUTime: time.Minute,
		PythonMemoryBytes: 512 << 20, PythonFileBytes: 64 << 20, PythonMaxProcesses: 32,
		CSVMaxFileBytes: 64 << 20, CSVCacheBytes: 256 << 20, OCRLanguages: "eng",
		SQLStatementTimeout: 30 * time.Second, SQLLockTimeout: 5 * time.Second, SQLMaxConns: 4,
		ExtractionModel:           "gpt-4o-mini",
		DocumentRenderConcurrency: runtime.NumCPU(), DocumentRenderShare: max(runtime.NumCPU()/2, 1),
		DocumentRenderWait: config.DefaultDocumentRenderWait,
	}, c.Tools, "the defaults: no translation engine, no extraction model")

	e := validAPI()
	e["LLM_BASE_URL"], e["LLM_API_KEY"], e["LLM_MODEL"] = "https://llm.example/v1", "sk-1", "small"
	e["PYTHON_ALLOW_UNSANDBOXED"], e["PYTHON_CPU_TIME"], e["PYTHON_MEMORY_MB"] = "true", "5m", "1024"
	e["TRANSLATE_URL"], e["TRANSLATE_API_KEY"] = "https://translate.example/", "lt-1"
	e["SQL_STATEMENT_TIMEOUT"], e["SQL_LOCK_TIMEOUT"] = "10s", "10s"
	c, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.True(t, c.Tools.PythonAllowUnsandboxed)
	require.Equal(t, 5*time.Minute, c.Tools.PythonCPUTime)
	require.EqualValues(t, 1<<30, c.Tools.PythonMemoryBytes)
	require.False(t, c.Tools.PythonAllowNoCgroup, "only dev runs scripts without a memory cgroup by default")
	require.Equal(t, "https://translate.example", c.Tools.TranslateURL)
	require.Equal(t, "lt-1", c.Tools.TranslateAPIKey)
	require.Equal(t, 10*time.Second, c.Tools.SQLLockTimeout)
	require.Equal(t, []string{"https://llm.example/v1", "sk-1", "small"},
		[]string{c.Tools.ExtractionBaseURL, c.Tools.ExtractionAPIKey, c.Tools.ExtractionModel}, "extraction defaults to the LLM settings")

	e["PYTHON_CGROUP"], e["PYTHON_ALLOW_NO_CGROUP"] = "/sys/fs/cgroup/appruntime", "true"
	c2, err := config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, "/sys/fs/cgroup/appruntime", c2.Tools.PythonCgroup)
	require.True(t, c2.Tools.PythonAllowNoCgroup)
	e["PYTHON_CGROUP"] = "relative"
	_, err = config.Load(config.RoleWorker, env(e))
	require.ErrorContains(t, err, "PYTHON_CGROUP")
	delete(e, "PYTHON_CGROUP")
	delete(e, "PYTHON_ALLOW_NO_CGROUP")
	require.Equal(t, "eng", c2.Tools.OCRLanguages)
	e["OCR_LANGUAGES"] = "eng+deu"
	c2, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, "eng+deu", c2.Tools.OCRLanguages)
	e["OCR_LANGUAGES"] = "eng;rm -rf"
	_, err = config.Load(config.RoleWorker, env(e))
	require.ErrorContains(t, err, "OCR_LANGUAGES")
	delete(e, "OCR_LANGUAGES")
	e["DOCUMENT_RENDER_CONCURRENCY"], e["DOCUMENT_RENDER_WAIT"] = "8", "2s"
	c2, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, []any{8, 4, 2 * time.Second}, []any{c2.Tools.DocumentRenderConcurrency, c2.Tools.DocumentRenderShare, c2.Tools.DocumentRenderWait},
		"the share defaults to half the process's renderings")
	e["DOCUMENT_RENDER_SHARE"], e["DOCUMENT_RENDER_WAIT"] = "0", "1m"
	_, err = config.Load(config.RoleWorker, env(e))
	require.ErrorContains(t, err, "DOCUMENT_RENDER_SHARE")
	require.ErrorContains(t, err, "DOCUMENT_RENDER_WAIT")
	delete(e, "DOCUMENT_RENDER_CONCURRENCY")
	delete(e, "DOCUMENT_RENDER_SHARE")
	delete(e, "DOCUMENT_RENDER_WAIT")
	c2, err = config.Load(config.RoleDev, env(map[string]string{}))
	require.NoError(t, err)
	require.True(t, c2.Tools.PythonAllowNoCgroup, "dev runs scripts without a memory cgroup where none works")

	e["EXTRACTION_BASE_URL"], e["EXTRACTION_MODEL"] = "https://vision.example/v1", "vision"
	c, err = config.Load(config.RoleWorker, env(e))
	require.NoError(t, err)
	require.Equal(t, []string{"https://vision.example/v1", "sk-1", "vision"},
		[]string{c.Tools.ExtractionBaseURL, c.Tools.ExtractionAPIKey, c.Tools.ExtractionModel})
}

func TestParseDatabaseURL(t *testing.T) {
	t.Parallel()
	d, dsn, err := config.ParseDatabaseURL("sqlite:.appruntime/dev.db")
	require.NoError(t, err)
	require.Equal(t, config.SQLite, d)
	require.Equal(t, ".appruntime/dev.db", dsn)
	d, _, err = config.ParseDatabaseURL("postgresql://u:secret@h/db")
	require.NoError(t, err)
	require.Equal(t, config.Postgres, d)
	_, _, err = config.ParseDatabaseURL("oracle://u:secret@h/db")
	require.Error(t, err)
	require.False(t, strings.Contains(err.Error(), "secret"), "a password never appears in a message")
}

func TestDebugAddrOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:6060", "127.0.0.2:6060", "[::1]:6060", "localhost:6060"} {
		e := validAPI()
		e["DEBUG_ADDR"] = addr
		c, err := config.Load(config.RoleAPI, env(e))
		require.NoError(t, err, addr)
		require.Equal(t, addr, c.DebugAddr)
	}
	c, err := config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Empty(t, c.DebugAddr, "no profiler unless asked")
}

func TestDevListensOnLoopbackUnlessToldOtherwise(t *testing.T) {
	t.Parallel()
	c, err := config.Load(config.RoleDev, env(map[string]string{}))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.APIAddr)
	require.Equal(t, "127.0.0.1:8081", c.ConsoleAddr)
	require.Equal(t, "http://127.0.0.1:8080", c.PublicAPIURL)
	require.Equal(t, "http://127.0.0.1:8081", c.ConsoleURL)

	c, err = config.Load(config.RoleDev, env(map[string]string{"API_ADDR": ":9000", "CONSOLE_ADDR": "0.0.0.0:9001"}))
	require.NoError(t, err)
	require.Equal(t, ":9000", c.APIAddr, "told otherwise")
	require.Equal(t, "0.0.0.0:9001", c.ConsoleAddr)

	c, err = config.Load(config.RoleAPI, env(validAPI()))
	require.NoError(t, err)
	require.Equal(t, ":8080", c.APIAddr, "the production processes listen on every interface")
}
