package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisTarget is the Redis deployment REDIS_URL names: one server
// (redis://, rediss://), a master watched by Sentinels
// (redis-sentinel://) or a Redis Cluster (redis-cluster://). Exactly one
// of Simple, Failover and Cluster is set.
// See docs/operators.md#redis-sentinel-and-cluster.
type RedisTarget struct {
	Simple   *redis.Options
	Failover *redis.FailoverOptions
	Cluster  *redis.ClusterOptions
}

// Describe names the target for an error message, without passwords.
func (t RedisTarget) Describe() string {
	switch {
	case t.Failover != nil:
		return fmt.Sprintf("master %q through sentinels %s", t.Failover.MasterName, strings.Join(t.Failover.SentinelAddrs, ","))
	case t.Cluster != nil:
		return "cluster through seeds " + strings.Join(t.Cluster.Addrs, ",")
	}
	return t.Simple.Addr
}

// ParseRedisURL reads REDIS_URL:
//
//	redis://[:password@]host:6379[/db]
//	redis-sentinel://[:password@]host1:26379,host2:26379,host3:26379[/db]?master_name=NAME[&sentinel_password=P]
//	redis-cluster://[:password@]host1:6379,host2:6379,host3:6379[?option=value…]
//
// In the Sentinel form the password is the master's (and the replicas');
// sentinel_password, when the Sentinels ask for one, is theirs. In the
// Cluster form the hosts are seeds (any few of the cluster's nodes: the
// client learns the rest from them) and the only database is 0.
func ParseRedisURL(s string) (RedisTarget, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return RedisTarget{}, fmt.Errorf("no scheme (want redis://host:6379/0, redis-sentinel://h1:26379,h2:26379/0?master_name=NAME or redis-cluster://h1:6379,h2:6379)")
	}
	switch scheme {
	case "redis", "rediss", "unix":
		opts, err := redis.ParseURL(s)
		if err != nil {
			return RedisTarget{}, fmt.Errorf("%v (want redis://[:password@]host:port[/db])", err)
		}
		return RedisTarget{Simple: opts}, nil
	case "redis-sentinel":
		return parseSentinelURL(rest)
	case "redis-cluster":
		return parseClusterURL(rest)
	default:
		return RedisTarget{}, fmt.Errorf("unknown scheme %q (want redis://, rediss://, redis-sentinel:// or redis-cluster://)", scheme)
	}
}

// multiHost is a URL naming several hosts (redis-sentinel://,
// redis-cluster://): its addresses, and the rest parsed as a redis:// URL
// on one stand-in host, so that url does the unescaping of the password,
// the db and the query.
func multiHost(rest, defaultPort string) ([]string, *url.URL, error) {
	authority, pathQuery := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, pathQuery = rest[:i], rest[i:]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i]+"@", authority[i+1:]
	}
	u, err := url.Parse("redis://" + userinfo + "stand-in" + pathQuery)
	if err != nil {
		return nil, nil, err
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, defaultPort)
		}
		addrs = append(addrs, h)
	}
	return addrs, u, nil
}

// parseClusterURL reads what follows redis-cluster://.
func parseClusterURL(rest string) (RedisTarget, error) {
	const want = "want redis-cluster://[:password@]h1:6379,h2:6379,h3:6379"
	addrs, u, err := multiHost(rest, "6379")
	if err != nil {
		return RedisTarget{}, fmt.Errorf("%v (%s)", err, want)
	}
	if len(addrs) == 0 {
		return RedisTarget{}, fmt.Errorf("no seed address (%s)", want)
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return RedisTarget{}, fmt.Errorf("a cluster has database 0 only, not %q (%s)", db, want)
	}
	u.Path = ""
	u.Host = addrs[0]
	q := u.Query()
	q.Del("addr")
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u.RawQuery = q.Encode()
	opts, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return RedisTarget{}, fmt.Errorf("%v (%s)", err, want)
	}
	return RedisTarget{Cluster: opts}, nil
}

// parseSentinelURL reads what follows redis-sentinel://.
func parseSentinelURL(rest string) (RedisTarget, error) {
	addrs, u, err := multiHost(rest, "26379")
	if err != nil {
		return RedisTarget{}, fmt.Errorf("%v (want redis-sentinel://[:password@]h1:26379,h2:26379[/db]?master_name=NAME)", err)
	}
	if len(addrs) == 0 {
		return RedisTarget{}, fmt.Errorf("no sentinel address (want redis-sentinel://h1:26379,h2:26379[/db]?master_name=NAME)")
	}
	q := u.Query()
	master := q.Get("master_name")
	if master == "" {
		return RedisTarget{}, fmt.Errorf("master_name is missing (want redis-sentinel://h1:26379,h2:26379[/db]?master_name=NAME)")
	}
	sentinelPassword := q.Get("sentinel_password")
	q.Del("sentinel_password")
	// go-redis reads the sentinels' credentials from the userinfo and
	// the master's from ?username= and ?password=.
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			q.Set("password", p)
		}
		if name := u.User.Username(); name != "" {
			q.Set("username", name)
		}
	}
	u.User = nil
	if sentinelPassword != "" {
		u.User = url.UserPassword("", sentinelPassword)
	}
	u.Host = addrs[0]
	q.Del("addr")
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u.RawQuery = q.Encode()
	opts, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return RedisTarget{}, fmt.Errorf("%v (want redis-sentinel://[:password@]h1:26379,h2:26379[/db]?master_name=NAME)", err)
	}
	return RedisTarget{Failover: opts}, nil
}
