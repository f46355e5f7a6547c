package python

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
)

// errNoSandbox is a gate's answer when bwrap ended before it made its
// sandbox: bwrap's own exit and log say why.
var errNoSandbox = errors.New("python: bwrap ended before it started its sandbox")

// childPID finds the sandbox's process in what bwrap writes to --info-fd.
// bwrap writes the pid in one write of a few bytes, which a pipe delivers
// whole.
var childPID = regexp.MustCompile(`"child-pid"\s*:\s*(\d+)`)

// gate holds a sandbox back until its processes are in the run's cgroup:
// bwrap writes its sandbox's pid to the info pipe and waits to read a byte
// from the block pipe before it runs the script.
type gate struct {
	infoR, infoW   *os.File
	blockR, blockW *os.File
}

func openGate() (*gate, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("python: pipe: %w", err)
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		_ = infoR.Close()
		_ = infoW.Close()
		return nil, fmt.Errorf("python: pipe: %w", err)
	}
	return &gate{infoR: infoR, infoW: infoW, blockR: blockR, blockW: blockW}, nil
}

// release moves bwrap (pid) and its sandbox's process into cg and lets the
// sandbox go on. The caller kills the run when it fails.
func (g *gate) release(pid int, cg *runCgroup) error {
	// Our copies of the child's ends: EOF on the info pipe then means bwrap
	// is gone.
	_ = g.infoW.Close()
	_ = g.blockR.Close()
	g.infoW, g.blockR = nil, nil
	var info []byte
	chunk := make([]byte, 512)
	var match [][]byte
	for match == nil {
		n, err := g.infoR.Read(chunk)
		info = append(info, chunk[:n]...)
		match = childPID.FindSubmatch(info)
		if match == nil && err != nil {
			return errNoSandbox
		}
	}
	// bwrap writes more to the pipe later; it must not meet a closed one.
	go func() { _, _ = io.Copy(io.Discard, g.infoR) }()
	child, err := strconv.Atoi(string(match[1]))
	if err != nil {
		return fmt.Errorf("python: bwrap's child pid %q: %w", match[1], err)
	}
	if err := cg.join(pid, child); err != nil {
		return err
	}
	if _, err := g.blockW.Write([]byte{1}); err != nil {
		return fmt.Errorf("python: release the sandbox: %w", err)
	}
	return nil
}

// close closes what is left of the pipes; the info pipe's reader ends with
// it.
func (g *gate) close() {
	for _, f := range []*os.File{g.infoR, g.infoW, g.blockR, g.blockW} {
		if f != nil {
			_ = f.Close()
		}
	}
}
