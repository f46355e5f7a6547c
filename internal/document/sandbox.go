package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bwrap"
)

// Bounds of one run of a page renderer (pdftoppm) or of OCR (tesseract):
// each runs as a subprocess in a bubblewrap sandbox (no network, no
// writable file system but a small /tmp, an empty environment) under
// rlimits set by prlimit, and is killed past its wall time.
const (
	// MaxToolMemory is the address space of one run.
	MaxToolMemory = 1 << 30
	// MaxToolOutputBytes caps what one run may print (an image or OCR's
	// TSV): past it the run is killed and refused.
	MaxToolOutputBytes = 32 << 20
	// MaxRenderWork is the wall time one page's rendering may take.
	MaxRenderWork = 20 * time.Second
	// MaxOCRWork is the wall time one page's OCR may take: tesseract
	// reads a page in 2-5 s on an idle core.
	MaxOCRWork = 60 * time.Second
)

// The sandbox is probed once: where bwrap cannot start one (dev mode on a
// machine without user namespaces) the tools run without it, prlimit and
// the timeout still bounding them.
var (
	sandboxOnce sync.Once
	sandboxOK   bool
	sandboxArgs []string
)

// sandboxed returns bwrap's options when bwrap can start a sandbox on this
// machine (ok false when it cannot), probed once.
func sandboxed() (args []string, ok bool) {
	sandboxOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sandboxArgs = bwrapArgs(bwrap.DisablesUserns(ctx, "bwrap"))
		cmd := exec.CommandContext(ctx, "bwrap", append(sandboxArgs, "/usr/bin/true")...)
		sandboxOK = cmd.Run() == nil
	})
	return sandboxArgs, sandboxOK
}

// bwrapArgs are the sandbox's options: every namespace unshared (and no
// user namespace creatable inside, where bwrap knows how), /usr and the
// fonts' configuration read-only, a 64 MiB /tmp, no environment.
func bwrapArgs(disableUserns bool) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session"}
	if disableUserns {
		args = append(args, "--unshare-user", "--disable-userns")
	}
	args = append(append(args, "--ro-bind", "/usr", "/usr"), bwrap.HostDirs("/bin", "/sbin", "/lib", "/lib64", "/etc/fonts")...)
	return append(args, "--proc", "/proc", "--dev", "/dev", "--size", strconv.Itoa(64<<20), "--tmpfs", "/tmp",
		"--chdir", "/tmp", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "OMP_THREAD_LIMIT", "1")
}

// Admission is asked before each subprocess starts, with the work's wall
// time, for a slot to run it in (limit.WorkGate: the process's and the
// workspace's bounds); it returns the func that frees the slot, or the
// refusal, which the run returns as is.
type Admission func(ctx context.Context, work time.Duration) (release func(), err error)

type admissionKey struct{}

// WithAdmission returns ctx carrying admit, which every page rendering and
// OCR run under ctx goes through first; the caller that knows whose
// document it is (internal/capability) sets it.
func WithAdmission(ctx context.Context, admit Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, admit)
}

// admit takes ctx's admission for a run of at most work; a context
// without one admits at once.
func admit(ctx context.Context, work time.Duration) (release func(), err error) {
	if a, ok := ctx.Value(admissionKey{}).(Admission); ok && a != nil {
		return a(ctx, work)
	}
	return func() {}, nil
}

// runTool runs the program argv under the sandbox and rlimits with input
// on its standard input, for at most work, once ctx's Admission let it
// start, and returns its standard output. what names the work in errors ("rendering page 3"). A run past
// its time or output cap is an over_budget error; a tool that is not
// installed is a not_implemented error saying which Debian package brings it.
func runTool(ctx context.Context, what string, work time.Duration, input []byte, pkg string, argv ...string) ([]byte, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, apperr.New(apperr.NotImplemented, "%s needs %s (Debian package %s), which is not installed on this worker", what, argv[0], pkg)
	}
	release, err := admit(ctx, work)
	if err != nil {
		return nil, err
	}
	defer release()
	cpu := strconv.Itoa(int(work/time.Second) + 1)
	limited := append([]string{"prlimit", "--as=" + strconv.Itoa(MaxToolMemory), "--cpu=" + cpu,
		"--fsize=" + strconv.Itoa(MaxToolOutputBytes), "--core=0", "--nofile=64", "--"}, argv...)
	if args, ok := sandboxed(); ok {
		limited = append(append([]string{"bwrap"}, args...), limited...)
	}
	wctx, cancel := context.WithTimeout(ctx, work)
	defer cancel()
	cmd := exec.CommandContext(wctx, limited[0], limited[1:]...)
	cmd.Stdin = bytes.NewReader(input)
	out := &cappedBuffer{limit: MaxToolOutputBytes}
	var stderr cappedBuffer
	stderr.limit = 4 << 10
	cmd.Stdout, cmd.Stderr = out, &stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, apperr.Wrap(ctx.Err(), apperr.Timeout, "%s was stopped", what)
	case wctx.Err() != nil:
		return nil, apperr.New(apperr.OverBudget, "%s took more than %s, the most it may take", what, work)
	case out.over:
		return nil, apperr.New(apperr.OverBudget, "%s wrote more than %s", what, mib(MaxToolOutputBytes))
	case err != nil:
		var exit *exec.ExitError
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > maxReasonBytes {
			msg = strings.ToValidUTF8(msg[:maxReasonBytes], "") + "…"
		}
		if errors.As(err, &exit) && !exit.Exited() {
			// Killed by a signal: the CPU or memory rlimit.
			return nil, apperr.New(apperr.OverBudget, "%s passed its CPU time or %s of memory (%s)", what, mib(MaxToolMemory), msg)
		}
		if strings.Contains(msg, "ould not allocate") || strings.Contains(msg, "bad_alloc") || strings.Contains(msg, "Out of memory") {
			return nil, apperr.New(apperr.OverBudget, "%s passed %s of memory", what, mib(MaxToolMemory))
		}
		return nil, apperr.Wrap(fmt.Errorf("%s: %w: %s", argv[0], err, msg), apperr.Invalid, "%s failed: %s", what, msg)
	}
	return out.Bytes(), nil
}

// cappedBuffer keeps up to limit bytes and then fails the writes, which
// ends the writer with a broken pipe.
type cappedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.limit {
		c.over = true
		return 0, io.ErrShortWrite
	}
	return c.Buffer.Write(p)
}
