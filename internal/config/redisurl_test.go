package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
)

func TestRedisURLSentinelAndClusterForms(t *testing.T) {
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

	tg, err = config.ParseRedisURL("redis-cluster://:p%40ss@10.0.0.1:7000,10.0.0.2,[::1]:7002?dial_timeout=2s")
	require.NoError(t, err)
	require.Nil(t, tg.Simple)
	require.Nil(t, tg.Failover)
	c := tg.Cluster
	require.Equal(t, []string{"10.0.0.1:7000", "10.0.0.2:6379", "[::1]:7002"}, c.Addrs)
	require.Equal(t, "p@ss", c.Password)
	require.Equal(t, "2s", c.DialTimeout.String())
	require.NotContains(t, tg.Describe(), "p@ss")
	_, err = config.ParseRedisURL("redis-cluster://10.0.0.1:7000/0")
	require.NoError(t, err)

	for _, bad := range []string{
		"redis-sentinel://h1:26379/0",                       // no master name
		"redis-sentinel:///0?master_name=m",                 // no sentinel
		"redis-sentinel://h1:26379/x?master_name=m",         // bad db
		"redis-sentinel://h1:26379/0?master_name=m&bogus=1", // unknown option
		"redis-cluster:///?dial_timeout=1s",                 // no seed
		"redis-cluster://h1:7000/3",                         // a cluster has db 0 only
		"redis-cluster://h1:7000?bogus=1",                   // unknown option
		"h1:6379",                                           // no scheme
	} {
		_, err := config.ParseRedisURL(bad)
		require.Error(t, err, bad)
	}
}
