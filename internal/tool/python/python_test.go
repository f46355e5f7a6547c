package python_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/python"
	"github.com/appruntime/appruntime/models"
)

// sandbox is one executor for the tests that need bwrap; each run is its own
// process, so sharing it only shares the one probe.
var sandbox = python.New(python.Options{})

func call(code string, input string) tool.Call {
	return tool.Call{
		BaseTool: models.BasePythonCode,
		Tool:     &models.ConfiguredTool{DisplayName: "script", BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]string{"code": code})},
		Input:    json.RawMessage(input),
	}
}

func needSandbox(t *testing.T, ex *python.Executor) {
	t.Helper()
	ok, err := ex.Check(context.Background())
	require.NoError(t, err, "bwrap must work here (apt-get install bubblewrap)")
	require.True(t, ok)
}

func run(t *testing.T, ex *python.Executor, code, input string) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := ex.Run(ctx, call(code, input))
	require.Zero(t, res.Units, "python bills nothing")
	return res.Output, err
}

func failure(t *testing.T, err error) *tool.Failure {
	t.Helper()
	f, ok := tool.AsFailure(err)
	require.True(t, ok, "want a tool failure, got %v", err)
	return f
}

func TestMainReceivesTheInputAndReturnsTheOutput(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	code := `
import json
def main(input):
    print("a log line that must not reach the output")
    return {"total": sum(input["values"]), "task": input["task_id"], "names": sorted(input)}
`
	out, err := run(t, sandbox, code, `{"values":[1,2,3.5],"task_id":"t-1"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"total":6.5,"task":"t-1","names":["task_id","values"]}`, string(out))

	out, err = run(t, sandbox, "def main(input):\n    return 'plain **markdown**'\n", "")
	require.NoError(t, err)
	require.JSONEq(t, `"plain **markdown**"`, string(out), "any JSON value is an output; an empty input is {}")
}

func TestScriptErrorsAreToolFailures(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	for _, tc := range []struct{ name, code, message, detail string }{
		{"raises", "def main(input):\n    x = 1\n    raise ValueError('boom %d' % x)\n", "ValueError: boom 1", "raise ValueError('boom %d' % x)"},
		{"syntax", "def main(input)\n    return 1\n", "SyntaxError", ""},
		{"no main", "x = 1\n", "the code defines no main(input) function", ""},
		{"not json", "def main(input):\n    return {1, 2}\n", "main returned a value that is not JSON", ""},
		{"nan", "def main(input):\n    return float('nan')\n", "main returned a value that is not JSON", ""},
		{"exit", "import sys\ndef main(input):\n    sys.exit(3)\n", "SystemExit: 3", "sys.exit(3)"},
		{"import", "import no_such_module\ndef main(input):\n    return 1\n", "ModuleNotFoundError", "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, sandbox, tc.code, `{}`)
			f := failure(t, err)
			require.Contains(t, f.Message, tc.message)
			require.Contains(t, f.Detail, tc.detail)
			require.NotContains(t, f.Detail, "runner", "the traceback shows the tool's frames only")
		})
	}
}

func TestOutputOverTheCapIsDiscarded(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	_, err := run(t, sandbox, fmt.Sprintf("def main(input):\n    return 'x' * %d\n", python.MaxOutputBytes+10), `{}`)
	require.Contains(t, failure(t, err).Message, "larger than 1048576 bytes")

	// Just under the cap passes whole.
	out, err := run(t, sandbox, fmt.Sprintf("def main(input):\n    return 'x' * %d\n", python.MaxOutputBytes-100), `{}`)
	require.NoError(t, err)
	require.Len(t, out, python.MaxOutputBytes-98)
}

// groupAlive reports whether any process of the group exists, zombies included.
func groupAlive(pgid int) bool { return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) }

// processesWith returns the pids whose command line contains marker.
func processesWith(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// testDeadlineKillsTheWholeGroup runs a script that forks a grandchild and
// then sleeps past a short deadline: Run answers 504 at the deadline, and
// afterwards neither the group nor the grandchild exists.
// Unsandboxed, the killed grandchild is an orphan that the host's PID 1
// reaps in its own time, so its zombie may outlive Run by a little.
func testDeadlineKillsTheWholeGroup(t *testing.T, ex *python.Executor, sandboxed bool) {
	var pgid atomic.Int64
	ex.OnStart(func(p int) { pgid.Store(int64(p)) })
	marker := fmt.Sprintf("%d.%d", 1000+time.Now().UnixNano()%1000, os.Getpid()) // a unique sleep length
	code := fmt.Sprintf(`
import subprocess, time
def main(input):
    subprocess.Popen(["sleep", "%s"])
    time.sleep(60)
    return "never"
`, marker)
	// The grandchild must really have existed before the deadline.
	var sawGrandchild atomic.Bool
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if len(processesWith(marker)) > 0 {
				sawGrandchild.Store(true)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := ex.Run(ctx, call(code, `{}`))
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()

	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
	require.Less(t, elapsed, 5*time.Second, "Run returns at the deadline, not when the script ends")
	require.True(t, sawGrandchild.Load(), "the script's grandchild was running before the deadline")
	require.NotZero(t, pgid.Load())
	require.Empty(t, processesWith(marker), "the grandchild is gone too")
	if sandboxed {
		require.False(t, groupAlive(int(pgid.Load())), "kill(-pgid, 0) must be ESRCH once Run returned")
	} else {
		require.Eventually(t, func() bool { return !groupAlive(int(pgid.Load())) }, 10*time.Second, 10*time.Millisecond,
			"kill(-pgid, 0) must become ESRCH once the orphan's zombie is reaped")
	}
}

func TestDeadlineKillsTheWholeGroup(t *testing.T) {
	t.Parallel()
	ex := python.New(python.Options{})
	needSandbox(t, ex)
	testDeadlineKillsTheWholeGroup(t, ex, true)
}

func TestLeftoverProcessesDieWithTheRun(t *testing.T) {
	t.Parallel()
	ex := python.New(python.Options{})
	needSandbox(t, ex)
	var pgid atomic.Int64
	ex.OnStart(func(p int) { pgid.Store(int64(p)) })
	// A script that returns at once but leaves a daemon behind.
	out, err := run(t, ex, "import subprocess\ndef main(input):\n    subprocess.Popen(['sleep', '300'])\n    return 'done'\n", `{}`)
	require.NoError(t, err)
	require.JSONEq(t, `"done"`, string(out))
	require.False(t, groupAlive(int(pgid.Load())))
}

func TestNoNetwork(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	// A listener on the host's loopback: the sandbox has a loopback of its
	// own, so the connection must not arrive here.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	code := `
import socket
def main(input):
    out = {}
    try:
        socket.create_connection(("127.0.0.1", input["port"]), timeout=3).close()
        out["loopback"] = "connected"
    except OSError as e:
        out["loopback"] = "refused: %s" % e
    try:
        socket.getaddrinfo("example.com", 80)
        out["dns"] = "resolved"
    except OSError as e:
        out["dns"] = "failed: %s" % e
    return out
`
	out, err := run(t, sandbox, code, fmt.Sprintf(`{"port":%d}`, ln.Addr().(*net.TCPAddr).Port))
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got))
	require.True(t, strings.HasPrefix(got["loopback"], "refused"), got["loopback"])
	require.True(t, strings.HasPrefix(got["dns"], "failed"), got["dns"])
	require.Zero(t, accepted.Load(), "nothing reached the host")
}

func TestWritesOnlyInsideItsTemporaryDirectory(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	hostDir := t.TempDir()
	require.NoError(t, os.Chmod(hostDir, 0o777))
	code := `
import os
def main(input):
    out = {}
    for path in input["paths"]:
        try:
            with open(path, "w") as f:
                f.write("x")
            out[path] = "written"
        except OSError as e:
            out[path] = e.strerror
    out["cwd"] = os.getcwd()
    return out
`
	paths := []string{"/tmp/ok.txt", "relative.txt", "/evil.txt", "/usr/evil.txt", "/etc/evil.txt", filepath.Join(hostDir, "evil.txt"), "/proc/sys/kernel/hostname"}
	in, _ := json.Marshal(map[string]any{"paths": paths})
	out, err := run(t, sandbox, code, string(in))
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, "/tmp", got["cwd"])
	require.Equal(t, "written", got["/tmp/ok.txt"])
	require.Equal(t, "written", got["relative.txt"])
	for _, p := range paths[2:] {
		require.NotEqual(t, "written", got[p], p)
	}
	entries, err := os.ReadDir(hostDir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing reached the host directory")
	_, err = os.Stat("/evil.txt")
	require.True(t, os.IsNotExist(err))

	// Each run has a fresh /tmp.
	out, err = run(t, sandbox, "import os\ndef main(input):\n    return os.path.exists('/tmp/ok.txt')\n", `{}`)
	require.NoError(t, err)
	require.JSONEq(t, `false`, string(out))
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	out, err := run(t, sandbox, "import os\ndef main(input):\n    return {'env': sorted(os.environ), 'uid': os.getuid()}\n", `{}`)
	require.NoError(t, err)
	var got struct {
		Env []string `json:"env"`
		UID int      `json:"uid"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, []string{"HOME", "LANG", "PATH", "PWD", "PYTHONIOENCODING", "TMPDIR"}, got.Env)
	require.Equal(t, 65534, got.UID)
}

func TestResourceLimits(t *testing.T) {
	t.Parallel()
	ex := python.New(python.Options{CPUTime: time.Second, MemoryBytes: 256 << 20, FileBytes: 1 << 20, MaxProcesses: 8})
	needSandbox(t, ex)
	for _, tc := range []struct{ name, code, want string }{
		{"memory", "def main(input):\n    return len(bytearray(1 << 30))\n", "MemoryError"},
		{"cpu", "def main(input):\n    while True:\n        pass\n", "CPU time"},
		{"file size", "def main(input):\n    open('/tmp/big', 'wb').write(b'x' * (2 << 20))\n", "File too large"},
		{"processes", "import os, time\ndef main(input):\n    for _ in range(50):\n        if os.fork() == 0:\n            time.sleep(5)\n            os._exit(0)\n", "BlockingIOError"},
		{"limits fixed", "import resource\ndef main(input):\n    resource.setrlimit(resource.RLIMIT_AS, (-1, -1))\n", "ValueError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := run(t, ex, tc.code, `{}`)
			require.Contains(t, failure(t, err).Message, tc.want)
		})
	}
}

func TestWithoutBwrap(t *testing.T) {
	t.Parallel()
	ex := python.New(python.Options{Bwrap: "/nonexistent/bwrap"})
	_, err := ex.Check(context.Background())
	require.True(t, apperr.Is(err, apperr.NotImplemented), "%v", err)
	require.ErrorContains(t, err, "bubblewrap")
	_, err = run(t, ex, "def main(input):\n    return 1\n", `{}`)
	require.True(t, apperr.Is(err, apperr.NotImplemented), "no sandbox, no run: %v", err)

	ex = python.New(python.Options{Python: "/nonexistent/python3", AllowUnsandboxed: true})
	_, err = ex.Check(context.Background())
	require.True(t, apperr.Is(err, apperr.NotImplemented), "%v", err)
}

func TestUnsandboxedWhenAllowed(t *testing.T) {
	t.Parallel()
	ex := python.New(python.Options{Bwrap: "/nonexistent/bwrap", AllowUnsandboxed: true})
	ok, err := ex.Check(context.Background())
	require.NoError(t, err)
	require.False(t, ok)

	out, err := run(t, ex, "import os\ndef main(input):\n    open('x', 'w').write('1')\n    return {'n': input['n'] + 1, 'env': sorted(os.environ)}\n", `{"n":1}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":2,"env":["HOME","LANG","PATH","PYTHONIOENCODING","TMPDIR"]}`, string(out))
	_, err = run(t, ex, "def main(input):\n    raise KeyError('k')\n", `{}`)
	require.Equal(t, "KeyError: 'k'", failure(t, err).Message)

	testDeadlineKillsTheWholeGroup(t, ex, false)
}

func TestStoredCodeIsRequired(t *testing.T) {
	t.Parallel()
	_, err := sandbox.Run(context.Background(), tool.Call{BaseTool: models.BasePythonCode, Input: json.RawMessage(`{}`)})
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	_, err = sandbox.Run(context.Background(), call("  ", `{}`))
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	_, err = sandbox.Run(context.Background(), call("def main(i):\n    return 1\n", `[1]`))
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
}

func TestDevShmIsACappedTmpfsAndDevIsReadOnly(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	// 2 GiB in files each under the file-size limit: /dev/shm was bwrap's
	// /dev, a tmpfs of half the host's memory.
	code := `
def main(input):
    chunk = b"x" * (1 << 20)
    for i in range(64):
        with open("/dev/shm/f%d" % i, "wb") as f:
            for _ in range(32):
                f.write(chunk)
    return "wrote 2 GiB"
`
	_, err := run(t, sandbox, code, `{}`)
	require.Contains(t, failure(t, err).Message, "No space left on device")

	_, err = run(t, sandbox, "def main(input):\n    open('/dev/evil', 'w').write('x')\n", `{}`)
	require.Contains(t, failure(t, err).Message, "Read-only file system")
}

func TestNestedUserNamespacesAreRefused(t *testing.T) {
	t.Parallel()
	needSandbox(t, sandbox)
	code := `
import subprocess
def main(input):
    p = subprocess.run(["unshare", "-U", "-r", "id", "-u"], capture_output=True, text=True)
    return {"code": p.returncode, "out": p.stdout.strip(), "err": p.stderr.strip()}
`
	out, err := run(t, sandbox, code, `{}`)
	require.NoError(t, err)
	var got struct {
		Code int    `json:"code"`
		Out  string `json:"out"`
		Err  string `json:"err"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.NotZero(t, got.Code, "unshare -U must fail inside the sandbox, got uid %q", got.Out)
	require.Contains(t, got.Err, "unshare failed")
}

func TestMemoryLimitCountsTmpfs(t *testing.T) {
	t.Parallel()
	// Files in /tmp and /dev/shm are within their caps and the heap is
	// within the address-space limit, but together they pass the run's
	// memory limit.
	ex := python.New(python.Options{MemoryBytes: 256 << 20, FileBytes: 100 << 20})
	needSandbox(t, ex)
	code := `
def main(input):
    chunk = b"x" * (1 << 20)
    for d in ("/tmp", "/dev/shm"):
        with open(d + "/big", "wb") as f:
            for _ in range(95):
                f.write(chunk)
    heap = bytearray(120 << 20)
    for i in range(0, len(heap), 4096):
        heap[i] = 1
    return len(heap)
`
	_, err := run(t, ex, code, `{}`)
	require.Contains(t, failure(t, err).Message, "more than its 256 MiB of memory")

	// The same run's files alone pass.
	out, err := run(t, ex, "def main(input):\n    open('/dev/shm/a', 'wb').write(b'x' * (90 << 20))\n    return 1\n", `{}`)
	require.NoError(t, err)
	require.JSONEq(t, `1`, string(out))
}

func TestWithoutACgroup(t *testing.T) {
	t.Parallel()
	ex := python.New(python.Options{Cgroup: t.TempDir()})
	_, err := ex.Check(context.Background())
	require.True(t, apperr.Is(err, apperr.NotImplemented), "%v", err)
	require.ErrorContains(t, err, "PYTHON_CGROUP")
	_, err = run(t, ex, "def main(input):\n    return 1\n", `{}`)
	require.True(t, apperr.Is(err, apperr.NotImplemented), "no cgroup, no run: %v", err)

	ex = python.New(python.Options{Cgroup: t.TempDir(), AllowNoCgroup: true})
	needSandbox(t, ex)
	out, err := run(t, ex, "def main(input):\n    return 1\n", `{}`)
	require.NoError(t, err)
	require.JSONEq(t, `1`, string(out))
}
