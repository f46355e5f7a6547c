package agenttool

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/models"
)

// IntegrationKindComponent is the integration kind of an app target's
// component: a base URL the platform calls and an env its targets may
// reference. The admin API's list of kinds gains it with the wiring.
const IntegrationKindComponent = "component"

// EnvSecret is the key of a component integration's secrets document that
// holds its env: an object of name → string value. The values are sealed
// at rest with the other secrets and never shown; references name them as
// ${env.NAME}.
const EnvSecret = "env"

// Component is a component integration as a target uses it: where it is
// and its opened env. It holds secrets: never log or return it.
type Component struct {
	ID          string
	WorkspaceID string
	Name        string
	// BaseURL is an absolute http(s) URL without query or fragment; a
	// target's path is appended to it.
	BaseURL string
	Env     map[string]string
}

// ComponentFromIntegration opens a component integration's env with box.
// An integration of another kind is not_found (it is not a component), a
// base URL that is not absolute http(s) or an env that is not an object of
// strings is invalid.
func ComponentFromIntegration(integ models.Integration, box *crypt.Box) (Component, error) {
	if integ.Kind != IntegrationKindComponent {
		return Component{}, apperr.NotFoundf("integration %s is not a component", integ.ID)
	}
	u, err := url.Parse(integ.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Component{}, apperr.Invalidf("component %q: base_url must be an absolute http or https URL without query, fragment or userinfo", integ.Name)
	}
	c := Component{
		ID: integ.ID, WorkspaceID: integ.WorkspaceID, Name: integ.Name,
		BaseURL: strings.TrimRight(integ.BaseURL, "/"), Env: map[string]string{},
	}
	if len(integ.SecretsEnc) == 0 {
		return c, nil
	}
	if box == nil {
		return Component{}, apperr.New(apperr.Internal, "no SECRETS_KEY to open the env of component %q", integ.Name)
	}
	var secrets map[string]json.RawMessage
	if err := box.OpenJSON(integ.SecretsEnc, &secrets); err != nil {
		return Component{}, apperr.Wrap(err, apperr.Internal, "open the secrets of component %q", integ.Name)
	}
	if raw, ok := secrets[EnvSecret]; ok {
		if err := json.Unmarshal(raw, &c.Env); err != nil || c.Env == nil {
			return Component{}, apperr.Invalidf("component %q: secrets.%s must be an object of name → string", integ.Name, EnvSecret)
		}
	}
	for name := range c.Env {
		if !isEnvName(name) {
			return Component{}, apperr.Invalidf("component %q: env name %q is not letters, digits and _ (not starting with a digit)", integ.Name, clip(name, 60))
		}
	}
	return c, nil
}

// IntegrationComponents loads components through the process's integration
// cache (integration.Lookup, evicted on every replica by a change) and opens
// their env with Box.
type IntegrationComponents struct {
	Integrations gateway.Integrations
	Box          *crypt.Box
}

// Component implements ComponentSource: an integration of another
// workspace, or of another kind, is not_found.
func (s IntegrationComponents) Component(ctx context.Context, workspaceID, id string) (Component, error) {
	integ, err := s.Integrations.Integration(ctx, id)
	if err != nil {
		return Component{}, err
	}
	if integ.WorkspaceID != workspaceID {
		return Component{}, apperr.NotFoundf("integration not found")
	}
	return ComponentFromIntegration(integ, s.Box)
}
