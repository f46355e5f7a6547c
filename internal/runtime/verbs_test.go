package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/runtime"
)

// noGateway is a gateway that is there (its calls are never made here).
type noGateway struct{}

func (noGateway) Call(context.Context, *binding.HTTPCall, runtime.CallInput) (runtime.Response, error) {
	panic("not called")
}

// The verbs a mint advertises are those through which at least one of the
// binding's ops would be served by this deployment.
func TestServedVerbsAreThoseThatServeAnOp(t *testing.T) {
	t.Parallel()
	read := binding.Read{Op: "r"}
	write := binding.Write{Op: "w"}
	call := binding.HTTPCall{Op: "h"}
	tool := binding.Tool{Op: "t", Tool: "python_code_tool"}
	plain := binding.Action{Name: "a", Writes: []string{"w"}}
	calling := binding.Action{Name: "c", HTTPCalls: []string{"h"}}
	cases := []struct {
		name    string
		kind    string
		spec    binding.Spec
		gateway bool
		tools   bool
		served  []string
		want    []string
	}{
		{"nothing declared", binding.KindPostgres, binding.Spec{}, true, true, nil, []string{}},
		{"postgres reads and writes", binding.KindPostgres, binding.Spec{Reads: []binding.Read{read}, Writes: []binding.Write{write}, Actions: []binding.Action{plain}}, false, false, nil,
			[]string{"read", "write", "action"}},
		{"lookups without a gateway", binding.KindPostgres, binding.Spec{HTTPCalls: []binding.HTTPCall{call}, Actions: []binding.Action{calling}}, false, false, nil, []string{}},
		{"lookups with a gateway", binding.KindPostgres, binding.Spec{HTTPCalls: []binding.HTTPCall{call}, Actions: []binding.Action{calling}}, true, false, nil, []string{"read", "action"}},
		{"rest without a gateway", binding.KindREST, binding.Spec{Reads: []binding.Read{read}, Writes: []binding.Write{write}}, false, false, nil, []string{}},
		{"rest with a gateway", binding.KindREST, binding.Spec{Reads: []binding.Read{read}, Writes: []binding.Write{write}}, true, false, nil, []string{"read", "write"}},
		{"a tool without an executor", binding.KindPostgres, binding.Spec{Tools: []binding.Tool{tool}}, true, false, nil, []string{}},
		{"a tool with an executor", binding.KindPostgres, binding.Spec{Tools: []binding.Tool{tool}}, true, true, nil, []string{"run"}},
		{"a granted capability not served", binding.KindPostgres, binding.Spec{Capabilities: []string{"get_translation"}}, true, true, nil, []string{}},
		{"a host capability only", binding.KindPostgres, binding.Spec{Capabilities: []string{"document_selection"}}, true, true, []string{"document_selection"}, []string{}},
		{"a served grandfathered capability", binding.KindPostgres, binding.Spec{}, true, true, []string{"list_files"}, []string{"capability"}},
	}
	for _, tc := range cases {
		s := &runtime.Service{
			Served:     func(name string) bool { return contains(tc.served, name) },
			ToolServed: func(string) bool { return tc.tools },
		}
		if tc.gateway {
			s.Gateway = noGateway{}
		}
		require.Equal(t, tc.want, s.ServedVerbs(tc.kind, tc.spec), tc.name)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
