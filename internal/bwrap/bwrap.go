// Package bwrap holds what the platform's bubblewrap sandboxes share: the
// probe of what the installed bwrap can do and the host directories every
// sandbox mounts read-only. Its users build their own options around
// these: internal/document (pdftoppm, tesseract) and internal/tool/python
// (python_code_tool).
package bwrap

import (
	"bytes"
	"context"
	"os"
	"os/exec"
)

// DisablesUserns reports whether the bwrap at path knows --disable-userns
// (0.8.0 and later), with which a sandbox cannot create user namespaces of
// its own.
func DisablesUserns(ctx context.Context, path string) bool {
	out, _ := exec.CommandContext(ctx, path, "--help").Output()
	return bytes.Contains(out, []byte("--disable-userns"))
}

// HostDirs are the options that mount the host's dirs read-only at the
// same paths: a dir that is a symbolic link (merged-/usr systems link
// /bin, /lib, … into /usr) becomes the same link, a real one a read-only
// bind; a dir the host lacks is left out.
func HostDirs(dirs ...string) []string {
	var args []string
	for _, dir := range dirs {
		if target, err := os.Readlink(dir); err == nil {
			args = append(args, "--symlink", target, dir)
		} else if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			args = append(args, "--ro-bind", dir, dir)
		}
	}
	return args
}
