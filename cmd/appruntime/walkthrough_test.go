package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// walkthroughPage is the page whose shell blocks
// TestWalkthroughCurlExamplesRunAgainstDev runs, in order.
const walkthroughPage = "docs/walkthrough.md"

// curlStatusWrapper makes every curl of the walk-through report its status,
// method and URL on stderr (one "HTTP <code> <method> <url>" line each)
// without changing what it prints, so the test can check every call
// answered 2xx.
const curlStatusWrapper = `set -euo pipefail
curl() { command curl -w '%{stderr}HTTP %{http_code} %{method} %{url_effective}\n' "$@"; }
`

// walkthroughShellBlocks returns the ```sh blocks of the walk-through page.
func walkthroughShellBlocks(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(walkthroughPage)))
	require.NoError(t, err)
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

var httpLine = regexp.MustCompile(`^HTTP (\d{3}) ([A-Z]+) (\S+)$`)

func TestWalkthroughCurlExamplesRunAgainstDev(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	blocks := walkthroughShellBlocks(t)
	require.GreaterOrEqual(t, len(blocks), 4, "the page shows setup, admin, agent and host blocks")
	script := strings.Join(blocks, "\n")
	for _, tool := range []string{"jq ", "python"} {
		require.NotContains(t, script, tool, "the examples need nothing beyond curl, grep and sed")
	}

	dir := t.TempDir()
	apiAddr := freeAddr(t)
	env := baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+freeAddr(t))
	p := start(t, dir, env, "dev")
	res := waitHTTP(t, p, "http://"+apiAddr+"/readyz", 60*time.Second)
	require.Equal(t, 200, res.StatusCode)
	res.Body.Close()

	cmd := exec.Command("bash", "-c", curlStatusWrapper+script)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the walk-through's blocks fail\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := stdout.String()

	// Every call answered 2xx, and every call the section promises was made.
	var calls []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		m := httpLine.FindStringSubmatch(line)
		require.NotNil(t, m, "unexpected stderr line %q\nstdout:\n%s", line, out)
		require.Regexp(t, `^2\d\d$`, m[1], "%s %s answered %s\nstdout:\n%s", m[2], m[3], m[1], out)
		calls = append(calls, m[2]+" "+strings.TrimPrefix(m[3], "http://"+apiAddr))
	}
	id := `[0-9a-f-]{36}`
	want := []string{
		`POST /api/admin/bundles\?name=hello`, `GET /bundles/` + id + `/1`, `POST /api/admin/configured-tools`,
		`POST /api/agent/tasks`, `POST /api/agent/tasks/` + id + `/steps`, `GET /api/agent/tasks/` + id,
		`POST /api/app-tools/sessions`, `POST /api/app-runtime/read`, `POST /api/app-runtime/action`,
		`GET /api/agent/tasks/` + id + `/events\?after=0`,
	}
	require.Len(t, calls, len(want), "calls made: %q", calls)
	for i, w := range want {
		require.Regexp(t, "^"+w+"$", calls[i])
	}

	// What each reply carries.
	require.Regexp(t, `(?im)^etag: "[0-9a-f]{64}"`, out, "the served bundle carries its sha256")
	for _, field := range []string{
		`"await_id":"`,                              // the artifact parks its task
		`"status":"waiting_for_input"`,              // the task as the agent reads it
		`"session_token":"`, `"await_pending":true`, // the mint's descriptor
		`"kind":"rows"`,         // the bundle's read
		`"await_resolved":true`, // the action released the await
		`"events":[`,            // the pull endpoint
	} {
		require.Contains(t, out, field, "stdout:\n%s", out)
	}

	// The worker resumes the task the action released.
	taskID := regexp.MustCompile(`"task_id":"(` + id + `)"`).FindStringSubmatch(out)
	require.NotNil(t, taskID, out)
	raw, err := os.ReadFile(filepath.Join(dir, ".appruntime", "dev.json"))
	require.NoError(t, err)
	var info struct {
		AgentToken string `json:"agent_token"`
	}
	require.NoError(t, json.Unmarshal(raw, &info))
	require.Eventually(t, func() bool {
		req, _ := http.NewRequest("GET", "http://"+apiAddr+"/api/agent/tasks/"+taskID[1], nil)
		req.Header.Set("Authorization", "Bearer "+info.AgentToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var task struct{ Status string }
		return res.StatusCode == 200 && json.NewDecoder(res.Body).Decode(&task) == nil && task.Status == "running"
	}, 30*time.Second, 100*time.Millisecond, "the task runs again after the action")

	_, err = p.stop(t)
	require.NoError(t, err, p.stderr.String())
}
