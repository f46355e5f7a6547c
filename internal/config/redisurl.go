package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisTarget is the Redis deployment REDIS_URL names: one server
// (redis://, rediss://) or a master watched by Sentinels
// (redis-sentinel://). Exactly one of Simple and Failover is set.
// See docs/operators.md#redis-sentinel-and-cluster.
type RedisTarget struct {
	Simple   *redis.Options
	Failover *redis.FailoverOptions
}

// Describe names the target for an error message, without passwords.
func (t RedisTarget) Describe() string {
	if t.Failover != nil {
		return fmt.Sprintf("master %q through sentinels %s", t.Failover.MasterName, strings.Join(t.Failover.SentinelAddrs, ","))
	}
	return t.Simple.Addr
}

// ParseRedisURL reads REDIS_URL:
//
//	redis://[:password@]host:6379[/db]
//	redis-sentinel://[:password@]host1:26379,host2:26379,host3:26379[/db]?master_name=NAME[&sentinel_password=P]
//
// In the Sentinel form the password is the master's (and the replicas');
// sentinel_password, when the Sentinels ask for one, is theirs.
func ParseRedisURL(s string) (RedisTarget, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return RedisTarget{}, fmt.Errorf("no scheme (want redis://host:6379/0 or redis-sentinel://h1:26379,h2:26379/0?master_name=NAME)")
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
	default:
		return RedisTarget{}, fmt.Errorf("unknown scheme %q (want redis://, rediss:// or redis-sentinel://)", scheme)
	}
}

// parseSentinelURL reads what follows redis-sentinel://.
func parseSentinelURL(rest string) (RedisTarget, error) {
	authority, pathQuery := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, pathQuery = rest[:i], rest[i:]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i], authority[i+1:]
	}
	// Parse the rest with one stand-in host, so that url does the
	// unescaping of the password, the db and the query.
	if userinfo != "" {
		userinfo += "@"
	}
	u, err := url.Parse("redis://" + userinfo + "sentinel" + pathQuery)
	if err != nil {
		return RedisTarget{}, fmt.Errorf("%v (want redis-sentinel://[:password@]h1:26379,h2:26379[/db]?master_name=NAME)", err)
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "26379")
		}
		addrs = append(addrs, h)
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
