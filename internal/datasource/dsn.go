package datasource

import (
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// DefaultPostgresPort is the port of a data-source DSN that names none.
const DefaultPostgresPort = 5432

// DSNParams are the query parameters a Postgres data-source DSN may carry.
// Every other one is refused: libpq and pgx read files on this host for
// some (passfile, service, servicefile, sslkey, sslcert, sslrootcert),
// reroute the connection with others (host, hostaddr, port, dbname, user,
// which would override the URL's own parts, for example with a unix
// socket's directory), and new ones keep being added; an allow-list fails
// closed.
var DSNParams = []string{
	"application_name", "connect_timeout", "search_path", "sslmode", "statement_timeout",
	"pool_max_conns", "pool_min_conns", "pool_max_conn_lifetime", "pool_max_conn_idle_time",
}

// sslModes are the sslmode values libpq defines.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// hostNamePattern is a DNS name: dot-separated labels of letters, digits and
// hyphens, optionally ending in a dot.
var hostNamePattern = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)

// postgresDSN is a data-source DSN that passed CheckPostgresDSN.
type postgresDSN struct {
	host     string // a DNS name or an IP address, never a path
	port     uint16
	database string
	user     string
	password string
	params   url.Values // DSNParams only, one value each
}

// CheckPostgresDSN checks a Postgres data-source DSN against the rules every
// connection to a customer database keeps: the URL form
// postgres://user[:password]@host[:port]/database, exactly one host that is
// a DNS name or an IP address (no unix socket directory, no host list), a
// user and a database named, and query parameters from DSNParams only. The
// address the host resolves to is checked later, at each dial. Refusals are
// apperr.Invalid and never quote the password.
func CheckPostgresDSN(dsn string) error {
	_, err := parsePostgresDSN(dsn)
	return err
}

func parsePostgresDSN(dsn string) (postgresDSN, error) {
	var d postgresDSN
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return d, apperr.Invalidf("a Postgres data source's dsn must be a URL: postgres://user:password@host:port/database")
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Opaque != "" || u.Fragment != "" {
		// The parse error may quote the DSN, password included: keep it out.
		return d, apperr.Invalidf("the DSN is not a valid Postgres connection string")
	}
	d.host = u.Hostname()
	switch {
	case d.host == "":
		return d, apperr.Invalidf("the DSN must name a host (unix sockets are not allowed)")
	case strings.Contains(u.Host, ","):
		return d, apperr.Invalidf("the DSN must name one host, not a list")
	}
	if addr, err := netip.ParseAddr(d.host); err == nil {
		if addr.Zone() != "" {
			return d, apperr.Invalidf("the DSN's host must not carry an IPv6 zone")
		}
	} else if !hostNamePattern.MatchString(d.host) || len(d.host) > 253 {
		return d, apperr.Invalidf("the DSN's host must be a DNS name or an IP address")
	}
	d.port = DefaultPostgresPort
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return d, apperr.Invalidf("the DSN's port must be a number from 1 to 65535")
		}
		d.port = uint16(n)
	}
	if u.User == nil || u.User.Username() == "" {
		return d, apperr.Invalidf("the DSN must name a user (postgres://user:password@host/database)")
	}
	d.user = u.User.Username()
	d.password, _ = u.User.Password()
	d.database = strings.TrimPrefix(u.Path, "/")
	if d.database == "" || strings.Contains(d.database, "/") {
		return d, apperr.Invalidf("the DSN must name one database (postgres://user:password@host/database)")
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return d, apperr.Invalidf("the DSN's query string is not valid")
	}
	for _, k := range sortedKeys(query) {
		if !slices.Contains(DSNParams, k) {
			return d, apperr.Invalidf("DSN parameter %q is not allowed for a data source (allowed: %s)", k, strings.Join(DSNParams, ", "))
		}
		if len(query[k]) != 1 {
			return d, apperr.Invalidf("DSN parameter %q is given more than once", k)
		}
	}
	if mode := query.Get("sslmode"); query.Has("sslmode") && !slices.Contains(sslModes, mode) {
		return d, apperr.Invalidf("DSN parameter sslmode must be one of %s", strings.Join(sslModes, ", "))
	}
	d.params = query
	return d, nil
}

// connString is d as the connection string pgx parses. It names every file
// setting empty, so that nothing of this host's own Postgres client set-up
// (~/.pgpass, ~/.postgresql's client certificate, PGPASSWORD, PGSSLMODE…)
// is used for a customer's database: what connects is what the DSN says.
func (d postgresDSN) connString() string {
	q := url.Values{}
	for k, v := range d.params {
		q[k] = v
	}
	if !q.Has("sslmode") {
		q.Set("sslmode", "prefer") // libpq's default, whatever PGSSLMODE says
	}
	if !q.Has("connect_timeout") {
		q.Set("connect_timeout", strconv.Itoa(int(ConnectTimeout.Seconds())))
	}
	for _, file := range []string{"passfile", "sslcert", "sslkey", "sslrootcert", "sslpassword"} {
		q.Set(file, "")
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(d.user, d.password),
		Host:     net.JoinHostPort(d.host, strconv.Itoa(int(d.port))),
		Path:     "/" + d.database,
		RawQuery: q.Encode(),
	}
	return u.String()
}

func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
