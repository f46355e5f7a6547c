package config_test

import (
	"encoding/base64"
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
		{"database scheme", "DATABASE_URL", "mysql://x", "DATABASE_URL"},
		{"short key", "SECRETS_KEY", base64.StdEncoding.EncodeToString([]byte("short")), "SECRETS_KEY"},
		{"key ring", "SESSION_KEYS", "nokid", "SESSION_KEYS"},
		{"duplicate kid", "SESSION_KEYS", "a:" + key32 + ",a:" + key32, "SESSION_KEYS"},
		{"listen address", "API_ADDR", "8080", "API_ADDR"},
		{"cidr", "OUTBOUND_ALLOW_CIDRS", "127.0.0.1/99", "OUTBOUND_ALLOW_CIDRS"},
		{"duration", "LOOKUP_WAIT", "soon", "LOOKUP_WAIT"},
		{"number", "WORKER_CONCURRENCY", "0", "WORKER_CONCURRENCY"},
		{"public url", "PUBLIC_API_URL", "ftp://x", "PUBLIC_API_URL"},
		{"key prefix without colon", "REDIS_KEY_PREFIX", "appruntime", "REDIS_KEY_PREFIX"},
		{"key prefix with a space", "REDIS_KEY_PREFIX", "app runtime:", "REDIS_KEY_PREFIX"},
		{"key prefix with a glob", "REDIS_KEY_PREFIX", "app*:", "REDIS_KEY_PREFIX"},
		{"outbox retention not a duration", "OUTBOX_RETENTION", "a week", "OUTBOX_RETENTION"},
		{"outbox retention under a day", "OUTBOX_RETENTION", "5h", "OUTBOX_RETENTION"},
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

	c, err := config.Load(config.RoleDev, env(map[string]string{}))
	require.NoError(t, err, "dev fills everything with embedded defaults")
	require.Empty(t, c.RedisURL)
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
