// Package keydetail holds the rules of an agent's key details: the keys the
// summary pass fills on its tasks and a review queue sorts and filters on.
// It is a pure rule package (internal/archtest): the admin service checks
// an agent's definitions with it, the task service reads them back.
package keydetail

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// MaxDefinitions bounds an agent's key details: each one is filled by the
// summary pass, and a review queue sorts and filters on them.
const MaxDefinitions = 50

// MaxDescriptionLength bounds a key detail's description, sent to the LLM
// on every summary pass (the agent's summary template's bound).
const MaxDescriptionLength = 8000

// Name is the shape of a key detail's key and of a priority field: it is a
// JSON key in extracted_data and a sort key in the review queue.
var Name = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Types are the value types a key definition may declare.
var Types = []string{"string", "number", "integer", "boolean", "date"}

// Definition is one key detail an agent fills on its tasks.
type Definition struct {
	Key         string `json:"key"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"` // one of Types; "" means string
}

// Of decodes an agent's key definitions.
func Of(a models.Agent) ([]Definition, error) {
	var defs []Definition
	if err := a.KeyDefinitions.Decode(&defs); err != nil {
		return nil, fmt.Errorf("keydetail: key definitions of agent %s: %w", a.ID, err)
	}
	return defs, nil
}

// Check refuses (400) definitions an agent may not hold: too many, a key
// of the wrong shape or defined twice, an unknown type, a description too
// long.
func Check(defs []Definition) error {
	if len(defs) > MaxDefinitions {
		return apperr.Invalidf("key_definitions has %d entries; at most %d are allowed", len(defs), MaxDefinitions)
	}
	seen := map[string]bool{}
	for i, d := range defs {
		switch {
		case !Name.MatchString(d.Key):
			return apperr.Invalidf("key_definitions[%d].key %q must start with a letter or _ and hold only letters, digits and _ (64 at most)", i, d.Key)
		case seen[d.Key]:
			return apperr.Invalidf("key_definitions[%d].key %q is defined twice", i, d.Key)
		case d.Type != "" && !slices.Contains(Types, d.Type):
			return apperr.Invalidf("key_definitions[%d].type %q must be one of %s", i, d.Type, strings.Join(Types, ", "))
		case len(d.Description) > MaxDescriptionLength:
			return apperr.Invalidf("key_definitions[%d].description is too long", i)
		}
		seen[d.Key] = true
	}
	return nil
}
