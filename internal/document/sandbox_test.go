package document

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bwrap"
)

// TestToolsRunWhereNoUserNamespaceCanBeMade: where bwrap can start a
// sandbox and knows --disable-userns, the renderers run in one that
// cannot make a user namespace of its own (the nested namespaces a kernel
// exploit would start from), as python_code_tool's does.
func TestToolsRunWhereNoUserNamespaceCanBeMade(t *testing.T) {
	t.Parallel()
	args, ok := sandboxed()
	if !ok {
		require.Empty(t, os.Getenv("CI"), "bwrap cannot start a sandbox on this machine")
		t.Skip("bwrap cannot start a sandbox here")
	}
	ctx := context.Background()
	if !bwrap.DisablesUserns(ctx, "bwrap") {
		t.Skip("the installed bwrap is older than 0.8.0")
	}
	require.Contains(t, args, "--disable-userns")
	_, err := runTool(ctx, "making a user namespace", 10*time.Second, nil, "util-linux", "unshare", "--user", "true")
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "unshare failed")
	out, err := runTool(ctx, "listing /", 10*time.Second, nil, "coreutils", "ls", "/")
	require.NoError(t, err, "the sandbox runs a program that makes none")
	require.Contains(t, string(out), "usr")
}
