package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/console"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
	"github.com/appruntime/appruntime/worker"
)

// devSecrets are the dev mode's keys and demo credentials, generated once and
// kept in .appruntime/secrets.json so that a restart keeps sessions, logins
// and tokens valid.
type devSecrets struct {
	SessionKey string `json:"session_key"`
	SecretsKey string `json:"secrets_key"`
	ConsoleKey string `json:"console_key"`
	demo.Secrets
}

// devInfo is what dev prints and writes to .appruntime/dev.json.
type devInfo struct {
	APIURL           string `json:"api_url"`
	ConsoleURL       string `json:"console_url"`
	AdminEmail       string `json:"admin_email"`
	AdminPassword    string `json:"admin_password"`
	HostToken        string `json:"host_token"`
	AgentToken       string `json:"agent_token"`
	AdminToken       string `json:"admin_token"`
	WebhookSecret    string `json:"webhook_secret"`
	WorkspaceID      string `json:"workspace_id"`
	AgentID          string `json:"agent_id"`
	BindingID        string `json:"binding_id"`
	BundleID         string `json:"bundle_id"`
	ConfiguredToolID string `json:"configured_tool_id"`
	TaskID           string `json:"task_id"`
	StepID           string `json:"step_id"`
	DatabaseURL      string `json:"database_url"`
	RedisURL         string `json:"redis_url"`
}

func runDev(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("dev", flag.ContinueOnError)
	dir := flags.String("dir", ".appruntime", "where the dev database, secrets and dev.json live")
	if err := flags.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(config.RoleDev)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", *dir, err)
	}
	secrets, err := loadDevSecrets(filepath.Join(*dir, "secrets.json"))
	if err != nil {
		return err
	}
	if err := applyDevDefaults(cfg, *dir, secrets); err != nil {
		return err
	}
	log := newLogger(cfg)

	if cfg.RedisURL == "" {
		embedded, err := rdb.StartEmbedded()
		if err != nil {
			return err
		}
		defer embedded.Close()
		cfg.RedisURL = embedded.URL
		log.Info("dev: using in-process Redis", "addr", embedded.URL)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{})
	if err != nil {
		return err
	}
	migrated, err := migrateDev(ctx, st)
	_ = st.Close()
	if err != nil {
		return err
	}
	if migrated != "" {
		fmt.Println(migrated)
		log.Info("dev: " + migrated)
	}

	stopTracing, err := startTracing(ctx, cfg, config.RoleDev, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	p, closePlatform, err := openPlatform(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closePlatform()
	// The demo's data source is a SQLite file even when DATABASE_URL is
	// Postgres; the seed lets the data sources open that file, and no other.
	seeded, err := demo.Seed(ctx, p, secrets.Secrets, filepath.Join(*dir, "demo-data.db"))
	if err != nil {
		return err
	}

	apiLn, err := web.Listen(cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("api: %w (set API_ADDR to use another port)", err)
	}
	consoleLn, err := web.Listen(cfg.ConsoleAddr)
	if err != nil {
		_ = apiLn.Close()
		return fmt.Errorf("console: %w (set CONSOLE_ADDR to use another port)", err)
	}
	if len(cfg.OperatorUserIDs) == 0 {
		// The demo's admin runs this one-machine deployment: its operator.
		cfg.OperatorUserIDs = []string{seeded.AdminUserID}
	}
	consoleApp, err := console.New(p.ConsoleServices())
	if err != nil {
		return err
	}
	info := devInfo{
		APIURL: cfg.PublicAPIURL, ConsoleURL: cfg.ConsoleURL,
		AdminEmail: demo.AdminEmail, AdminPassword: secrets.AdminPassword,
		HostToken: secrets.HostToken, AgentToken: secrets.AgentToken, AdminToken: secrets.AdminToken,
		WebhookSecret: standardWebhookSecret(secrets.WebhookSecret),
		WorkspaceID:   seeded.WorkspaceID, AgentID: seeded.AgentID, BindingID: seeded.BindingID, BundleID: seeded.BundleID,
		ConfiguredToolID: seeded.ConfiguredToolID, TaskID: seeded.TaskID, StepID: seeded.StepID,
		DatabaseURL: cfg.DatabaseURL, RedisURL: cfg.RedisURL,
	}
	if err := writeJSON(filepath.Join(*dir, "dev.json"), info, 0o600); err != nil {
		return err
	}
	printDevInfo(info, filepath.Join(*dir, "dev.json"))

	stopMetrics, err := startMetrics(ctx, p)
	if err != nil {
		return err
	}
	defer func() { _ = stopMetrics() }()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return ignoreClosed(web.Serve(gctx, api.New(p.APIServices()), apiLn, cfg.ShutdownTimeout))
	})
	g.Go(func() error { return ignoreClosed(web.Serve(gctx, consoleApp, consoleLn, cfg.ShutdownTimeout)) })
	g.Go(func() error { return worker.New(p.WorkerServices()).Run(gctx) })
	err = g.Wait()
	log.Info("dev: stopped")
	return err
}

// migrateDev brings the dev database up to this binary's schema. On a
// database an older version made it returns the line that says so (from
// which version to which, how many migrations); on a fresh or current one,
// "".
func migrateDev(ctx context.Context, st *store.Store) (string, error) {
	before, err := st.SchemaVersion(ctx)
	if err != nil {
		return "", err
	}
	applied, err := st.Migrate(ctx)
	if err != nil {
		return "", fmt.Errorf("dev: migrate the existing database (delete the .appruntime directory to start afresh): %w", err)
	}
	if before == 0 || len(applied) == 0 {
		return "", nil
	}
	return fmt.Sprintf("Migrated the dev database from an older version: schema %d -> %d (%d migrations applied); your data is kept.",
		before, applied[len(applied)-1], len(applied)), nil
}

// applyDevDefaults fills what the environment left unset with embedded
// defaults: a SQLite file and the generated keys. Redis is filled by the caller.
func applyDevDefaults(cfg *config.Config, dir string, s devSecrets) error {
	if cfg.BlobDir == "" && cfg.BlobURL == "" {
		cfg.BlobDir = filepath.Join(dir, "blobs")
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = "sqlite:" + filepath.Join(dir, "dev.db")
	}
	decode := func(v string) []byte {
		b, _ := base64.StdEncoding.DecodeString(v)
		return b
	}
	if len(cfg.SessionKeys) == 0 {
		cfg.SessionKeys = []config.Key{{ID: "dev", Secret: decode(s.SessionKey)}}
	}
	if cfg.SecretsKey == nil {
		cfg.SecretsKey = decode(s.SecretsKey)
	}
	if cfg.ConsoleKey == nil {
		cfg.ConsoleKey = decode(s.ConsoleKey)
	}
	if len(cfg.SessionKeys[0].Secret) < config.MinKeyBytes || len(cfg.SecretsKey) < config.MinKeyBytes || len(cfg.ConsoleKey) < config.MinKeyBytes {
		return errors.New("dev: the keys in secrets.json are damaged; delete the .appruntime directory to start afresh")
	}
	return nil
}

func loadDevSecrets(path string) (devSecrets, error) {
	var s devSecrets
	raw, err := os.ReadFile(path)
	if err == nil {
		if err := json.Unmarshal(raw, &s); err != nil {
			return s, fmt.Errorf("read %s: %w (delete it to start afresh)", path, err)
		}
		return s, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	s = devSecrets{
		SessionKey: randomKey(), SecretsKey: randomKey(), ConsoleKey: randomKey(),
		Secrets: demo.Secrets{
			AdminPassword: base64.RawURLEncoding.EncodeToString(randomBytes(12)),
			HostToken:     auth.NewTokenSecret(models.ScopeHost),
			AgentToken:    auth.NewTokenSecret(models.ScopeAgent),
			AdminToken:    auth.NewTokenSecret(models.ScopeAdmin),
			WebhookSecret: base64.RawURLEncoding.EncodeToString(randomBytes(32)),
		},
	}
	return s, writeJSON(path, s, 0o600)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

func randomKey() string { return base64.StdEncoding.EncodeToString(randomBytes(32)) }

func writeJSON(path string, v any, mode os.FileMode) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

func printDevInfo(i devInfo, jsonPath string) {
	fmt.Printf(`
appruntime dev is running (Ctrl-C stops it)

  API        %s
  Console    %s   login %s / %s

  host token    %s
  agent token   %s
  admin token   %s

  workspace %s   agent %s
  configured tool %s   task %s   step %s

Review the demo in the browser (sign in to the console, then press Open artifact):
  %s/tasks/%s/steps/%s/artifact

Mint a session for the demo step:
  curl -s -X POST %s/api/app-tools/sessions -H 'Authorization: Bearer %s' \
       -H 'Content-Type: application/json' -d '{"step_id":"%s"}'

All of this is in %s.

`, i.APIURL, i.ConsoleURL, i.AdminEmail, i.AdminPassword, i.HostToken, i.AgentToken, i.AdminToken,
		i.WorkspaceID, i.AgentID, i.ConfiguredToolID, i.TaskID, i.StepID,
		i.ConsoleURL, i.TaskID, i.StepID,
		i.APIURL, i.HostToken, i.StepID, jsonPath)
}

// standardWebhookSecret is the Standard Webhooks form ("whsec_…") of the
// demo agent's webhook secret, which the seed stores as a chosen (legacy)
// string: what a receiver verifying with a Standard Webhooks library
// configures.
func standardWebhookSecret(chosen string) string {
	s, err := webhook.FromLegacy([]byte(chosen))
	if err != nil {
		return ""
	}
	return s.String()
}
