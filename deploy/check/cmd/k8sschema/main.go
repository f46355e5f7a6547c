// Command k8sschema writes kubeconform's JSON schemas from the Kubernetes
// OpenAPI document, offline: kubeconform's default schema location
// (raw.githubusercontent.com) is not reachable from every build machine,
// but the k8s.io/kubernetes module on the Go module proxy carries
// api/openapi-spec/swagger.json.
//
//	k8sschema SWAGGER_JSON OUT_DIR
//
// Each kind with an x-kubernetes-group-version-kind becomes one standalone
// strict schema, OUT_DIR/<kind>-<group>-<version>.json (named as
// kubeconform's {{.ResourceKind}}{{.KindSuffix}} template names it): the
// kind's definition plus every definition it refers to, objects closed to
// unknown fields (a misspelt field fails), and the two types whose
// OpenAPI form says "string" but which accept numbers too (IntOrString and
// Quantity) widened, as kubeconform's own openapi2jsonschema does.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// looseTypes are the definitions replaced by what the API server accepts.
var looseTypes = map[string]any{
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
	"io.k8s.apimachinery.pkg.api.resource.Quantity":   map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}},
}

const refPrefix = "#/definitions/"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: k8sschema SWAGGER_JSON OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "k8sschema:", err)
		os.Exit(1)
	}
}

func run(swaggerPath, out string) error {
	raw, err := os.ReadFile(swaggerPath)
	if err != nil {
		return err
	}
	var doc struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", swaggerPath, err)
	}
	defs := map[string]any{}
	for name, d := range doc.Definitions {
		if loose, ok := looseTypes[name]; ok {
			defs[name] = loose
			continue
		}
		defs[name] = closeObjects(d)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	written := 0
	for name, d := range doc.Definitions {
		gvks, _ := d["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			kind, _ := gvk["kind"].(string)
			closure := map[string]any{}
			collect(defs, name, closure)
			schema := map[string]any{
				"$schema":     "http://json-schema.org/draft-04/schema#",
				"$ref":        refPrefix + name,
				"definitions": closure,
			}
			b, err := json.Marshal(schema)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, fileName(group, version, kind)), b, 0o644); err != nil {
				return err
			}
			written++
		}
	}
	if written == 0 {
		return fmt.Errorf("%s: no definition names a group, version and kind", swaggerPath)
	}
	fmt.Printf("k8sschema: %d schemas in %s\n", written, out)
	return nil
}

// fileName is kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json: the
// kind, the group's first label (none for the core group), the version.
func fileName(group, version, kind string) string {
	suffix := "-" + strings.ToLower(version)
	if group != "" {
		suffix = "-" + strings.ToLower(strings.Split(group, ".")[0]) + suffix
	}
	return strings.ToLower(kind) + suffix + ".json"
}

// collect adds name and every definition it refers to into closure.
func collect(defs map[string]any, name string, closure map[string]any) {
	if _, done := closure[name]; done {
		return
	}
	d, ok := defs[name]
	if !ok {
		return
	}
	closure[name] = d
	walk(d, func(ref string) { collect(defs, strings.TrimPrefix(ref, refPrefix), closure) })
}

// walk calls fn with every $ref under v.
func walk(v any, fn func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				fn(s)
				continue
			}
			walk(x, fn)
		}
	case []any:
		for _, x := range v {
			walk(x, fn)
		}
	}
}

// closeObjects returns v with additionalProperties false on every object
// schema that lists its properties and says nothing of others.
func closeObjects(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v)+1)
		for k, x := range v {
			if k == "properties" {
				props := map[string]any{}
				for p, s := range x.(map[string]any) {
					props[p] = closeObjects(s)
				}
				out[k] = props
				continue
			}
			out[k] = closeObjects(x)
		}
		if _, ok := v["properties"]; ok {
			if _, set := v["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = closeObjects(x)
		}
		return out
	}
	return v
}
