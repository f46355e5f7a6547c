package bindingspec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// SDKPackage is the npm package the declarations TypeScript writes import
// their building blocks from (sdk/package.json).
const SDKPackage = "@appruntime/sdk"

// TypeScript returns a TypeScript module declaring Ops, the ops spec lets a
// bundle call with the payload and result of each, for the SDK's
// connect<Ops>() (docs/bundle-authors.md#types-for-a-bindings-ops): a reads
// op takes a subset of its columns and filters on its filterable ones only;
// an http_call read (one no reads op shadows) takes each placeholder a
// bundle supplies; a write's row names its key columns (required for update
// and upsert) and writable ones, never those its fixed values set; an action
// takes a row per write op and the values of its http_calls; a tools op its
// params; /capability the granted capabilities the host does not perform.
// Every object type is closed, so a misspelled op, column or key fails to
// type-check. header is written first as line comments (who generated the
// file from which binding). The output is deterministic: ops in the spec's
// order.
func TypeScript(spec Spec, header string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		b.WriteString(strings.TrimRight("// "+line, " ") + "\n")
	}
	fmt.Fprintf(&b, "import type { ActionResult, AppRuntime, Capabilities, Filter, HTTPResult, JSONValue, RowsResult, RunResult, WriteResult } from %s;\n\n", tsString(SDKPackage))
	b.WriteString("/** The ops of this binding, by verb: connect<Ops>() types every call. */\nexport type Ops = {\n")

	var reads []tsOp
	for _, r := range spec.Reads {
		cols := tsUnion(r.Columns)
		p := []string{"columns?: (" + cols + ")[]", "filters?: " + tsObject(r.Filterable, nil, "Filter")}
		if r.Request == nil { // a rest read pages through no cursor
			p = append(p, "cursor?: string")
		}
		p = append(p, fmt.Sprintf("limit?: number /* at most %d */", r.pageSize()))
		reads = append(reads, tsOp{r.Op, "{ " + strings.Join(p, "; ") + " }", "RowsResult<" + cols + ">"})
	}
	for _, h := range spec.HTTPCalls {
		if _, shadowed := findRead(spec, h.Op); !shadowed {
			names := callPlaceholders(h)
			reads = append(reads, tsOp{h.Op, tsObject(nil, names, "JSONValue"), "HTTPResult"})
		}
	}
	writeVerb(&b, "read", reads)

	var writes []tsOp
	for _, w := range spec.Writes {
		writes = append(writes, tsOp{w.Op, "{ row: " + tsRow(w) + " }", "WriteResult"})
	}
	writeVerb(&b, "write", writes)

	var actions []tsOp
	for _, a := range spec.Actions {
		var rowOps, rowTypes, values []string
		for _, op := range a.Writes {
			if w, ok := findWrite(spec, op); ok {
				rowOps, rowTypes = append(rowOps, op), append(rowTypes, tsRow(w))
			}
		}
		for _, op := range a.HTTPCalls {
			if h, ok := findCall(spec, op); ok {
				for _, n := range callPlaceholders(h) {
					if !slices.Contains(values, n) {
						values = append(values, n)
					}
				}
			}
		}
		var p []string
		if len(rowOps) > 0 {
			p = append(p, "rows?: "+tsFields(rowOps, rowTypes))
		}
		if len(values) > 0 {
			slices.Sort(values)
			p = append(p, "values: "+tsObject(nil, values, "JSONValue"))
		}
		payload := "Record<string, never>"
		if len(p) > 0 {
			payload = "{ " + strings.Join(p, "; ") + " }"
		}
		actions = append(actions, tsOp{a.Name, payload, "ActionResult"})
	}
	writeVerb(&b, "action", actions)

	var runs []tsOp
	for _, t := range spec.Tools {
		runs = append(runs, tsOp{t.Op, tsObject(t.Params, nil, "JSONValue"), "RunResult"})
	}
	writeVerb(&b, "run", runs)

	var served []string
	for _, name := range GrantedCapabilities(spec) {
		if c, _ := LookupCapability(name); !c.Host {
			served = append(served, name)
		}
	}
	if len(served) == 0 {
		b.WriteString("  capability: {};\n")
	} else {
		fmt.Fprintf(&b, "  capability: Pick<Capabilities, %s>;\n", tsUnion(served))
	}
	b.WriteString("};\n\n/** The SDK's AppRuntime for this binding. */\nexport type Runtime = AppRuntime<Ops>;\n")
	return b.String()
}

// tsOp is one op of a verb in the declarations.
type tsOp struct{ name, payload, result string }

func writeVerb(b *strings.Builder, verb string, ops []tsOp) {
	if len(ops) == 0 {
		fmt.Fprintf(b, "  %s: {};\n", verb)
		return
	}
	fmt.Fprintf(b, "  %s: {\n", verb)
	for _, op := range ops {
		fmt.Fprintf(b, "    %s: { payload: %s; result: %s };\n", tsString(op.name), op.payload, op.result)
	}
	b.WriteString("  };\n")
}

// tsRow is a write's row type: its key columns (required for update and
// upsert) and writable columns, leaving out those its fixed values set.
func tsRow(w Write) string {
	var required, optional []string
	for _, col := range w.KeyColumns {
		if _, fixed := w.FixedValues[col]; !fixed && !slices.Contains(required, col) {
			required = append(required, col)
		}
	}
	for _, col := range w.Columns {
		if _, fixed := w.FixedValues[col]; !fixed && !slices.Contains(required, col) && !slices.Contains(optional, col) {
			optional = append(optional, col)
		}
	}
	if w.Mode == ModeInsert {
		optional, required = slices.Concat(required, optional), nil
	}
	return tsObject(optional, required, "JSONValue")
}

// tsObject is a closed object type: the optional keys, then the required
// ones, each of type value; "Record<string, never>" when there are none
// (an empty object, no key allowed).
func tsObject(optional, required []string, value string) string {
	var parts []string
	for _, n := range optional {
		parts = append(parts, tsString(n)+"?: "+value)
	}
	for _, n := range required {
		parts = append(parts, tsString(n)+": "+value)
	}
	return tsClosed(parts)
}

// tsFields is an object type of optional keys names[i] of type types[i].
func tsFields(names, types []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = tsString(n) + "?: " + types[i]
	}
	return tsClosed(parts)
}

// tsClosed is an object type of its fields, or Record<string, never> when
// there are none: TypeScript's {} would take any object.
func tsClosed(fields []string) string {
	if len(fields) == 0 {
		return "Record<string, never>"
	}
	return "{ " + strings.Join(fields, "; ") + " }"
}

// tsUnion is a union of string literals; never when names is empty.
func tsUnion(names []string) string {
	if len(names) == 0 {
		return "never"
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = tsString(n)
	}
	return strings.Join(parts, " | ")
}

// tsString is s as a TypeScript string literal: JSON's string syntax is
// TypeScript's too.
func tsString(s string) string {
	out, _ := json.Marshal(s) // a string always encodes
	return string(out)
}
