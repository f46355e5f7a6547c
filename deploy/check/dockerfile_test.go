package check

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/opencontainers/go-digest"
)

// lintDockerfile runs BuildKit's build checks over every stage, as
// `docker build --check` does, and returns one line per warning.
func lintDockerfile(t *testing.T, dt []byte) []string {
	t.Helper()
	src := llb.NewSourceMap(nil, "Dockerfile", "Dockerfile", dt)
	src.Definition = &llb.Definition{}
	res, err := dockerfile2llb.DockerfileLint(context.Background(), dt, dockerfile2llb.ConvertOpt{
		SourceMap:    src,
		MetaResolver: offlineImages{},
	})
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	if res.Error != nil {
		t.Fatalf("lint: %s", res.Error.Message)
	}
	var out []string
	for _, w := range res.Warnings {
		line := int32(0)
		if w.Location != nil && len(w.Location.Ranges) > 0 {
			line = w.Location.Ranges[0].Start.Line
		}
		out = append(out, fmt.Sprintf("%s: %s (line %d)", w.RuleName, w.Detail, line))
	}
	return out
}

// offlineImages answers every base image with an empty config: the checks
// run without a registry (none is reachable from every build machine), so
// rules that read a base image's config (its ENV, for UndefinedVar) see
// none.
type offlineImages struct{}

func (offlineImages) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return ref, digest.FromString(ref), []byte(`{"architecture":"amd64","os":"linux","config":{}}`), nil
}

// TestDockerfile: the repository's Dockerfile passes every build check, and
// each final stage runs as a non-root user and carries the OCI labels.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	dt, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if w := lintDockerfile(t, dt); len(w) > 0 {
		t.Fatalf("build checks failed:\n%s", strings.Join(w, "\n"))
	}
	ast, err := parser.Parse(bytes.NewReader(dt))
	if err != nil {
		t.Fatal(err)
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		t.Fatal(err)
	}
	finals := map[string]bool{"runtime": false, "script-worker": false}
	for _, st := range stages {
		if _, ok := finals[st.Name]; !ok {
			continue
		}
		finals[st.Name] = true
		var user string
		labels := map[string]bool{}
		for _, cmd := range st.Commands {
			switch c := cmd.(type) {
			case *instructions.UserCommand:
				user = c.User
			case *instructions.LabelCommand:
				for _, kv := range c.Labels {
					labels[kv.Key] = true
				}
			}
		}
		if user == "" || user == "root" || strings.HasPrefix(user, "0") {
			t.Errorf("stage %s: runs as %q, want a non-root USER", st.Name, user)
		}
		for _, l := range []string{"org.opencontainers.image.title", "org.opencontainers.image.source", "org.opencontainers.image.version", "org.opencontainers.image.revision"} {
			if !labels[l] {
				t.Errorf("stage %s: no %s label", st.Name, l)
			}
		}
	}
	for name, seen := range finals {
		if !seen {
			t.Errorf("no stage named %s", name)
		}
	}
}

// TestLintCatches: the checks fail a Dockerfile with known faults, so a
// passing TestDockerfile means something.
func TestLintCatches(t *testing.T) {
	t.Parallel()
	bad := []byte("FROM alpine:3.22 as build\nFROM alpine:3.22 AS Final\nENV A=$UNDEFINED_THING\nCMD echo hi\n")
	w := lintDockerfile(t, bad)
	joined := strings.Join(w, "\n")
	for _, rule := range []string{"FromAsCasing", "StageNameCasing", "UndefinedVar", "JSONArgsRecommended"} {
		if !strings.Contains(joined, rule) {
			t.Errorf("no %s warning in:\n%s", rule, joined)
		}
	}
}
