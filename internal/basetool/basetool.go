// Package basetool is the table of the base tools a configured tool is
// built on: one row per tool with every fact the rest of the house reads
// about it (the queue and deadline of its /run jobs, the config keys an
// admin saves, the stored keys a bundle may never supply, its billing rate,
// and what a deployment needs to serve it). It is a rule package: pure
// data and functions, no store, no Redis. Adding a base tool is a models
// constant, a row here, an executor (internal/tool/toolset) and, when its
// config values need checking, a case in internal/toolconfig.
package basetool

import (
	"slices"
	"strings"
	"time"

	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Integration kinds the SQL base tools read from.
const (
	IntegrationPostgres = "postgres"
	IntegrationMSSQL    = "mssql"
)

// Needs is what a deployment must have to serve a base tool, as a set of
// flags; a tool is served when every flag it needs is present.
type Needs uint8

// The things a base tool may need besides a worker.
const (
	// NeedsFiles: task files (SECRETS_KEY), for the tools that read one.
	NeedsFiles Needs = 1 << iota
	// NeedsTranslateEngine: a translation engine (TRANSLATE_URL).
	NeedsTranslateEngine
	// NeedsExtractionModel: the extraction model (EXTRACTION_BASE_URL).
	NeedsExtractionModel
)

// Tool is one base tool's facts.
type Tool struct {
	// Name is the base tool's name (a models.Base* constant), stored in
	// configured_tools.base_tool and named by bindings.
	Name string
	// Runnable: /run runs it on the worker fleet (every tool but app_tool,
	// which is an artifact, not a run).
	Runnable bool
	// Direct: a binding's tools op (and an agent tool's builtin target) may
	// name it directly, with nothing configured; such a tool cannot be
	// configured (translate_text).
	Direct bool
	// QueueClass is the queue class its /run jobs go to (jobs.Queue*), and
	// Deadline how long one may take.
	QueueClass string
	Deadline   time.Duration
	// RequiredConfig and OptionalConfig are the config keys a configured
	// tool of it takes; any other key is refused when it is saved.
	RequiredConfig, OptionalConfig []string
	// Integration is the integration kind a configured tool of it must be
	// bound to; "" takes none.
	Integration string
	// StoredKeys are input keys that come from the configured tool's stored
	// settings and so may never be supplied by a bundle (seed 000: "its
	// stored bindings — code, file name, query, integration — are never
	// taken from the request").
	StoredKeys []string
	// BundleParams, when not nil, are the only input keys a bundle may
	// supply; everything else comes from the configured tool.
	BundleParams []string
	// Rate is what one billed unit costs (a string translated, a page
	// read); 0 bills nothing.
	Rate float64
	// ReadsDocument: the worker reads the task file behind input.file_url
	// before it runs the tool.
	ReadsDocument bool
	// Slotted: its runs are admitted through the per-surface extraction
	// slots (limit.ExtractionSlotsPerSurface).
	Slotted bool
	// RunStepKind is the kind of the step a recorded run leaves.
	RunStepKind string
	// Needs is what a deployment needs to serve it.
	Needs Needs
}

// All are the base tools, in the order the admin sees them.
var All = []Tool{
	{
		Name: models.BaseAppTool,
	},
	{
		Name: models.BasePythonCode, Runnable: true,
		QueueClass: jobs.QueueScript, Deadline: jobs.ScriptDeadline,
		RequiredConfig: []string{"code"},
		StoredKeys:     []string{"code"},
		// A script's run is a run of the app tool's code: the same step kind
		// a producer leaves.
		RunStepKind: models.StepAppToolRun,
	},
	{
		Name: models.BaseCSVLookup, Runnable: true,
		QueueClass: jobs.QueueLookup, Deadline: jobs.LookupDeadline,
		RequiredConfig: []string{"file_name"}, OptionalConfig: []string{"matching_strategy"},
		// matching_strategy is pinned to exact: the LLM strategy is unreachable from a bundle.
		StoredKeys:  []string{"file_name", "matching_strategy"},
		RunStepKind: models.StepToolRun,
		Needs:       NeedsFiles,
	},
	{
		Name: models.BasePostgresQuery, Runnable: true,
		QueueClass: jobs.QueueLookup, Deadline: jobs.LookupDeadline,
		RequiredConfig: []string{"query"},
		Integration:    IntegrationPostgres,
		StoredKeys:     []string{"query", "integration_id"},
		RunStepKind:    models.StepToolRun,
	},
	{
		Name: models.BaseMSSQLQuery, Runnable: true,
		QueueClass: jobs.QueueLookup, Deadline: jobs.LookupDeadline,
		RequiredConfig: []string{"query"},
		Integration:    IntegrationMSSQL,
		StoredKeys:     []string{"query", "integration_id"},
		RunStepKind:    models.StepToolRun,
	},
	{
		Name: models.BaseExtraction, Runnable: true,
		QueueClass: jobs.QueueExtract, Deadline: jobs.ExtractDeadline,
		RequiredConfig: []string{"instructions", "output_schema"},
		OptionalConfig: []string{"pause_on_validation", "validations", "model", "citations"},
		// The instructions, output schema, validations, model and cost
		// settings come from the configured tool.
		BundleParams:  []string{"file_url", "sheets"},
		Rate:          0.01,
		ReadsDocument: true,
		Slotted:       true,
		RunStepKind:   models.StepToolRun,
		Needs:         NeedsFiles | NeedsExtractionModel,
	},
	{
		Name: models.BaseTranslateText, Runnable: true, Direct: true,
		QueueClass: jobs.QueueLookup, Deadline: jobs.LookupDeadline,
		Rate:        0.0001,
		RunStepKind: models.StepToolRun,
		Needs:       NeedsTranslateEngine,
	},
}

// Lookup returns the row of the base tool named name.
func Lookup(name string) (Tool, bool) {
	i := slices.IndexFunc(All, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return Tool{}, false
	}
	return All[i], true
}

// Names are the names of the base tools whose row satisfies keep, in
// table order.
func Names(keep func(Tool) bool) []string {
	var out []string
	for _, t := range All {
		if keep(t) {
			out = append(out, t.Name)
		}
	}
	return out
}

// Configurable says whether an admin can save a configured tool of t: every
// base tool but those named directly.
func Configurable(t Tool) bool { return !t.Direct }

// IsDirect says whether t is named directly, with nothing configured.
func IsDirect(t Tool) bool { return t.Direct }

// RunsOn returns the queue (of q) and the deadline of a /run of the base
// tool named name. A name without a row runs as a lookup.
func RunsOn(q jobs.Queues, name string) (queue string, deadline time.Duration) {
	t, ok := Lookup(name)
	if !ok || t.QueueClass == "" {
		return q.Lookup, jobs.LookupDeadline
	}
	return q.Of(t.QueueClass), t.Deadline
}

// RateOf is what one billed unit of the base tool named name costs; 0 for
// a tool that bills nothing.
func RateOf(name string) float64 {
	t, _ := Lookup(name)
	return t.Rate
}

// Served returns the names of the runnable base tools a deployment that
// has have serves.
func Served(have Needs) []string {
	return Names(func(t Tool) bool { return t.Runnable && t.Needs&have == t.Needs })
}

// AppToolInjected are the app tool inputs the worker injects from context
// (seed 000: x-exclude-from-llm): a caller never supplies them, so a
// configured tool's input_schema may not require them.
var AppToolInjected = []string{"configured_tool_id", "key_definitions", "summary_instructions"}

// DisallowedParam returns the first of params that a bundle may not supply
// to the base tool named name, and why ("" when all may be supplied).
func DisallowedParam(name string, params []string) (param, why string) {
	t, _ := Lookup(name)
	for _, p := range params {
		if t.BundleParams != nil && !slices.Contains(t.BundleParams, p) {
			return p, "only " + strings.Join(t.BundleParams, " and ") + " come from the bundle"
		}
		if slices.Contains(t.StoredKeys, p) {
			return p, "it is a stored setting of the configured tool"
		}
	}
	return "", ""
}
