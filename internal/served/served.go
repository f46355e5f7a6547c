// Package served is what this deployment serves, computed once at start by
// the composition root and read by the runtime and the mint: the
// capabilities it implements, the base tools it runs, whether its gateway is
// on, and from those the verbs it serves for a binding
// (docs/architecture.md#what-this-deployment-serves).
package served

import (
	"slices"

	"github.com/appruntime/appruntime/internal/bindingspec"
)

// Set is what this deployment serves. It is immutable once built (New); a
// nil *Set serves nothing.
type Set struct {
	capabilities map[string]bool
	tools        map[string]bool
	gateway      bool
}

// Options are the facts a Set is built from.
type Options struct {
	// Capabilities are the capabilities this deployment implements.
	Capabilities []string
	// Tools are the base tools this deployment runs (basetool.Served of
	// what it has, none without a worker fleet to run them on).
	Tools []string
	// Gateway says the outbound gateway is on (http_calls, rest bindings).
	Gateway bool
}

// New builds the Set of o.
func New(o Options) *Set {
	s := &Set{capabilities: map[string]bool{}, tools: map[string]bool{}, gateway: o.Gateway}
	for _, name := range o.Capabilities {
		s.capabilities[name] = true
	}
	for _, name := range o.Tools {
		s.tools[name] = true
	}
	return s
}

// Capability reports whether this deployment implements capability name.
func (s *Set) Capability(name string) bool { return s != nil && s.capabilities[name] }

// Tool reports whether this deployment runs the base tool named base.
func (s *Set) Tool(base string) bool { return s != nil && s.tools[base] }

// Gateway reports whether the outbound gateway is on.
func (s *Set) Gateway() bool { return s != nil && s.gateway }

// Verbs are the runtime verbs through which this deployment would serve at
// least one op of a binding of kind with spec; runs says the binding has a
// tool op whose base tool this deployment runs (which needs the tools' rows
// to know). A verb that could only answer 403 (the binding declares nothing
// for it) or 501 (no gateway for its http_calls or rest requests, no
// executor for its tools, no served capability) is left out, so the mint
// advertises only what a bundle can use (seed 000, "What the mint returns").
func (s *Set) Verbs(kind string, spec bindingspec.Spec, runs bool) []string {
	gateway := s.Gateway()
	data := kind != bindingspec.KindREST || gateway // a rest binding's reads and writes are requests
	verbs := []string{}
	if (len(spec.Reads) > 0 && data) || (len(spec.HTTPCalls) > 0 && gateway) {
		verbs = append(verbs, "read")
	}
	// A write op saved before the fixed-values rule is refused (403) until
	// an admin fixes it: it serves nothing, nor does an action that runs it.
	disabled := map[string]bool{}
	usable := 0
	for i := range spec.Writes {
		if spec.Writes[i].UnscopedFixedColumn() != "" {
			disabled[spec.Writes[i].Op] = true
		} else {
			usable++
		}
	}
	if usable > 0 && data {
		verbs = append(verbs, "write")
	}
	for _, a := range spec.Actions {
		if (len(a.HTTPCalls) == 0 || gateway) && (len(a.Writes) == 0 || data) &&
			!slices.ContainsFunc(a.Writes, func(w string) bool { return disabled[w] }) {
			verbs = append(verbs, "action")
			break
		}
	}
	if runs && len(spec.Tools) > 0 {
		verbs = append(verbs, "run")
	}
	if capabilities, host := bindingspec.OfferedCapabilities(spec, s.Capability); len(capabilities) > len(host) {
		verbs = append(verbs, "capability")
	}
	return verbs
}
