package console

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// copyTemplates returns the embedded templates as a map file system a test can break.
func copyTemplates(t *testing.T) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(templateFS, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(templateFS, path)
		out[path] = &fstest.MapFile{Data: raw}
		return err
	})
	require.NoError(t, err)
	return out
}

func TestEveryPageParses(t *testing.T) {
	t.Parallel()
	p, err := parsePages(templateFS)
	require.NoError(t, err)
	require.Len(t, p.byName, len(pageNames))
	for _, name := range pageNames {
		require.NotNil(t, p.byName[name].Lookup("content"), name)
	}
}

func TestBrokenTemplatesStopTheStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		corrupt func(fstest.MapFS)
		want    string
	}{
		{"missing page", func(m fstest.MapFS) { delete(m, "templates/task.html") }, `page "task"`},
		{"missing layout", func(m fstest.MapFS) { delete(m, "templates/layout.html") }, "layout template"},
		{"page does not parse", func(m fstest.MapFS) {
			m["templates/audit.html"] = &fstest.MapFile{Data: []byte(`{{define "content"}}{{if .X}}{{end}`)}
		}, "parse templates/audit.html"},
		{"layout does not parse", func(m fstest.MapFS) {
			m["templates/layout.html"] = &fstest.MapFile{Data: []byte(`{{template "content" .}`)}
		}, "parse templates/layout.html"},
		{"page defines no content", func(m fstest.MapFS) {
			m["templates/users.html"] = &fstest.MapFile{Data: []byte(`{{define "body"}}x{{end}}`)}
		}, `templates/users.html defines no "content" template`},
		{"unknown function", func(m fstest.MapFS) {
			m["templates/tools.html"] = &fstest.MapFile{Data: []byte(`{{define "content"}}{{nosuch .}}{{end}}`)}
		}, "parse templates/tools.html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := copyTemplates(t)
			tc.corrupt(m)
			_, err := parsePages(m)
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), tc.want), err.Error())
		})
	}
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/tasks?status=failed": "/tasks?status=failed",
		"/":                    "/",
		"":                     "/",
		"tasks":                "/",
		"//evil.example":       "/",
		"/\\evil.example":      "/",
		"https://evil.example": "/",
		"/x\r\nSet-Cookie: a":  "/",
	} {
		require.Equal(t, want, safeNext(in), in)
	}
}

func TestShortID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "e57d681c6cbd", shortID("01a228fe-8ddf-7b6e-ae4e-e57d681c6cbd"))
	require.Equal(t, "plain", shortID("plain"))
}

func TestAge(t *testing.T) {
	t.Parallel()
	require.Equal(t, "<1m", age(30e9))
	require.Equal(t, "12m", age(12*60e9))
	require.Equal(t, "3h 5m", age((3*60+5)*60e9))
	require.Equal(t, "2d 4h", age((52)*3600e9))
}
