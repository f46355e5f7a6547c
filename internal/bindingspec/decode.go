package bindingspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// specSections are the fields of allowed_operations, in the order they are
// checked (and reported).
var specSections = []string{"reads", "writes", "actions", "http_calls", "tools", "capabilities"}

// decodeSpec decodes allowed_operations strictly, one entry at a time, so
// that a refusal names the entry at fault: an unknown field anywhere, a value
// of the wrong type, or trailing data is a 400.
func decodeSpec(raw json.RawMessage) (Spec, error) {
	var spec Spec
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return spec, apperr.Invalidf(`allowed_operations is required: an object such as {"reads": [...], "writes": [...]}`)
	}
	if trimmed[0] != '{' {
		return spec, apperr.Invalidf("allowed_operations must be a JSON object")
	}
	var top map[string]json.RawMessage
	if err := strictjson.Unmarshal(trimmed, &top); err != nil {
		return spec, apperr.Invalidf("allowed_operations: %s", err)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(specSections, k) {
			return spec, apperr.Invalidf("allowed_operations: unknown field %q (known: %s)", k, strings.Join(specSections, ", "))
		}
	}
	var err error
	if spec.Reads, err = decodeEntries[Read](top["reads"], "reads"); err != nil {
		return spec, err
	}
	if spec.Writes, err = decodeEntries[Write](top["writes"], "writes"); err != nil {
		return spec, err
	}
	if spec.Actions, err = decodeEntries[Action](top["actions"], "actions"); err != nil {
		return spec, err
	}
	if spec.HTTPCalls, err = decodeEntries[HTTPCall](top["http_calls"], "http_calls"); err != nil {
		return spec, err
	}
	if spec.Tools, err = decodeEntries[Tool](top["tools"], "tools"); err != nil {
		return spec, err
	}
	if raw := top["capabilities"]; !isNull(raw) {
		if err := strictjson.Unmarshal(raw, &spec.Capabilities); err != nil {
			return spec, apperr.Invalidf("capabilities must be an array of capability names")
		}
	}
	return spec, nil
}

// DecodeStored reads a saved allowed_operations document. It was validated
// when saved, so it is read leniently: a field added by a later release does
// not make older processes fail.
func DecodeStored(raw []byte, spec *Spec) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(spec); err != nil {
		return fmt.Errorf("decode allowed_operations: %w", err)
	}
	return nil
}

// decodeEntries decodes one section (an array of objects) strictly.
func decodeEntries[T any](raw json.RawMessage, section string) ([]T, error) {
	if isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, apperr.Invalidf("%s must be an array of objects", section)
	}
	out := make([]T, len(items))
	for i, item := range items {
		if t := bytes.TrimSpace(item); len(t) == 0 || t[0] != '{' {
			return nil, apperr.Invalidf("%s[%d] must be an object", section, i)
		}
		if err := strictjson.Unmarshal(item, &out[i]); err != nil {
			// Name the entry by its op (or action name) when it has a readable one.
			var probe struct {
				Op   any `json:"op"`
				Name any `json:"name"`
			}
			_ = json.Unmarshal(item, &probe)
			name, _ := probe.Op.(string)
			if section == "actions" {
				name, _ = probe.Name.(string)
			}
			return nil, apperr.Invalidf("%s: %s", entryLabel(section, i, name), err)
		}
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// entryLabel names an entry the way every refusal does: `writes[1] "save_line"`,
// or `writes[1]` when it has no name yet.
func entryLabel(section string, i int, name string) string {
	if name == "" {
		return fmt.Sprintf("%s[%d]", section, i)
	}
	return fmt.Sprintf("%s[%d] %q", section, i, name)
}
