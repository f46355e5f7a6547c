package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/bundle"
)

const bundleDevUsage = `usage: appruntime bundle dev [--file NAME] [--step ID] [--addr HOST:PORT] DIR

Serves the bundle in DIR against a running appruntime dev: each time the file
changes it is uploaded as the next version of the bundle "dev-<DIR's name>"
(served by the runtime, so with production's CSP, sandbox and limits), and the
page at the printed URL mounts it as the artifact of an app-tool step,
reloading the frame on save with the same session. An upload the API refuses
(too large, not UTF-8, a bad grant) and a session it will not mint show next
to the frame. See docs/bundle-authors.md#the-dev-loop.

  --file NAME   the bundle's file in DIR (default index.html, else the
                only .html file)
  --step ID     the app-tool step whose session, binding and params the
                bundle gets (default: the demo's, from dev.json)
  --addr A      where the page listens (default 127.0.0.1:0, a free port)
  --api URL     the API's base URL (default: dev.json's)
  --dev-dir DIR where appruntime dev keeps dev.json (default .appruntime)
`

// bundleDevPoll is how often the bundle's file is looked at: a save shows
// within it, and a stat costs nothing.
const bundleDevPoll = 150 * time.Millisecond

//go:embed bundledev.html
var bundleDevPage []byte

// devEndpoints are what `bundle dev` needs of a local appruntime dev.
type devEndpoints struct {
	APIURL     string `json:"api_url"`
	AdminToken string `json:"admin_token"`
	HostToken  string `json:"host_token"`
	StepID     string `json:"step_id"`
}

// runBundleDev runs `appruntime bundle dev`.
func runBundleDev(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("bundle dev", flag.ContinueOnError)
	flags.Usage = func() { fmt.Fprint(os.Stderr, bundleDevUsage) }
	file := flags.String("file", "", "")
	stepID := flags.String("step", "", "")
	addr := flags.String("addr", "127.0.0.1:0", "")
	apiURL := flags.String("api", "", "")
	devDir := flags.String("dev-dir", ".appruntime", "")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 {
		if err == nil {
			fmt.Fprint(os.Stderr, bundleDevUsage)
		}
		return errUsage
	}
	dir := flags.Arg(0)
	var dev devEndpoints
	raw, err := os.ReadFile(filepath.Join(*devDir, "dev.json"))
	if err != nil {
		return fmt.Errorf("bundle dev runs beside appruntime dev: %w", err)
	}
	if err := json.Unmarshal(raw, &dev); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(*devDir, "dev.json"), err)
	}
	if *apiURL != "" {
		dev.APIURL = *apiURL
	}
	if *stepID != "" {
		dev.StepID = *stepID
	}
	if dev.APIURL == "" || dev.AdminToken == "" || dev.HostToken == "" || dev.StepID == "" {
		return fmt.Errorf("%s names no api_url, admin_token, host_token or step_id", filepath.Join(*devDir, "dev.json"))
	}
	path, err := bundleFile(dir, *file)
	if err != nil {
		return err
	}
	d := &bundleDev{api: strings.TrimRight(dev.APIURL, "/"), dev: dev, path: path,
		name: "dev-" + filepath.Base(filepath.Clean(dir)), changed: make(chan struct{})}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: d.routes(ln.Addr().String()), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	fmt.Printf("bundle dev: serving %s as bundle %q on http://%s/ (step %s)\n", path, d.name, ln.Addr(), dev.StepID)
	d.watch(ctx)
	return nil
}

// bundleFile is the bundle's file in dir: name, else index.html, else the
// directory's only .html file.
func bundleFile(dir, name string) (string, error) {
	if name != "" {
		return filepath.Join(dir, name), nil
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err == nil {
		return filepath.Join(dir, "index.html"), nil
	}
	found, _ := filepath.Glob(filepath.Join(dir, "*.html"))
	if len(found) != 1 {
		return "", fmt.Errorf("%s: name the bundle's file with --file (no index.html, and %d .html files)", dir, len(found))
	}
	return found[0], nil
}

// bundleDev is one `bundle dev`: the file it watches, the bundle it uploads
// to, and what the page shows (the latest version's URL, or why there is
// none), announced to the page's event streams through changed.
type bundleDev struct {
	api, name, path string
	dev             devEndpoints

	mu       sync.Mutex
	bundleID string
	state    devState
	changed  chan struct{} // closed and replaced on each change of state
}

// devState is what the page is told: the version to mount, or the error of
// the last upload (the frame keeps the version before it).
type devState struct {
	Version int    `json:"version,omitempty"`
	URL     string `json:"url,omitempty"`
	Error   string `json:"error,omitempty"`
}

// watch uploads the file once a change to its size or modification time
// has held for one poll (a save in progress, a bundler writing a large
// file, is not sent half-written), until ctx ends.
func (d *bundleDev) watch(ctx context.Context) {
	var last, uploaded os.FileInfo
	same := func(a, b os.FileInfo) bool {
		return a != nil && b != nil && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
	}
	tick := time.NewTicker(bundleDevPoll)
	defer tick.Stop()
	for {
		fi, err := os.Stat(d.path)
		switch {
		case err != nil:
			if last != nil || uploaded != nil || d.current().Error == "" {
				d.set(devState{Error: err.Error()}, true)
			}
			last, uploaded = nil, nil
		case same(fi, last) && !same(fi, uploaded):
			uploaded = fi
			d.upload(ctx)
		}
		if err == nil {
			last = fi
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// upload sends the file as the next version and tells the page.
func (d *bundleDev) upload(ctx context.Context) {
	f, err := os.Open(d.path)
	if err != nil {
		d.set(devState{Error: err.Error()}, true)
		return
	}
	// One byte over the cap is enough for the API's own 413.
	content, err := io.ReadAll(io.LimitReader(f, bundle.MaxBundleBytes+1))
	f.Close()
	if err != nil {
		d.set(devState{Error: err.Error()}, true)
		return
	}
	v, err := d.putVersion(ctx, content)
	if err != nil {
		d.set(devState{Error: "upload refused: " + err.Error()}, true)
		fmt.Fprintf(os.Stderr, "bundle dev: %s: upload refused: %v\n", d.path, err)
		return
	}
	d.set(devState{Version: v.Version, URL: v.URL}, false)
	fmt.Printf("bundle dev: version %d (%d bytes) %s\n", v.Version, len(content), v.URL)
}

// putVersion uploads content as the bundle's next version, creating the
// bundle (or finding it, from an earlier run) the first time.
func (d *bundleDev) putVersion(ctx context.Context, content []byte) (bundleVersionReply, error) {
	contentType := "text/html"
	if ext := filepath.Ext(d.path); ext == ".js" || ext == ".mjs" {
		contentType = "text/javascript"
	}
	var v bundleVersionReply
	if d.bundleID == "" {
		var list struct {
			Bundles []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"bundles"`
		}
		if err := apiCall(ctx, http.MethodGet, d.api+"/api/admin/bundles", d.dev.AdminToken, "", nil, &list); err != nil {
			return v, err
		}
		for _, b := range list.Bundles {
			if b.Name == d.name {
				d.bundleID = b.ID
			}
		}
	}
	target := d.api + "/api/admin/bundles?name=" + url.QueryEscape(d.name)
	if d.bundleID != "" {
		target = d.api + "/api/admin/bundles/" + url.PathEscape(d.bundleID) + "/versions"
	}
	if err := apiCall(ctx, http.MethodPost, target, d.dev.AdminToken, contentType, content, &v); err != nil {
		return v, err
	}
	d.bundleID = v.ID
	return v, nil
}

// bundleVersionReply is what an upload answers (components.schemas.BundleVersion).
type bundleVersionReply struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	URL     string `json:"url"`
}

// set changes the page's state; keep leaves the version as it was (a failed
// upload does not take away the version that works).
func (d *bundleDev) set(s devState, keep bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if keep {
		s.Version, s.URL = d.state.Version, d.state.URL
	}
	d.state = s
	close(d.changed)
	d.changed = make(chan struct{})
}

func (d *bundleDev) current() devState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// routes serves the page (/), its event stream (/events) and its session
// mint (POST /session), only to requests addressed to host (a page of
// another site cannot rebind a name to this port and read a session).
func (d *bundleDev) routes(host string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(bytes.ReplaceAll(bundleDevPage, []byte("{{BUNDLE_NAME}}"), []byte(d.name)))
	})
	mux.HandleFunc("GET /events", d.events)
	mux.HandleFunc("POST /session", d.session)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != host {
			http.Error(w, "this page answers on "+host+" only", http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// events streams the state to the page (server-sent events): now, then on
// each change.
func (d *bundleDev) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	for {
		d.mu.Lock()
		s, changed := d.state, d.changed
		d.mu.Unlock()
		raw, _ := json.Marshal(s)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", raw); err != nil {
			return
		}
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		}
	}
}

// session mints a session on the step through the host API and answers the
// bridge's init message (the page mounts with it, and renews with it).
func (d *bundleDev) session(w http.ResponseWriter, r *http.Request) {
	var desc artifact.Descriptor
	// The page names the session it renews (?replaces=), which the mint
	// revokes: the loop never holds more than one of the task's two.
	body, _ := json.Marshal(map[string]string{"step_id": d.dev.StepID, "replaces": r.URL.Query().Get("replaces")})
	err := apiCall(r.Context(), http.MethodPost, d.api+"/api/app-tools/sessions", d.dev.HostToken, "application/json", body, &desc)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "the session mint was refused: " + err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(devSession{InitMessage: desc.Init(), SessionID: desc.SessionID})
}

// devSession is what the page gets from /session: the init message, and
// the session's id, which it names when it renews.
type devSession struct {
	artifact.InitMessage
	SessionID string `json:"session_id"`
}

// apiCall sends one request to the API with token and decodes a 2xx reply
// into out; any other status is an error with the API's message.
func apiCall(ctx context.Context, method, target, token, contentType string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, bindingFetchTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxBindingReplyBytes+1))
	if err != nil {
		return err
	}
	if len(raw) > maxBindingReplyBytes {
		return fmt.Errorf("the reply is over %d bytes", maxBindingReplyBytes)
	}
	if res.StatusCode/100 != 2 {
		return errors.New(res.Status + ": " + apiErrorMessage(raw))
	}
	return json.Unmarshal(raw, out)
}
