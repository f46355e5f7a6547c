package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
)

func TestRedisURLSentinelForm(t *testing.T) {
	t.Parallel()
	tg, err := config.ParseRedisURL("redis-sentinel://:m%40ster@10.0.0.1:26379,10.0.0.2,10.0.0.3:26380/2?master_name=mymaster&sentinel_password=s3&dial_timeout=2s")
	require.NoError(t, err)
	require.Nil(t, tg.Simple)
	f := tg.Failover
	require.Equal(t, "mymaster", f.MasterName)
	require.Equal(t, []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26380"}, f.SentinelAddrs)
	require.Equal(t, "m@ster", f.Password)
	require.Equal(t, "s3", f.SentinelPassword)
	require.Equal(t, 2, f.DB)
	require.Equal(t, "2s", f.DialTimeout.String())
	require.NotContains(t, tg.Describe(), "m@ster")

	tg, err = config.ParseRedisURL("redis://:pw@127.0.0.1:6379/1")
	require.NoError(t, err)
	require.Nil(t, tg.Failover)
	require.Equal(t, "127.0.0.1:6379", tg.Simple.Addr)
	require.Equal(t, 1, tg.Simple.DB)

	for _, bad := range []string{
		"redis-sentinel://h1:26379/0",                       // no master name
		"redis-sentinel:///0?master_name=m",                 // no sentinel
		"redis-sentinel://h1:26379/x?master_name=m",         // bad db
		"redis-sentinel://h1:26379/0?master_name=m&bogus=1", // unknown option
		"redis-cluster://h1:7000",                           // not a form REDIS_URL takes
		"h1:6379",                                           // no scheme
	} {
		_, err := config.ParseRedisURL(bad)
		require.Error(t, err, bad)
	}
}
