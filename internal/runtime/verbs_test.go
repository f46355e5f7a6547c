package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/runtime"
)

// noGateway is a gateway that is there (its calls are never made here).
type noGateway struct{}

func (noGateway) Call(context.Context, *bindingspec.HTTPCall, runtime.CallInput) (runtime.Response, error) {
	panic("not called")
}

// The verbs a mint advertises are those through which at least one of the
// binding's ops would be served by this deployment.
func TestServedVerbsAreThoseThatServeAnOp(t *testing.T) {
	t.Parallel()
	read := bindingspec.Read{Op: "r"}
	write := bindingspec.Write{Op: "w"}
	call := bindingspec.HTTPCall{Op: "h"}
	tool := bindingspec.Tool{Op: "t", Tool: "python_code_tool"}
	plain := bindingspec.Action{Name: "a", Writes: []string{"w"}}
	// Saved before the fixed-values rule: refused at run time (403).
	unscoped := bindingspec.Write{Op: "u", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"},
		FixedValues: map[string]any{"task_id": "{{task_id}}"}}
	runsUnscoped := bindingspec.Action{Name: "b", Writes: []string{"w", "u"}}
	calling := bindingspec.Action{Name: "c", HTTPCalls: []string{"h"}}
	cases := []struct {
		name    string
		kind    string
		spec    bindingspec.Spec
		gateway bool
		tools   bool
		served  []string
		want    []string
	}{
		{"nothing declared", bindingspec.KindPostgres, bindingspec.Spec{}, true, true, nil, []string{}},
		{"postgres reads and writes", bindingspec.KindPostgres, bindingspec.Spec{Reads: []bindingspec.Read{read}, Writes: []bindingspec.Write{write}, Actions: []bindingspec.Action{plain}}, false, false, nil,
			[]string{"read", "write", "action"}},
		{"lookups without a gateway", bindingspec.KindPostgres, bindingspec.Spec{HTTPCalls: []bindingspec.HTTPCall{call}, Actions: []bindingspec.Action{calling}}, false, false, nil, []string{}},
		{"lookups with a gateway", bindingspec.KindPostgres, bindingspec.Spec{HTTPCalls: []bindingspec.HTTPCall{call}, Actions: []bindingspec.Action{calling}}, true, false, nil, []string{"read", "action"}},
		{"only a disabled write op", bindingspec.KindPostgres, bindingspec.Spec{Writes: []bindingspec.Write{unscoped}, Actions: []bindingspec.Action{{Name: "d", Writes: []string{"u"}}}}, true, true, nil,
			[]string{}},
		{"a disabled op beside a usable one", bindingspec.KindPostgres, bindingspec.Spec{Writes: []bindingspec.Write{write, unscoped}, Actions: []bindingspec.Action{runsUnscoped}}, true, true, nil,
			[]string{"write"}},
		{"rest action writes without a gateway", bindingspec.KindREST, bindingspec.Spec{Writes: []bindingspec.Write{write}, Actions: []bindingspec.Action{plain}}, false, false, nil, []string{}},
		{"rest without a gateway", bindingspec.KindREST, bindingspec.Spec{Reads: []bindingspec.Read{read}, Writes: []bindingspec.Write{write}}, false, false, nil, []string{}},
		{"rest with a gateway", bindingspec.KindREST, bindingspec.Spec{Reads: []bindingspec.Read{read}, Writes: []bindingspec.Write{write}}, true, false, nil, []string{"read", "write"}},
		{"a tool without an executor", bindingspec.KindPostgres, bindingspec.Spec{Tools: []bindingspec.Tool{tool}}, true, false, nil, []string{}},
		{"a tool with an executor", bindingspec.KindPostgres, bindingspec.Spec{Tools: []bindingspec.Tool{tool}}, true, true, nil, []string{"run"}},
		{"a granted capability not served", bindingspec.KindPostgres, bindingspec.Spec{Capabilities: []string{"get_translation"}}, true, true, nil, []string{}},
		{"a host capability only", bindingspec.KindPostgres, bindingspec.Spec{Capabilities: []string{"document_selection"}}, true, true, []string{"document_selection"}, []string{}},
		{"a served grandfathered capability", bindingspec.KindPostgres, bindingspec.Spec{}, true, true, []string{"list_files"}, []string{"capability"}},
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
