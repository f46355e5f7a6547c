package bwrap_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bwrap"
)

// TestHostDirs: a linked dir is the same link in the sandbox, a real one a
// read-only bind, a missing one nothing.
func TestHostDirs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real, link := filepath.Join(root, "usrlib"), filepath.Join(root, "lib")
	require.NoError(t, os.Mkdir(real, 0o755))
	require.NoError(t, os.Symlink("usrlib", link))
	require.Equal(t, []string{"--symlink", "usrlib", link, "--ro-bind", real, real},
		bwrap.HostDirs(link, real, filepath.Join(root, "missing")))
}
