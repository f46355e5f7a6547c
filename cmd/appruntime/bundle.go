package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/appruntime/appruntime/internal/bindingspec"
)

const bundleUsage = `usage: appruntime bundle types --binding ID [--api URL] [--out FILE]
       appruntime bundle types --spec FILE [--out FILE]
       appruntime bundle dev [--file NAME] [--step ID] [--addr HOST:PORT] DIR

Writes a TypeScript declaration module of a binding's read, write, action,
run and capability ops, with their payload and result shapes, for the SDK
(@appruntime/sdk): connect<Ops>() then refuses a misspelled op or key at
compile time. See docs/bundle-authors.md#types-for-a-bindings-ops.

  --binding ID  the binding, read through the admin API (GET
                /api/admin/bindings/ID) with the admin token in
                APPRUNTIME_ADMIN_TOKEN; without it, that of a local
                appruntime dev (--dev-dir/dev.json), whose API URL is then the
                default too
  --spec FILE   a binding as that endpoint answers it, or its
                allowed_operations document alone; no API is asked
  --api URL     the API's base URL (default: dev.json's, else
                http://127.0.0.1:8080)
  --dev-dir DIR where appruntime dev keeps dev.json (default .appruntime)
  --out FILE    where to write (default: standard output)
`

// adminTokenEnv names the environment variable `appruntime bundle types`
// reads the admin token from: a token on the command line would be left in
// the shell's history and the process list.
const adminTokenEnv = "APPRUNTIME_ADMIN_TOKEN"

// Budgets of one `bundle types` fetch: a binding document is small (its
// allowed_operations are capped when saved), and an API that does not answer
// within seconds is better reported than waited for.
const (
	bindingFetchTimeout  = 30 * time.Second
	maxBindingReplyBytes = 4 << 20
)

// runBundle runs `appruntime bundle types` and `appruntime bundle dev`.
func runBundle(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "dev" {
		return runBundleDev(ctx, args[1:])
	}
	if len(args) == 0 || args[0] != "types" {
		fmt.Fprint(os.Stderr, bundleUsage)
		return errUsage
	}
	flags := flag.NewFlagSet("bundle types", flag.ContinueOnError)
	flags.Usage = func() { fmt.Fprint(os.Stderr, bundleUsage) }
	bindingID := flags.String("binding", "", "")
	specFile := flags.String("spec", "", "")
	apiURL := flags.String("api", "", "")
	devDir := flags.String("dev-dir", ".appruntime", "")
	outFile := flags.String("out", "", "")
	if err := flags.Parse(args[1:]); err != nil || flags.NArg() > 0 || (*bindingID == "") == (*specFile == "") {
		if err == nil {
			fmt.Fprint(os.Stderr, bundleUsage)
		}
		return errUsage
	}

	var (
		b   bindingDocument
		err error
	)
	if *specFile != "" {
		b, err = readBindingFile(*specFile)
	} else {
		b, err = fetchBinding(ctx, *bindingID, *apiURL, *devDir)
	}
	if err != nil {
		return err
	}
	header := "Ops of binding " + b.describe() + ", written by `appruntime bundle types`.\n" +
		"Regenerate it when the binding changes: docs/bundle-authors.md#types-for-a-bindings-ops"
	out := bindingspec.TypeScript(b.Spec, header)
	if *outFile == "" {
		_, err = io.WriteString(os.Stdout, out)
		return err
	}
	return os.WriteFile(*outFile, []byte(out), 0o644)
}

// bindingDocument is what `bundle types` needs of a binding.
type bindingDocument struct {
	ID, Name string
	Version  int
	Spec     bindingspec.Spec
}

func (b bindingDocument) describe() string {
	switch {
	case b.ID == "":
		return "(from a file)"
	case b.Name == "":
		return fmt.Sprintf("%s, version %d", b.ID, b.Version)
	}
	return fmt.Sprintf("%q (%s, version %d)", b.Name, b.ID, b.Version)
}

// decodeBindingDocument reads a binding as GET /api/admin/bindings/{id}
// answers it, or a bare allowed_operations document.
func decodeBindingDocument(raw []byte) (bindingDocument, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return bindingDocument{}, fmt.Errorf("not a binding: %w", err)
	}
	var b bindingDocument
	ops := raw
	if inner, ok := top["allowed_operations"]; ok {
		var head struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			Version int    `json:"version"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return bindingDocument{}, fmt.Errorf("not a binding: %w", err)
		}
		b.ID, b.Name, b.Version, ops = head.ID, head.Name, head.Version, inner
	}
	if err := bindingspec.DecodeStored(ops, &b.Spec); err != nil {
		return bindingDocument{}, err
	}
	return b, nil
}

func readBindingFile(path string) (bindingDocument, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return bindingDocument{}, err
	}
	b, err := decodeBindingDocument(raw)
	if err != nil {
		return bindingDocument{}, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// fetchBinding reads binding id through the admin API, with the token of
// adminTokenEnv or of the local dev's dev.json.
func fetchBinding(ctx context.Context, id, apiURL, devDir string) (bindingDocument, error) {
	token := os.Getenv(adminTokenEnv)
	var dev struct {
		APIURL     string `json:"api_url"`
		AdminToken string `json:"admin_token"`
	}
	if raw, err := os.ReadFile(filepath.Join(devDir, "dev.json")); err == nil {
		_ = json.Unmarshal(raw, &dev) // a dev.json that does not parse offers nothing
	}
	if token == "" {
		token = dev.AdminToken
	}
	if token == "" {
		return bindingDocument{}, fmt.Errorf("no admin token: set %s (or run it beside an appruntime dev's %s)", adminTokenEnv, filepath.Join(devDir, "dev.json"))
	}
	if apiURL == "" {
		apiURL = dev.APIURL
	}
	if apiURL == "" {
		apiURL = "http://127.0.0.1:8080"
	}
	base, err := url.Parse(apiURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return bindingDocument{}, fmt.Errorf("--api %q is not an http(s) URL", apiURL)
	}
	var raw json.RawMessage
	target := strings.TrimRight(apiURL, "/") + "/api/admin/bindings/" + url.PathEscape(id)
	if err := apiCall(ctx, http.MethodGet, target, token, "", nil, &raw); err != nil {
		return bindingDocument{}, fmt.Errorf("fetch binding %s: %w", id, err)
	}
	b, err := decodeBindingDocument(raw)
	if err != nil {
		return bindingDocument{}, fmt.Errorf("fetch binding %s: %w", id, err)
	}
	if b.ID == "" {
		return bindingDocument{}, errors.New("fetch binding " + id + ": the reply is not a binding")
	}
	return b, nil
}

// apiErrorMessage is the message of an API error reply (either envelope),
// or its first bytes.
func apiErrorMessage(raw []byte) string {
	var v1 struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &v1) == nil && len(v1.Error) > 0 {
		var msg string
		if json.Unmarshal(v1.Error, &msg) == nil {
			return msg
		}
		var v2 struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v1.Error, &v2) == nil && v2.Message != "" {
			return v2.Message
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
