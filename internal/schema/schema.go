// Package schema holds the JSON-Schema rules of admin-supplied schemas: a
// configured tool's input schema, an extraction's output schema, an agent
// tool's input. It compiles them with no reference outside the document and
// words a mismatch for the caller. A rule package: it imports only leaves.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/appruntime/appruntime/internal/apperr"
)

// DefaultInput is the input schema of a configured tool that declares
// none: any object.
var DefaultInput = json.RawMessage(`{"type":"object"}`)

// schemaURL names the document being compiled; nothing is ever loaded from it.
const schemaURL = "urn:appruntime:schema"

// maxSchemaErrors bounds how many failures a params error lists.
const maxSchemaErrors = 3

// Compile compiles a JSON Schema (draft 2020-12 unless it names
// another $schema). A $ref to any other document is refused: schemas are
// admin input and must not make the server read files or URLs. field names
// the schema in the error.
func Compile(doc json.RawMessage, field string) (*jsonschema.Schema, error) {
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, apperr.Invalidf("%s is not valid JSON: %v", field, err)
	}
	if _, ok := parsed.(map[string]any); !ok {
		return nil, apperr.Invalidf("%s must be a JSON object", field)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(schemaURL, parsed); err != nil {
		return nil, apperr.Invalidf("%s is not a valid JSON Schema: %v", field, err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, apperr.Invalidf("%s is not a valid JSON Schema: %s", field, compileMessage(err))
	}
	return s, nil
}

// compileMessage shortens the compiler's error to what an admin needs.
func compileMessage(err error) string {
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		return fmt.Sprintf("$ref %s points outside the schema; only references within it are allowed", load.URL)
	}
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			return strings.Join(leafMessages(ve, maxSchemaErrors), "; ")
		}
	}
	return strings.ReplaceAll(err.Error(), schemaURL, "schema")
}

// CheckParams validates a JSON document against schema and returns a 400
// naming where the value fails and why.
func CheckParams(schema *jsonschema.Schema, params json.RawMessage) error {
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return apperr.Invalidf("params is not valid JSON: %v", err)
	}
	mismatch, err := Mismatch(schema, value)
	if err != nil {
		return err
	}
	if mismatch != "" {
		return apperr.Invalidf("params do not match the input schema: %s", mismatch)
	}
	return nil
}

// Mismatch validates a value decoded by jsonschema.UnmarshalJSON against
// schema and says where and why it fails ("at '/total': …; at '/vendor':
// …"), or "" when it matches.
func Mismatch(schema *jsonschema.Schema, value any) (string, error) {
	err := schema.Validate(value)
	if err == nil {
		return "", nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", fmt.Errorf("schema: validate: %w", err)
	}
	return strings.Join(leafMessages(ve, maxSchemaErrors), "; "), nil
}

// printer renders the validator's messages in English.
var printer = message.NewPrinter(language.English)

// leafMessages returns up to limit "at '<location>': <message>" lines of the
// deepest causes, which are the ones that say what is wrong.
func leafMessages(ve *jsonschema.ValidationError, limit int) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at '%s': %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out) // the validator's order varies between runs
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
