package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// Integration kinds.
const (
	KindPostgres = "postgres" // a data source (and postgres_execute_query); secrets.dsn
	KindREST     = "rest"     // an upstream for http_calls; base_url
	KindMSSQL    = "mssql"    // mssql_execute_query; secrets.dsn
	KindSQLite   = "sqlite"   // dev only: the demo data source; secrets.dsn is a file path
	// KindComponent is an agent tool's app target (seed 003): base_url, and
	// secrets.env, an object of NAME → string that ${env.NAME} references.
	KindComponent = "component"
)

// IntegrationKinds are the kinds an integration may have.
var IntegrationKinds = []string{KindPostgres, KindREST, KindMSSQL, KindSQLite, KindComponent}

// dsnKinds are the kinds that connect with secrets.dsn.
var dsnKinds = []string{KindPostgres, KindMSSQL, KindSQLite}

// MaxSecrets bounds how many secret keys one integration holds.
const MaxSecrets = 32

// IntegrationInput is an integration as the admin API takes it. Secrets are
// write-only: a create stores them; an update merges them key by key (a key
// set to null is removed) and never needs the old values.
type IntegrationInput struct {
	Name    string                     `json:"name"`
	Kind    string                     `json:"kind"`
	BaseURL string                     `json:"base_url,omitempty"`
	Config  json.RawMessage            `json:"config,omitempty"`
	Secrets map[string]json.RawMessage `json:"secrets,omitempty"`
}

// IntegrationView is an integration as the admin API shows it: the names of
// the secrets that are set, never their values.
type IntegrationView struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Kind       string          `json:"kind"`
	BaseURL    string          `json:"base_url"`
	Config     json.RawMessage `json:"config"`
	SecretsSet []string        `json:"secrets_set"`
	DevOnly    bool            `json:"dev_only"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

func (s *Service) integrationView(i models.Integration) (IntegrationView, error) {
	secrets, err := s.secretsOf(i)
	if err != nil {
		return IntegrationView{}, err
	}
	names := make([]string, 0, len(secrets))
	for k := range secrets {
		names = append(names, k)
	}
	slices.Sort(names)
	cfg := json.RawMessage(i.Config)
	if len(cfg) == 0 {
		cfg = json.RawMessage(`{}`)
	}
	return IntegrationView{
		ID: i.ID, Name: i.Name, Kind: i.Kind, BaseURL: i.BaseURL, Config: cfg, SecretsSet: names,
		DevOnly: i.Kind == KindSQLite, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt,
	}, nil
}

func (s *Service) secretsOf(i models.Integration) (map[string]json.RawMessage, error) {
	secrets := map[string]json.RawMessage{}
	if err := s.open(i.SecretsEnc, &secrets); err != nil {
		return nil, fmt.Errorf("admin: open secrets of integration %s: %w", i.ID, err)
	}
	return secrets, nil
}

// checkIntegration validates in onto i; secrets are the merged secrets the
// integration will hold.
func (s *Service) checkIntegration(i *models.Integration, in IntegrationInput, secrets map[string]json.RawMessage) error {
	var err error
	if i.Name, err = field.Name(in.Name, "name", MaxNameLength); err != nil {
		return err
	}
	switch {
	case in.Kind == "":
		return apperr.Invalidf("kind is required")
	case !slices.Contains(IntegrationKinds, in.Kind):
		return apperr.Invalidf("kind %q must be one of %s", in.Kind, strings.Join(IntegrationKinds, ", "))
	case in.Kind == KindSQLite && s.checkSQLite == nil:
		return apperr.Invalidf("kind sqlite is for the embedded dev mode only")
	}
	i.Kind = in.Kind
	if i.BaseURL, err = checkHTTPURL(in.BaseURL, "base_url", in.Kind != KindREST && in.Kind != KindComponent); err != nil {
		return err
	}
	cfg, err := strictjson.Object(in.Config, "config")
	if err != nil {
		return err
	}
	i.Config = nil
	if cfg != nil {
		i.Config = models.JSON(in.Config)
	}
	if len(secrets) > MaxSecrets {
		return apperr.Invalidf("secrets has %d keys; at most %d are allowed", len(secrets), MaxSecrets)
	}
	for k, v := range secrets {
		if strings.TrimSpace(k) == "" || len(k) > 100 {
			return apperr.Invalidf("secrets keys must be 1 to 100 characters")
		}
		if !json.Valid(v) {
			return apperr.Invalidf("secrets.%s is not valid JSON", k)
		}
	}
	if in.Kind == KindComponent {
		if err := checkComponentEnv(secrets["env"]); err != nil {
			return err
		}
	}
	if slices.Contains(dsnKinds, in.Kind) {
		var dsn string
		if err := json.Unmarshal(secrets["dsn"], &dsn); err != nil || strings.TrimSpace(dsn) == "" {
			return apperr.Invalidf("secrets.dsn (a string) is required for a %s integration", in.Kind)
		}
		switch in.Kind {
		case KindPostgres:
			if err := datasource.CheckPostgresDSN(dsn); err != nil {
				_, _, reason := apperr.Public(err)
				return apperr.Invalidf("secrets.dsn: %s", reason)
			}
		case KindSQLite:
			return s.checkSQLite(dsn)
		}
	}
	return nil
}

// checkDSNServer connects once to a postgres integration's DSN, as its data
// sources and SQL tools will, and refuses (400) a server or role they would
// refuse once connected (Options.CheckPostgresFunc). A server it cannot
// reach does not stop the save. secrets passed checkIntegration.
func (s *Service) checkDSNServer(ctx context.Context, kind string, secrets map[string]json.RawMessage) error {
	if kind != KindPostgres || s.checkServer == nil {
		return nil
	}
	var dsn string
	if err := json.Unmarshal(secrets["dsn"], &dsn); err != nil {
		return apperr.Invalidf("secrets.dsn (a string) is required for a %s integration", kind)
	}
	if err := s.checkServer(ctx, dsn); err != nil {
		code, _, reason := apperr.Public(err)
		if code == apperr.Invalid {
			return apperr.Wrap(err, apperr.Invalid, "secrets.dsn: %s", reason)
		}
		return err
	}
	return nil
}

// ListIntegrations returns the workspace's integrations by name.
func (s *Service) ListIntegrations(ctx context.Context, workspaceID string) ([]IntegrationView, error) {
	var rows []models.Integration
	if err := s.st.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("name, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("admin: list integrations: %w", err)
	}
	out := make([]IntegrationView, 0, len(rows))
	for _, i := range rows {
		v, err := s.integrationView(i)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// GetIntegration returns an integration of the workspace.
func (s *Service) GetIntegration(ctx context.Context, workspaceID, id string) (IntegrationView, error) {
	var i models.Integration
	if err := take(ctx, s.st.DB, &i, workspaceID, id, "integration"); err != nil {
		return IntegrationView{}, err
	}
	return s.integrationView(i)
}

// CreateIntegration creates an integration, sealing its secrets.
func (s *Service) CreateIntegration(ctx context.Context, workspaceID, actor string, in IntegrationInput) (IntegrationView, error) {
	i := models.Integration{ID: models.NewID(), WorkspaceID: workspaceID}
	secrets := map[string]json.RawMessage{}
	for k, v := range in.Secrets {
		if !strictjson.IsNull(v) {
			secrets[k] = v
		}
	}
	if err := s.checkIntegration(&i, in, secrets); err != nil {
		return IntegrationView{}, err
	}
	if err := s.checkDSNServer(ctx, i.Kind, secrets); err != nil {
		return IntegrationView{}, err
	}
	var err error
	if i.SecretsEnc, err = s.sealJSON(secrets); err != nil {
		return IntegrationView{}, err
	}
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "integration.create", TargetType: "integration", TargetID: i.ID,
		Detail: map[string]any{"name": i.Name, "kind": i.Kind, "secrets_set": sortedKeys(secrets)}}
	err = s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := tx.Create(&i).Error; err != nil {
			return fmt.Errorf("admin: create integration: %w", err)
		}
		return nil
	})
	if err != nil {
		return IntegrationView{}, err
	}
	return s.integrationView(i)
}

// UpdateIntegration applies a merge patch to an integration of the
// workspace. Its kind cannot change (bindings and tools rely on it); secrets
// merge key by key.
func (s *Service) UpdateIntegration(ctx context.Context, workspaceID, actor, id string, patch []byte) (IntegrationView, error) {
	var i models.Integration
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "integration.update", TargetType: "integration", TargetID: id}
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := take(ctx, tx, &i, workspaceID, id, "integration"); err != nil {
			return err
		}
		secretPatch, rest, err := splitSecrets(patch)
		if err != nil {
			return err
		}
		current := IntegrationInput{Name: i.Name, Kind: i.Kind, BaseURL: i.BaseURL, Config: json.RawMessage(i.Config)}
		var in IntegrationInput
		if err := strictjson.MergeInto(current, rest, &in); err != nil {
			return err
		}
		if in.Kind != i.Kind {
			return apperr.Invalidf("kind cannot change; create a new integration")
		}
		secrets, err := s.secretsOf(i)
		if err != nil {
			return err
		}
		changed := []string{}
		if !strictjson.IsNull(secretPatch) {
			var sp map[string]json.RawMessage
			if err := json.Unmarshal(secretPatch, &sp); err != nil {
				return apperr.Invalidf("secrets must be a JSON object")
			}
			for k, v := range sp {
				if strictjson.IsNull(v) {
					delete(secrets, k)
				} else {
					secrets[k] = v
				}
				changed = append(changed, k)
			}
		}
		slices.Sort(changed)
		if err := s.checkIntegration(&i, in, secrets); err != nil {
			return err
		}
		if slices.Contains(changed, "dsn") {
			if err := s.checkDSNServer(ctx, i.Kind, secrets); err != nil {
				return err
			}
		}
		if i.SecretsEnc, err = s.sealJSON(secrets); err != nil {
			return err
		}
		e.Detail = map[string]any{"patch": redactedPatch(rest), "secrets_changed": changed}
		i.UpdatedAt = time.Now().UTC()
		if err := tx.Select("name", "base_url", "config", "secrets_enc", "updated_at").Updates(&i).Error; err != nil {
			return fmt.Errorf("admin: update integration: %w", err)
		}
		return s.announceBeforeCommit(ctx, i.ID)
	})
	if err != nil {
		return IntegrationView{}, err
	}
	s.announce(ctx, i.ID)
	return s.integrationView(i)
}

// DeleteIntegration deletes an integration no binding or configured tool uses.
func (s *Service) DeleteIntegration(ctx context.Context, workspaceID, actor, id string) error {
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "integration.delete", TargetType: "integration", TargetID: id}
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		var i models.Integration
		if err := take(ctx, tx, &i, workspaceID, id, "integration"); err != nil {
			return err
		}
		e.Detail = map[string]any{"name": i.Name, "kind": i.Kind}
		if err := inUse(tx.Delete(&models.Integration{}, "id = ?", i.ID).Error, "integration", "bindings or configured tools"); err != nil {
			return err
		}
		return s.announceBeforeCommit(ctx, i.ID)
	})
	if err != nil {
		return err
	}
	s.announce(ctx, id)
	return nil
}

// announceBeforeCommit evicts integration id on every replica from inside
// its change's transaction (Options.Integrations).
func (s *Service) announceBeforeCommit(ctx context.Context, id string) error {
	if s.integrations == nil {
		return nil
	}
	return s.integrations.AnnounceBeforeCommit(ctx, id)
}

// announce evicts integration id on every replica once its change has
// committed, dropping what a replica read before the commit.
func (s *Service) announce(ctx context.Context, id string) {
	if s.integrations != nil {
		s.integrations.Announce(ctx, id)
	}
}

// TestConnectionFunc tests a connection of kind to baseURL with the
// integration's opened secrets. It returns what it reached in words, or an
// apperr error saying what failed.
type TestConnectionFunc func(ctx context.Context, kind, baseURL string, secrets map[string]json.RawMessage) (string, error)

// TestIntegration tests the connection of an integration of the workspace
// as its real calls make it, with the guards they pass (Options.
// TestConnectionFunc). It changes nothing.
func (s *Service) TestIntegration(ctx context.Context, workspaceID, id string) (string, error) {
	if s.testConn == nil {
		return "", apperr.New(apperr.Unavailable, "connection tests are not configured")
	}
	var i models.Integration
	if err := take(ctx, s.st.DB, &i, workspaceID, id, "integration"); err != nil {
		return "", err
	}
	secrets, err := s.secretsOf(i)
	if err != nil {
		return "", err
	}
	return s.testConn(ctx, i.Kind, i.BaseURL, secrets)
}

// splitSecrets checks an update patch and splits it into its secrets (merged
// key by key) and the rest (merged field by field).
func splitSecrets(patch []byte) (secrets json.RawMessage, rest []byte, err error) {
	if err := strictjson.Decode(patch, new(IntegrationInput)); err != nil {
		return nil, nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil || fields == nil {
		return nil, nil, apperr.Invalidf("invalid JSON body: expected an object")
	}
	secrets = fields["secrets"]
	delete(fields, "secrets")
	rest, err = json.Marshal(fields)
	if err != nil {
		return nil, nil, fmt.Errorf("admin: %w", err)
	}
	return secrets, rest, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// redactedPatch is the part of an update patch safe for the audit log (it
// holds no secrets: those were taken out before).
func redactedPatch(rest []byte) json.RawMessage {
	if bytes.Equal(bytes.TrimSpace(rest), []byte("{}")) {
		return nil
	}
	return json.RawMessage(rest)
}

// envNameRule is a component env variable's name, as ${env.NAME} writes it.
var envNameRule = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// checkComponentEnv checks a component's secrets.env: absent, or an object
// of name → string.
func checkComponentEnv(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	var env map[string]string
	if err := json.Unmarshal(raw, &env); err != nil || env == nil {
		return apperr.Invalidf("secrets.env must be an object of NAME → string (what ${env.NAME} references)")
	}
	for name := range env {
		if !envNameRule.MatchString(name) {
			return apperr.Invalidf("secrets.env: %q is not a name of letters, digits and _ (not starting with a digit)", name)
		}
	}
	return nil
}
