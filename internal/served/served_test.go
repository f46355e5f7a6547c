package served_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/served"
)

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
		s := served.New(served.Options{Capabilities: tc.served, Gateway: tc.gateway})
		require.Equal(t, tc.want, s.Verbs(tc.kind, tc.spec, tc.tools), tc.name)
	}
}

// A Set answers what it was built from and nothing else; a nil Set serves
// nothing.
func TestSetAnswersWhatItWasBuiltFrom(t *testing.T) {
	t.Parallel()
	s := served.New(served.Options{Capabilities: []string{"list_files"}, Tools: []string{"python_code_tool"}, Gateway: true})
	var none *served.Set
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"a served capability", s.Capability("list_files"), true},
		{"a capability not served", s.Capability("get_translation"), false},
		{"a base tool run here", s.Tool("python_code_tool"), true},
		{"a base tool not run here", s.Tool("translate_text"), false},
		{"a base tool named as a capability", s.Capability("python_code_tool"), false},
		{"the gateway on", s.Gateway(), true},
		{"the gateway off", served.New(served.Options{}).Gateway(), false},
		{"nil: no capability", none.Capability("list_files"), false},
		{"nil: no tool", none.Tool("python_code_tool"), false},
		{"nil: no gateway", none.Gateway(), false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tc.got, tc.name)
	}
	require.Equal(t, []string{}, none.Verbs(bindingspec.KindREST, bindingspec.Spec{Reads: []bindingspec.Read{{Op: "r"}}}, true))
	// The options are copied: changing them after New changes nothing.
	caps := []string{"list_files"}
	built := served.New(served.Options{Capabilities: caps})
	caps[0] = "get_translation"
	require.True(t, built.Capability("list_files"))
	require.False(t, built.Capability("get_translation"))
}
