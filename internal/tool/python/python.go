package python

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bwrap"
	"github.com/appruntime/appruntime/internal/tool"
)

//go:embed runner.py
var runnerSource string

// Limits of one run.
const (
	// MaxOutputBytes caps the output a script returns (seed 000: an upstream
	// reply over 1 MiB is discarded, not truncated; the same holds here).
	MaxOutputBytes = 1 << 20
	// MaxLogBytes caps the print() output kept from a run.
	MaxLogBytes = 64 << 10
	// MaxOpenFiles bounds a script's open file descriptors.
	MaxOpenFiles = 64
	// nobody is the user and group a sandbox runs as when the worker is root,
	// so that process limits apply and an escape lands nowhere useful.
	nobody = 65534
	// killWait bounds how long Run waits for a killed process group to go.
	killWait = 2 * time.Second
	// checkTimeout bounds the one probe run that decides whether bwrap works.
	checkTimeout = 30 * time.Second
)

// Options configure the executor. Zero values take the defaults below.
type Options struct {
	// Python is the interpreter; it must live under /usr, the only part of
	// the host the sandbox mounts. Default /usr/bin/python3.
	Python string
	// Bwrap is the bubblewrap binary; default "bwrap" found on PATH.
	Bwrap string
	// AllowUnsandboxed runs scripts without bwrap when it is missing or does
	// not work here. Only for a deployment whose scripts are all trusted.
	AllowUnsandboxed bool
	// CPUTime is a run's CPU time limit; default 60 s.
	CPUTime time.Duration
	// MemoryBytes is a run's address-space limit; default 512 MiB.
	MemoryBytes int64
	// FileBytes limits the size of any file a script writes and of its
	// /tmp; default 64 MiB.
	FileBytes int64
	// MaxProcesses limits a run's processes and threads; default 32.
	MaxProcesses int
	// Cgroup is a cgroup directory (v2, or v1's memory hierarchy) under
	// which each sandboxed run gets a cgroup of its own whose memory limit,
	// MemoryBytes, counts what the run's tmpfs mounts hold. Default: the
	// worker's own memory cgroup.
	Cgroup string
	// AllowNoCgroup runs sandboxed scripts without a memory cgroup when none
	// can be used here; without it the tool answers 501.
	AllowNoCgroup bool
}

// Defaults of Options.
const (
	DefaultPython       = "/usr/bin/python3"
	DefaultCPUTime      = 60 * time.Second
	DefaultMemoryBytes  = 512 << 20
	DefaultFileBytes    = 64 << 20
	DefaultMaxProcesses = 32
)

// Executor runs python_code_tool. It is safe for concurrent use.
type Executor struct {
	opts Options

	checkOnce sync.Once
	mode      mode          // how scripts run, decided by the first check
	checkErr  error         // why no script can run (a 501)
	cgroup    *cgroupParent // where sandboxed runs get their memory cgroup; nil: none

	// started, when set, is told the process group of each run (tests).
	started func(pgid int)
}

type mode int

const (
	sandboxed mode = iota + 1
	unsandboxed
)

// New returns an executor with opts.
func New(opts Options) *Executor {
	if opts.Python == "" {
		opts.Python = DefaultPython
	}
	if opts.Bwrap == "" {
		opts.Bwrap = "bwrap"
	}
	if opts.CPUTime <= 0 {
		opts.CPUTime = DefaultCPUTime
	}
	if opts.MemoryBytes <= 0 {
		opts.MemoryBytes = DefaultMemoryBytes
	}
	if opts.FileBytes <= 0 {
		opts.FileBytes = DefaultFileBytes
	}
	if opts.MaxProcesses <= 0 {
		opts.MaxProcesses = DefaultMaxProcesses
	}
	return &Executor{opts: opts}
}

// Check reports whether scripts can run here, and how: it starts one
// sandbox the first time and remembers the answer. The error is a 501
// saying what is missing; a worker logs it at start.
func (e *Executor) Check(ctx context.Context) (sandbox bool, err error) {
	e.checkOnce.Do(func() {
		// The answer is kept, so it must not depend on the first caller's deadline.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
		defer cancel()
		e.mode, e.checkErr = e.check(ctx)
	})
	return e.mode == sandboxed, e.checkErr
}

func (e *Executor) check(ctx context.Context) (mode, error) {
	python, err := filepath.EvalSymlinks(e.opts.Python)
	if err != nil {
		return 0, apperr.NotImplementedf("python_code_tool: no python interpreter at %s", e.opts.Python)
	}
	bwrapPath, lookErr := exec.LookPath(e.opts.Bwrap)
	var sandboxErr error
	switch {
	case lookErr != nil:
		sandboxErr = fmt.Errorf("bwrap (Debian package bubblewrap) is not installed")
	case !strings.HasPrefix(python, "/usr/"):
		sandboxErr = fmt.Errorf("the interpreter %s is outside /usr, the only host directory the sandbox mounts", python)
	case !bwrap.DisablesUserns(ctx, bwrapPath):
		sandboxErr = fmt.Errorf("the installed bwrap is older than 0.8.0 and cannot refuse nested user namespaces (--disable-userns)")
	default:
		e.opts.Bwrap = bwrapPath
		cgroup, err := findCgroup(e.opts.Cgroup)
		if err != nil && !e.opts.AllowNoCgroup {
			return 0, apperr.Wrap(err, apperr.NotImplemented,
				"python_code_tool cannot run on this deployment: no cgroup can bound a run's memory: %v (PYTHON_CGROUP names a delegated cgroup; PYTHON_ALLOW_NO_CGROUP=true runs scripts without one)", err)
		}
		e.cgroup = cgroup
		probe := tool.Call{Input: json.RawMessage(`{}`)}
		_, err = e.runScript(ctx, sandboxed, "def main(input):\n    return 1\n", probe)
		if err == nil {
			return sandboxed, nil
		}
		sandboxErr = fmt.Errorf("bwrap cannot start a sandbox here (are user namespaces disabled?): %v", err)
	}
	if e.opts.AllowUnsandboxed {
		return unsandboxed, nil
	}
	return 0, apperr.Wrap(sandboxErr, apperr.NotImplemented,
		"python_code_tool cannot run on this deployment: %v (PYTHON_ALLOW_UNSANDBOXED=true runs scripts without a sandbox)", sandboxErr)
}

// settings is a python_code_tool's stored config.
type settings struct {
	Code string `json:"code"`
}

// Run implements tool.Executor.
func (e *Executor) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var cfg settings
	if err := tool.Settings(call, &cfg); err != nil {
		return tool.Result{}, err
	}
	if strings.TrimSpace(cfg.Code) == "" {
		return tool.Result{}, apperr.Invalidf("configured tool %q has no code", call.Tool.DisplayName)
	}
	if _, err := tool.InputObject(call.Input); err != nil {
		return tool.Result{}, err
	}
	if _, err := e.Check(ctx); err != nil {
		return tool.Result{}, err
	}
	out, err := e.runScript(ctx, e.mode, cfg.Code, call)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Output: out}, nil
}

// envelope is what the runner writes on stdout.
type envelope struct {
	OK        bool            `json:"ok"`
	Output    json.RawMessage `json:"output"`
	Error     string          `json:"error"`
	Traceback string          `json:"traceback"`
}

// runScript runs code's main on call.Input and returns its output.
func (e *Executor) runScript(ctx context.Context, m mode, code string, call tool.Call) (json.RawMessage, error) {
	input := call.Input
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage(`{}`)
	}
	request, err := json.Marshal(map[string]any{"code": code, "input": input})
	if err != nil {
		return nil, fmt.Errorf("python: encode request: %w", err)
	}
	// A sandboxed run under a cgroup starts gated: bwrap reports its
	// sandbox's process and waits until both are in the run's cgroup, before
	// the script exists.
	var cg *runCgroup
	var g *gate
	if m == sandboxed && e.cgroup != nil {
		if cg, err = e.cgroup.create(e.opts.MemoryBytes); err != nil {
			return nil, err
		}
		defer func() { _ = cg.remove() }()
		if g, err = openGate(); err != nil {
			return nil, err
		}
		defer g.close()
	}
	cmd, cleanup, err := e.command(m, g)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	cmd.Stdin = bytes.NewReader(request)
	// A session of its own: its own process group, and no controlling
	// terminal to inject input into.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	// Pipes of our own, read by our own goroutines: cmd.Wait then returns
	// when the process exits, even if something it forked still holds them.
	stdout := &cappedReader{max: MaxOutputBytes + 4096}
	stderr := &cappedReader{max: MaxLogBytes, truncate: true}
	if err := stdout.open(cmd, &cmd.Stdout); err != nil {
		return nil, err
	}
	if err := stderr.open(cmd, &cmd.Stderr); err != nil {
		stdout.close()
		return nil, err
	}
	defer stdout.close()
	defer stderr.close()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("python: start: %w", err)
	}
	pgid := cmd.Process.Pid
	if e.started != nil {
		e.started(pgid)
	}
	stdout.start()
	stderr.start()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stdout.overflowed:
		case <-done:
			return
		}
		killGroup(pgid)
	}()
	var gateErr error
	if g != nil {
		if gateErr = g.release(cmd.Process.Pid, cg); gateErr != nil {
			killGroup(pgid)
		}
	}
	waitErr := cmd.Wait()
	close(done)
	// A script may leave processes behind (a daemon it forked): the group
	// goes with the run, finished or not.
	killGroup(pgid)
	awaitGroupGone(pgid)
	stdout.wait(killWait)
	stderr.wait(killWait)

	if ctx.Err() != nil {
		return nil, tool.Stopped(ctx)
	}
	if gateErr != nil && !errors.Is(gateErr, errNoSandbox) {
		return nil, gateErr
	}
	if stdout.isOverflowed() {
		return nil, tool.Failf("the script's output is larger than %d bytes", MaxOutputBytes)
	}
	var env envelope
	if err := json.Unmarshal(stdout.buf, &env); err != nil {
		if cg != nil && cg.oomKilled() {
			return nil, &tool.Failure{
				Message: fmt.Sprintf("the script used more than its %d MiB of memory (what it writes to /tmp and /dev/shm counts)", e.opts.MemoryBytes>>20),
				Detail:  lastBytes(string(stderr.buf), 4096),
			}
		}
		return nil, e.exitFailure(waitErr, string(stderr.buf))
	}
	if !env.OK {
		return nil, &tool.Failure{Message: env.Error, Detail: env.Traceback}
	}
	if len(env.Output) > MaxOutputBytes {
		return nil, tool.Failf("the script's output is larger than %d bytes", MaxOutputBytes)
	}
	return env.Output, nil
}

// command builds the process of one run and returns what removes its
// temporary directory, if it made one. A sandbox is started behind g when
// it is given.
func (e *Executor) command(m mode, g *gate) (*exec.Cmd, func(), error) {
	limits, err := json.Marshal(e.limits())
	if err != nil {
		return nil, nil, fmt.Errorf("python: encode limits: %w", err)
	}
	pythonArgs := []string{"-I", "-B", "-c", runnerSource, string(limits)}
	env := []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONIOENCODING=utf-8"}
	if m == sandboxed {
		args := e.sandboxArgs()
		if g != nil {
			// ExtraFiles are the child's descriptors 3, 4, ...
			args = append(args, "--info-fd", "3", "--block-fd", "4")
		}
		args = append(append(append(args, "--"), e.opts.Python), pythonArgs...)
		cmd := exec.Command(e.opts.Bwrap, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if g != nil {
			cmd.ExtraFiles = []*os.File{g.infoW, g.blockR}
		}
		return cmd, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "appruntime-python-")
	if err != nil {
		return nil, nil, fmt.Errorf("python: temporary directory: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("python: temporary directory: %w", err)
		}
	}
	cmd := exec.Command(e.opts.Python, pythonArgs...)
	cmd.Dir = dir
	cmd.Env = append(env, "HOME="+dir, "TMPDIR="+dir)
	return cmd, cleanup, nil
}

// sandboxArgs are bwrap's options: every namespace unshared (network
// included) and no user namespace creatable inside, an unprivileged user
// without capabilities, /usr read-only and the rest of the root an empty
// read-only tree with size-capped tmpfs mounts at /tmp and /dev/shm (bwrap's
// /dev is a tmpfs of half the host's memory, so it is made read-only), an
// empty environment, and death with its parent. The script is PID 1
// of its namespace (--as-pid-1): when it dies the kernel kills and reaps
// everything else in the namespace before bwrap, our child, reaps it. With
// bwrap's own init as PID 1 instead, bwrap exits on an event from that init
// without reaping it, and the init lingers as a zombie of the host's PID 1.
func (e *Executor) sandboxArgs() []string {
	args := []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--uid", strconv.Itoa(nobody), "--gid", strconv.Itoa(nobody),
		"--cap-drop", "ALL", "--die-with-parent", "--as-pid-1", "--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr",
	}
	// Merged-/usr systems link these into /usr; others have them as
	// directories of their own.
	args = append(args, bwrap.HostDirs("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")...)
	return append(args,
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(e.opts.FileBytes, 10), "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--size", strconv.FormatInt(e.opts.FileBytes, 10), "--tmpfs", "/tmp",
		"--remount-ro", "/",
		"--chdir", "/tmp",
		"--clearenv",
		"--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
		"--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONIOENCODING", "utf-8",
	)
}

// limits are the resource limits the runner sets on itself before it runs
// the code, soft and hard alike so that the code cannot raise them: CPU
// seconds (SIGXCPU at the soft limit, SIGKILL a second later), address
// space, file size, processes and threads, open files, and no core dumps.
func (e *Executor) limits() [][]any {
	cpu := int64((e.opts.CPUTime + time.Second - 1) / time.Second)
	return [][]any{
		{"RLIMIT_CPU", cpu, cpu + 1},
		{"RLIMIT_AS", e.opts.MemoryBytes, e.opts.MemoryBytes},
		{"RLIMIT_FSIZE", e.opts.FileBytes, e.opts.FileBytes},
		{"RLIMIT_NPROC", e.opts.MaxProcesses, e.opts.MaxProcesses},
		{"RLIMIT_NOFILE", MaxOpenFiles, MaxOpenFiles},
		{"RLIMIT_CORE", 0, 0},
	}
}

// exitFailure explains a run that wrote no envelope: it was killed by a
// limit, or the interpreter itself failed.
func (e *Executor) exitFailure(waitErr error, log string) error {
	sig := syscall.Signal(0)
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				sig = ws.Signal()
			case ws.ExitStatus() > 128:
				// bwrap reports a child killed by a signal as 128 + its number.
				sig = syscall.Signal(ws.ExitStatus() - 128)
			}
		}
	}
	f := &tool.Failure{Detail: lastBytes(log, 4096)}
	switch {
	case sig == syscall.SIGXCPU:
		f.Message = fmt.Sprintf("the script used more than its %s of CPU time", e.opts.CPUTime)
	case sig == syscall.SIGKILL:
		f.Message = "the script was killed (it may have used more than its CPU time or memory)"
	case sig != 0:
		f.Message = fmt.Sprintf("the script was killed by signal %s", sig)
	case waitErr != nil:
		f.Message = fmt.Sprintf("the script ended without a result: %v", waitErr)
	default:
		f.Message = "the script ended without a result"
	}
	return f
}

// killGroup kills every process of the process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// awaitGroupGone waits, at most killWait, until no process of the group is
// left, not even an unreaped one, so that a caller seeing Run return knows
// the script is gone.
func awaitGroupGone(pgid int) {
	deadline := time.Now().Add(killWait)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// cappedReader reads one of a run's output pipes and keeps at most max
// bytes. Past that it either drops the rest (truncate) or closes overflowed,
// so that the run is killed: output over the cap is discarded, not cut.
type cappedReader struct {
	max        int
	truncate   bool
	buf        []byte
	overflowed chan struct{}
	r, w       *os.File
	finished   chan struct{}
}

// open makes the pipe and hands its write end to the command.
func (c *cappedReader) open(cmd *exec.Cmd, dst *io.Writer) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("python: pipe: %w", err)
	}
	c.r, c.w = r, w
	c.overflowed, c.finished = make(chan struct{}), make(chan struct{})
	*dst = w
	return nil
}

// start closes our copy of the write end, so that the reader sees EOF once
// the run's processes are gone, and starts reading.
func (c *cappedReader) start() {
	_ = c.w.Close()
	c.w = nil
	go func() {
		defer close(c.finished)
		chunk := make([]byte, 32<<10)
		for {
			n, err := c.r.Read(chunk)
			room := c.max - len(c.buf)
			switch {
			case n <= room:
				c.buf = append(c.buf, chunk[:n]...)
			case c.truncate:
				c.buf = append(c.buf, chunk[:room]...)
			default:
				close(c.overflowed)
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

// wait waits at most d for the reader to reach EOF; a process that escaped
// the group could hold the pipe open forever.
func (c *cappedReader) wait(d time.Duration) {
	select {
	case <-c.finished:
	case <-time.After(d):
		_ = c.r.Close()
		<-c.finished
	}
}

func (c *cappedReader) isOverflowed() bool {
	select {
	case <-c.overflowed:
		return true
	default:
		return false
	}
}

func (c *cappedReader) close() {
	if c.w != nil {
		_ = c.w.Close()
	}
	_ = c.r.Close()
}
