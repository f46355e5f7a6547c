// Package archtest checks the dependency rule of docs/architecture.md#layers against
// what the packages really import (go list), so a change that breaks it
// fails here with the offending import named.
package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/appruntime/appruntime"

// frontDoors are the processes' entry points: they import domain packages
// and never each other.
var frontDoors = []string{module + "/api", module + "/console", module + "/worker"}

// storage is what only domain services touch: a front door reaches the
// database through them (no handler holds Store.DB).
var storage = []string{module + "/internal/store", "gorm.io/gorm"}

// compositionRoots may import the front doors: they build them.
var compositionRoots = []string{module + "/internal/platform", module + "/cmd/"}

// leaves import nothing of this module.
var leaves = []string{module + "/models", module + "/jobs", module + "/internal/apperr", module + "/internal/openapi"}

// rules are the packages of pure rules: they import leaves and each other,
// never a store, Redis, audit or any other internal package. bindingspec is
// the rules of a binding document; the binding service (internal/binding)
// answers its questions about a workspace from the database. basetool is
// the table of the base tools' facts; keydetail the rules of key details;
// served what this deployment serves.
var rules = []string{
	module + "/internal/basetool", module + "/internal/bindingspec", module + "/internal/field",
	module + "/internal/keydetail", module + "/internal/placeholder", module + "/internal/schema", module + "/internal/served", module + "/internal/strictjson",
}

// floors pin packages to a floor (docs/architecture.md#packages-by-floor):
// a package's floor is one more than the highest floor among the packages
// of this module it imports, 0 when it imports none, and a pinned package
// may stand no higher than its pin. internal/claim, the reviewer queue,
// stands on the store and the leaves alone (floor 2): it never reaches up
// to what parks, releases or resumes a task (internal/review, which
// imports it to drop a settled task's claim), nor to a service above.
var floors = map[string]int{
	module + "/internal/claim": 2,
}

type pkg struct {
	ImportPath string
	// Imports are its direct, non-test imports. Direct ones suffice: a
	// front door reached through a chain is caught at the chain's link
	// that imports it, and only the composition roots may be that link.
	Imports []string
}

// load lists every package of the module with its imports.
func load(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		if p.ImportPath == module || strings.HasPrefix(p.ImportPath, module+"/") {
			pkgs[p.ImportPath] = p
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages of %s", len(pkgs), module)
	}
	return pkgs
}

func ours(path string) bool { return strings.HasPrefix(path, module+"/") }

func hasPrefix(path string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(path, p) })
}

// check returns the violations of the dependency rule in pkgs, one line each.
func check(pkgs map[string]pkg) []string {
	var bad []string
	for _, p := range pkgs {
		switch {
		case slices.Contains(frontDoors, p.ImportPath):
			for _, imp := range p.Imports {
				if slices.Contains(frontDoors, imp) {
					bad = append(bad, p.ImportPath+" imports the front door "+imp+": front doors never import each other")
				}
				if slices.Contains(storage, imp) {
					bad = append(bad, p.ImportPath+" imports "+imp+": front doors reach the database through domain services")
				}
			}
		case hasPrefix(p.ImportPath, compositionRoots):
		default:
			for _, imp := range p.Imports {
				if slices.Contains(frontDoors, imp) {
					bad = append(bad, p.ImportPath+" imports the front door "+imp+": only internal/platform and cmd build front doors")
				}
			}
		}
		if slices.Contains(leaves, p.ImportPath) {
			for _, imp := range p.Imports {
				if ours(imp) {
					bad = append(bad, p.ImportPath+" imports "+imp+": "+p.ImportPath+" is a leaf and imports nothing of this module")
				}
			}
		}
		if slices.Contains(rules, p.ImportPath) {
			for _, imp := range p.Imports {
				if ours(imp) && !slices.Contains(leaves, imp) && !slices.Contains(rules, imp) {
					bad = append(bad, p.ImportPath+" imports "+imp+": rule packages import only leaves and other rule packages")
				}
			}
		}
	}
	for path, most := range floors {
		if _, ok := pkgs[path]; !ok {
			continue
		}
		if f, via := floorOf(pkgs, path, map[string]int{}); f > most {
			bad = append(bad, fmt.Sprintf("%s stands on floor %d (through %s): its floor is at most %d", path, f, via, most))
		}
	}
	slices.Sort(bad)
	return bad
}

// floorOf returns the floor of path in pkgs and the import that sets it
// ("" for floor 0). An import pkgs does not hold counts as floor 0;
// memo also breaks a cycle (Go refuses them, a test's table may not).
func floorOf(pkgs map[string]pkg, path string, memo map[string]int) (int, string) {
	if f, ok := memo[path]; ok {
		return f, ""
	}
	memo[path] = 0
	floor, via := 0, ""
	for _, imp := range pkgs[path].Imports {
		if !ours(imp) {
			continue
		}
		if f, _ := floorOf(pkgs, imp, memo); f+1 > floor {
			floor, via = f+1, imp
		}
	}
	memo[path] = floor
	return floor, via
}

func TestDependencyRule(t *testing.T) {
	pkgs := load(t)
	want := append(append(slices.Clone(frontDoors), leaves...), rules...)
	for path := range floors {
		want = append(want, path)
	}
	for _, want := range want {
		if _, ok := pkgs[want]; !ok {
			t.Fatalf("package %s not found: update this test's lists", want)
		}
	}
	for _, v := range check(pkgs) {
		t.Error(v)
	}
}

// The check itself catches each kind of violation.
func TestCheckFindsViolations(t *testing.T) {
	api, console, worker := frontDoors[0], frontDoors[1], frontDoors[2]
	models, field, bindingspec := leaves[0], module+"/internal/field", module+"/internal/bindingspec"
	store, binding := module+"/internal/store", module+"/internal/binding"
	runtime := module + "/internal/runtime"
	claim, review, outbox := module+"/internal/claim", module+"/internal/review", module+"/internal/outbox"
	got := check(map[string]pkg{
		api:                           {ImportPath: api, Imports: []string{console, runtime}},
		worker:                        {ImportPath: worker, Imports: []string{runtime, store}},
		runtime:                       {ImportPath: runtime, Imports: []string{worker}},
		module + "/internal/platform": {ImportPath: module + "/internal/platform", Imports: []string{api, console, worker}},
		module + "/cmd/appruntime":    {ImportPath: module + "/cmd/appruntime", Imports: []string{api}},
		models:                        {ImportPath: models, Imports: []string{field}},
		field:                         {ImportPath: field, Imports: []string{leaves[2], store}},
		bindingspec:                   {ImportPath: bindingspec, Imports: []string{field, models, binding}},
		claim:                         {ImportPath: claim, Imports: []string{leaves[1], review}},
		review:                        {ImportPath: review, Imports: []string{outbox}},
		outbox:                        {ImportPath: outbox, Imports: []string{store}},
	})
	require := func(sub string) {
		t.Helper()
		if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, sub) }) {
			t.Errorf("no violation mentions %q in %q", sub, got)
		}
	}
	require(api + " imports the front door " + console)
	require(runtime + " imports the front door " + worker)
	require(models + " imports " + field)
	require(field + " imports " + store)
	require(worker + " imports " + store)
	require(bindingspec + " imports " + binding + ": rule packages import only leaves")
	require(claim + " stands on floor 3 (through " + review + "): its floor is at most 2")
	if len(got) != 7 {
		t.Errorf("want 7 violations, got %d: %q", len(got), got)
	}
}
