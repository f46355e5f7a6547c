package console_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/console"
	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/models"
)

// forgeCookie signs a session cookie the way the console does (with
// testkit.TestKey, the tests' CONSOLE_SESSION_KEY), so tests can present
// expired or tampered sessions.
func forgeCookie(sid, userID, workspaceID string, expires time.Time) string {
	raw, _ := json.Marshal(map[string]any{"sid": sid, "uid": userID, "ws": workspaceID, "exp": expires.Unix()})
	payload := base64.RawURLEncoding.EncodeToString(raw)
	m := hmac.New(sha256.New, testkit.TestKey)
	m.Write([]byte("appruntime console cookie v1\x00" + payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// sessionCookie returns the value of the console cookie in a reply's Set-Cookie.
func sessionCookie(t *testing.T, p page) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: p.Header}).Cookies() {
		if c.Name == console.CookieName {
			return c
		}
	}
	return nil
}

// getWithCookie fetches path presenting only the given cookie value.
func getWithCookie(t *testing.T, c *testConsole, path, value string) page {
	t.Helper()
	cl := c.client(t)
	req, err := http.NewRequest(http.MethodGet, c.URL+path, nil)
	require.NoError(t, err)
	if value != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: value})
	}
	return cl.do(req)
}

func TestPagesNeedASignedInAdmin(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	ws, admin := c.Tenant.Workspace.ID, c.Tenant.Admin.ID
	valid := forgeCookie("sid-valid", admin, ws, time.Now().Add(time.Hour))
	payload, sig, _ := strings.Cut(valid, ".")
	flipped := "A"
	if sig[0] == 'A' {
		flipped = "B"
	}
	tampered := payload + "." + flipped + sig[1:]
	otherPayload, _, _ := strings.Cut(forgeCookie("sid-valid", models.NewID(), ws, time.Now().Add(time.Hour)), ".")

	for _, tc := range []struct {
		name   string
		cookie string
	}{
		{"no cookie", ""},
		{"garbage", "not-a-cookie"},
		{"tampered signature", tampered},
		{"another payload under this signature", otherPayload + "." + sig},
		{"expired", forgeCookie("sid-old", admin, ws, time.Now().Add(-time.Minute))},
		{"signed with another key", payload + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))},
		{"anonymous session (not signed in)", forgeCookie("sid-anon", "", "", time.Now().Add(time.Hour))},
		{"user of no workspace", forgeCookie("sid-ghost", models.NewID(), ws, time.Now().Add(time.Hour))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := getWithCookie(t, c, "/bindings?x=1", tc.cookie)
			require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
			require.Equal(t, "/login?next="+url.QueryEscape("/bindings?x=1"), p.Header.Get("Location"))
		})
	}

	// The same forged cookie, valid, is let in: the refusals above are about
	// what was wrong with each, not about forging.
	p := getWithCookie(t, c, "/bindings", valid)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "<h1>Bindings</h1>")
}

func TestLogin(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)

	t.Run("admin signs in and is sent where they were going", func(t *testing.T) {
		t.Parallel()
		cl := c.client(t)
		p := cl.get("/tasks")
		require.Equal(t, http.StatusSeeOther, p.Status)
		p = cl.get(p.Header.Get("Location"))
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, `name="next" value="/tasks"`)
		p = cl.post("/login", url.Values{"email": {strings.ToUpper(c.Tenant.Admin.Email)}, "password": {testPassword}, "next": {"/tasks"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/tasks", p.Header.Get("Location"))
		ck := sessionCookie(t, p)
		require.NotNil(t, ck)
		require.True(t, ck.HttpOnly)
		require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
		require.False(t, ck.Secure, "the console is served over http here")
		require.WithinDuration(t, time.Now().Add(console.SessionTTL), ck.Expires, time.Minute)
		p = cl.get("/tasks")
		require.Equal(t, http.StatusOK, p.Status)
		require.Contains(t, p.Body, c.Tenant.Admin.Email)
	})

	t.Run("an off-site next is ignored", func(t *testing.T) {
		t.Parallel()
		for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"} {
			cl := c.client(t)
			cl.get("/login")
			p := cl.post("/login", url.Values{"email": {c.Tenant.Admin.Email}, "password": {testPassword}, "next": {next}})
			require.Equal(t, http.StatusSeeOther, p.Status, next)
			require.Equal(t, "/", p.Header.Get("Location"), next)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, email, password string
			status                int
			message               string
		}{
			{"wrong password", c.Tenant.Admin.Email, "not the password", http.StatusUnauthorized, "Wrong email or password."},
			{"unknown email", "nobody@example.test", testPassword, http.StatusUnauthorized, "Wrong email or password."},
			{"empty form", "", "", http.StatusUnauthorized, "Wrong email or password."},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cl := c.client(t)
				cl.get("/login")
				p := cl.post("/login", url.Values{"email": {tc.email}, "password": {tc.password}})
				require.Equal(t, tc.status, p.Status)
				require.Contains(t, p.Body, tc.message)
				require.Nil(t, sessionCookie(t, p), "a refused sign-in sets no session")
				p = cl.get("/")
				require.Equal(t, http.StatusSeeOther, p.Status, "still signed out")
			})
		}
	})

	t.Run("a user made reviewer after signing in is out at once", func(t *testing.T) {
		t.Parallel()
		cl := c.client(t)
		ctx := context.Background()
		u, err := c.P.Admin.CreateUser(ctx, c.Tenant.Workspace.ID, "test", adminInput("demoted-"+models.NewID()[:8]+"@example.test", models.RoleAdmin))
		require.NoError(t, err)
		p := cl.login(u.Email, testPassword)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, http.StatusOK, cl.get("/").Status)
		_, err = c.P.Admin.UpdateUser(ctx, c.Tenant.Workspace.ID, "test", u.ID, []byte(`{"role":"reviewer"}`))
		require.NoError(t, err)
		p = cl.get("/")
		require.Equal(t, http.StatusForbidden, p.Status, "a reviewer sees nothing of the admin console")
		require.Equal(t, http.StatusOK, cl.get("/review").Status)
	})
}

// adminInput is a user to create with testPassword.
func adminInput(email, role string) admin.UserInput {
	return admin.UserInput{Email: email, Name: "Someone", Role: role, Password: testPassword}
}

func TestSecureCookieOverHTTPS(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t, func(cfg *config.Config) { cfg.ConsoleURL = "https://console.example.test" })
	cl := c.client(t)
	p := cl.get("/login")
	ck := sessionCookie(t, p)
	require.NotNil(t, ck)
	require.True(t, ck.Secure)
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	other := c.signedIn(t)
	require.NotEqual(t, cl.csrf, other.csrf, "each session has its own token")

	for _, tc := range []struct {
		name  string
		path  string
		token []string // nil: no csrf field at all
	}{
		{"missing on a change", "/tokens", nil},
		{"empty on a change", "/tokens", []string{""}},
		{"wrong on a change", "/tokens", []string{"Zm9yZ2Vk"}},
		{"another session's token", "/tokens", []string{other.csrf}},
		{"missing on sign-out", "/logout", nil},
		{"missing on release", "/tasks/" + models.NewID() + "/awaits/" + models.NewID() + "/release", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"scope": {"admin"}, "name": {"csrf test"}, "csrf": tc.token}
			if tc.token == nil {
				form["csrf"] = []string{} // present, so post adds none; empty, so none is sent
			}
			p := cl.post(tc.path, form)
			require.Equal(t, http.StatusForbidden, p.Status, p.Body)
			require.Contains(t, p.Body, "this form has expired or did not come from this console")
		})
	}
	require.Equal(t, http.StatusOK, cl.get("/").Status, "still signed in")

	t.Run("a token in the query string is not looked at", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, c.URL+"/tokens?csrf="+url.QueryEscape(cl.csrf),
			strings.NewReader(url.Values{"scope": {"admin"}, "name": {"csrf test"}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		p := cl.do(req)
		require.Equal(t, http.StatusForbidden, p.Status, p.Body)
	})

	t.Run("a page script sends it in a header", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, c.URL+"/tokens",
			strings.NewReader(url.Values{"scope": {"admin"}, "name": {"by header"}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set(console.CSRFHeader, cl.csrf)
		p := cl.do(req)
		require.Equal(t, http.StatusCreated, p.Status, p.Body)
	})

	t.Run("a NUL in a field is the form's fault", func(t *testing.T) {
		p := cl.post("/tokens", url.Values{"scope": {"admin"}, "name": {"csrf test\x00"}})
		require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
		require.Contains(t, p.Body, "a form field holds a NUL character")
	})

	t.Run("sign-in form", func(t *testing.T) {
		anon := c.client(t)
		anon.get("/login")
		p := anon.post("/login", url.Values{"email": {c.Tenant.Admin.Email}, "password": {testPassword}, "csrf": {"nope"}})
		require.Equal(t, http.StatusForbidden, p.Status)
		fresh := c.client(t) // never saw the form: no session, no token
		p = fresh.post("/login", url.Values{"email": {c.Tenant.Admin.Email}, "password": {testPassword}, "csrf": {""}})
		require.Equal(t, http.StatusForbidden, p.Status)
	})

	tokens, err := c.P.Admin.ListTokens(context.Background(), c.Tenant.Workspace.ID)
	require.NoError(t, err)
	for _, tok := range tokens {
		require.NotEqual(t, "csrf test", tok.Name, "no refused post issued a token")
	}
}

// TestSignInIsThrottled: an account takes limit.SignInAccountBurst tries in
// a row from one address; the next, even with the right password, is a 429
// with Retry-After and the password is not checked. A failed sign-in spends
// a try, a successful one clears the count. (Tries are spent directly
// through the throttle where the test needs many: a wrong password costs a
// bcrypt comparison, seconds under the race detector, and the budget earns
// a try back every minute.)
func TestSignInIsThrottled(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	ctx := context.Background()
	tries := limit.NewSignInThrottle(c.P.Redis, c.P.KeyPrefix) // the console's cells
	spend := func(email, address string, n int) {
		for i := range n {
			require.NoError(t, tries.Attempt(ctx, limit.SignInTry{Account: email, Address: address}), "try %d", i+1)
		}
	}
	victim, err := c.P.Admin.CreateUser(ctx, c.Tenant.Workspace.ID, "test", adminInput("victim-"+models.NewID()[:8]+"@example.test", models.RoleAdmin))
	require.NoError(t, err)

	spend(victim.Email, "127.0.0.1", limit.SignInAccountBurst-1) // the test client's address
	cl := c.client(t)
	require.Equal(t, http.StatusUnauthorized, cl.login(victim.Email, "a wrong guess").Status, "the last try of the burst")
	p := cl.login(strings.ToUpper(victim.Email), testPassword)
	require.Equal(t, http.StatusTooManyRequests, p.Status, "the right password, one try too many: %s", p.Body)
	wait, err := strconv.Atoi(p.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is whole seconds")
	require.Positive(t, wait)
	require.LessOrEqual(t, wait, int(limit.SignInAccountEvery/time.Second))
	require.Contains(t, p.Body, "Too many sign-in attempts. Try again in "+strconv.Itoa(wait)+" seconds.")
	require.Nil(t, sessionCookie(t, p), "not signed in")

	// Another account from the same address is not held back, and its
	// successful sign-in clears its own count.
	spend(c.Tenant.Admin.Email, "127.0.0.1", limit.SignInAccountBurst-1)
	require.Equal(t, http.StatusSeeOther, c.client(t).login(c.Tenant.Admin.Email, testPassword).Status)
	spend(c.Tenant.Admin.Email, "127.0.0.1", limit.SignInAccountBurst)
}

// TestGuessersDoNotKeepTheAdminOut: however many addresses guess an
// account's password, its admin signs in from a browser they signed in
// from before (the device cookie); only unknown browsers wait.
func TestGuessersDoNotKeepTheAdminOut(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	ctx := context.Background()
	admin, err := c.P.Admin.CreateUser(ctx, c.Tenant.Workspace.ID, "test", adminInput("kept-"+models.NewID()[:8]+"@example.test", models.RoleAdmin))
	require.NoError(t, err)
	known := c.client(t)
	p := known.login(admin.Email, testPassword)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	var device *http.Cookie
	for _, ck := range (&http.Response{Header: p.Header}).Cookies() {
		if ck.Name == console.DeviceCookieName {
			device = ck
		}
	}
	require.NotNil(t, device, "a sign-in makes the browser known")
	require.Equal(t, "/login", device.Path, "the cookie goes to the sign-in form only")
	require.True(t, device.HttpOnly)

	// Guessers at many addresses spend the pool of unknown clients (the
	// first sign-in, from a browser unknown then, took one).
	tries := limit.NewSignInThrottle(c.P.Redis, c.P.KeyPrefix)
	for i := range limit.SignInPoolBurst - 1 {
		require.NoError(t, tries.Attempt(ctx, limit.SignInTry{Account: admin.Email, Address: "198.51.100." + strconv.Itoa(i)}))
	}
	p = c.client(t).login(admin.Email, testPassword)
	require.Equal(t, http.StatusTooManyRequests, p.Status, "an unknown browser waits: %s", p.Body)
	require.NotEmpty(t, p.Header.Get("Retry-After"))

	signOut := func(cl *client) {
		require.Equal(t, http.StatusOK, cl.get("/").Status) // the signed-in page's CSRF token
		require.Equal(t, http.StatusSeeOther, cl.post("/logout", nil).Status)
	}
	signOut(known)
	p = known.login(strings.ToUpper(admin.Email), testPassword)
	require.Equal(t, http.StatusSeeOther, p.Status, "the admin's own browser signs in: %s", p.Body)
	require.NotNil(t, sessionCookie(t, p))

	// The device cookie counts for its own account only, and a forged one
	// for none.
	other := c.client(t)
	require.Equal(t, http.StatusSeeOther, other.login(c.Tenant.Admin.Email, testPassword).Status)
	signOut(other)
	require.Equal(t, http.StatusTooManyRequests, other.login(admin.Email, testPassword).Status, "known to another account")
	forged := c.client(t)
	u, err := url.Parse(c.URL)
	require.NoError(t, err)
	sig := []byte(device.Value)
	sig[len(sig)-5] ^= 1 // inside the signature (its last character holds padding bits)
	forged.http.Jar.SetCookies(u, []*http.Cookie{{Name: console.DeviceCookieName, Value: string(sig), Path: "/login"}})
	require.Equal(t, http.StatusTooManyRequests, forged.login(admin.Email, testPassword).Status, "a forged device cookie")
}

func TestLogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	u, err := url.Parse(c.URL)
	require.NoError(t, err)
	var stolen string
	for _, ck := range cl.http.Jar.Cookies(u) {
		if ck.Name == console.CookieName {
			stolen = ck.Value
		}
	}
	require.NotEmpty(t, stolen)
	p := cl.post("/logout", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/login?notice=signed_out", p.Header.Get("Location"))
	require.Equal(t, http.StatusSeeOther, cl.get("/").Status)
	// A copy of the cookie taken before sign-out is worthless too.
	p = getWithCookie(t, c, "/", stolen)
	require.Equal(t, http.StatusSeeOther, p.Status)
}

func TestNewNeedsTheCookieKey(t *testing.T) {
	t.Parallel()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.ConsoleKey = nil
	p, _ := newPlatform(t, cfg)
	_, err := console.New(p.ConsoleServices())
	require.ErrorContains(t, err, "CONSOLE_SESSION_KEY is required")
}

// knownBrowser signs email in with a fresh browser (which the sign-in makes
// known to the account) and signs it out again.
func knownBrowser(t *testing.T, c *testConsole, email string) *client {
	t.Helper()
	cl := c.client(t)
	p := cl.login(email, testPassword)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, http.StatusOK, cl.get("/").Status) // the signed-in page's CSRF token
	require.Equal(t, http.StatusSeeOther, cl.post("/logout", nil).Status)
	return cl
}

// sprayAddress spends the sign-in tries of address over other accounts, as
// a guesser behind the same NAT or load balancer would.
func sprayAddress(t *testing.T, c *testConsole, address string) {
	t.Helper()
	tries := limit.NewSignInThrottle(c.P.Redis, c.P.KeyPrefix)
	for i := range limit.SignInAddressBurst + 1 {
		err := tries.Attempt(context.Background(), limit.SignInTry{Account: "sprayed" + strconv.Itoa(i) + "@example.test", Address: address})
		if apperr.Is(err, apperr.RateLimited) {
			return // spent (the test's own sign-ins took some)
		}
		require.NoError(t, err, "try %d", i+1)
	}
	t.Fatalf("%s was not spent after %d tries", address, limit.SignInAddressBurst+1)
}

// TestAnAddressSprayDoesNotLockOutAKnownBrowser: failures from one address
// over many accounts hold back every unknown browser there, but not a
// browser the account signed in from before, with the right password.
func TestAnAddressSprayDoesNotLockOutAKnownBrowser(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	known := knownBrowser(t, c, c.Tenant.Admin.Email)
	sprayAddress(t, c, "127.0.0.1") // the test clients' address

	p := c.client(t).login(c.Tenant.Admin.Email, testPassword)
	require.Equal(t, http.StatusTooManyRequests, p.Status, "an unknown browser at the sprayed address waits: %s", p.Body)
	p = known.login(c.Tenant.Admin.Email, testPassword)
	require.Equal(t, http.StatusSeeOther, p.Status, "the known browser signs in: %s", p.Body)
	require.NotNil(t, sessionCookie(t, p))
}

// TestForwardedForNeedsATrustedProxy: X-Forwarded-For names the client only
// when the hop that sent it is in TRUSTED_PROXIES; otherwise a client could
// pick a fresh address for every try.
func TestForwardedForNeedsATrustedProxy(t *testing.T) {
	t.Parallel()
	forwarded := func(c *testConsole, xff string) *client {
		cl := c.client(t)
		cl.header = http.Header{"X-Forwarded-For": {xff}}
		return cl
	}

	untrusted := newTestConsole(t)
	sprayAddress(t, untrusted, "127.0.0.1")
	p := forwarded(untrusted, "203.0.113.9").login(untrusted.Tenant.Admin.Email, testPassword)
	require.Equal(t, http.StatusTooManyRequests, p.Status, "no trusted proxy: the header is ignored: %s", p.Body)

	trusted := newTestConsole(t, func(cfg *config.Config) {
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	sprayAddress(t, trusted, "127.0.0.1")
	p = forwarded(trusted, "198.51.100.1, 203.0.113.9").login(trusted.Tenant.Admin.Email, testPassword)
	require.Equal(t, http.StatusSeeOther, p.Status, "behind a trusted proxy the client is the last hop it names: %s", p.Body)
	sprayAddress(t, trusted, "203.0.113.9")
	p = forwarded(trusted, "198.51.100.1, 203.0.113.9").login(trusted.Tenant.Admin.Email, testPassword)
	require.Equal(t, http.StatusTooManyRequests, p.Status, "the entry the client wrote itself is not believed: %s", p.Body)
}

// TestSignInWithoutRedisIs503: with the console's Redis down (a port that
// refuses), the sign-in form posts back a 503 with a message and
// Retry-After, with or without the form's session cookie, and nobody is
// signed in; a signed-in page is a 503 too, never a 500.
func TestSignInWithoutRedisIs503(t *testing.T) {
	t.Parallel()
	p, st := newPlatform(t, testkit.Config(testkit.DatabaseURL(), testkit.RedisURL()))
	tenant := testkit.NewTenant(t, st.DB)
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = dead.Close() })
	svc := p.ConsoleServices()
	svc.Redis = dead
	app, err := console.New(svc)
	require.NoError(t, err)
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	serve(t, app, ln)
	c := &testConsole{URL: "http://" + ln.Addr().String(), P: p, Store: st, Tenant: tenant}

	cl := c.client(t)
	page := cl.login(tenant.Admin.Email, testPassword) // the form's anonymous session cookie
	require.Equal(t, http.StatusServiceUnavailable, page.Status, page.Body)
	require.Contains(t, strings.ToLower(page.Body), "try again in a moment")
	require.NotEmpty(t, page.Header.Get("Retry-After"))
	require.Nil(t, sessionCookie(t, page), "not signed in")

	bare := c.client(t)
	page = bare.post("/login", url.Values{"email": {tenant.Admin.Email}, "password": {testPassword}, "csrf": {""}})
	require.NotEqual(t, http.StatusInternalServerError, page.Status, page.Body)

	signed := getWithCookie(t, c, "/", forgeCookie(models.NewID(), tenant.Admin.ID, tenant.Workspace.ID, time.Now().Add(time.Hour)))
	require.Equal(t, http.StatusServiceUnavailable, signed.Status, signed.Body)
	require.Equal(t, "2", signed.Header.Get("Retry-After"))
}
