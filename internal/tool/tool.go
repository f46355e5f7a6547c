package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// Call is one run of a tool. The caller resolves everything that needs the
// platform database or the session (the configured tool, the agent, the
// bound integration, the document behind a file_url) so that an executor
// depends on nothing but its own backing service.
type Call struct {
	// BaseTool names the executor: models.BasePythonCode and the others.
	BaseTool string
	// Tool is the configured tool whose stored settings the run uses (code,
	// file name, query, extraction settings). Nil when the base tool is
	// named directly (translate_text). Settings are never read from Input.
	Tool *models.ConfiguredTool
	// Agent is the session's agent; translate_text reads its
	// DocumentTranslationEnabled.
	Agent models.Agent
	// Integration is the configured tool's bound integration, which the
	// caller has checked belongs to the session's workspace (the SQL tools).
	Integration *models.Integration
	// Document is what structured_data_extraction reads: the file behind
	// the input's file_url, resolved and scope-checked by the caller.
	Document *Document
	// Input is the JSON object the bundle supplied, holding only the keys
	// the binding lets it send plus the session's ids. Empty means {}.
	Input json.RawMessage
}

// Document is a file's bytes with the content type it was stored with,
// and the text OCR read on its pages without a text layer.
type Document struct {
	Name        string
	ContentType string
	Data        []byte
	// OCRPages are the pages (from 1) of a PDF or an image that have no
	// text layer and whose text was read by OCR (the file's OCR pass); OCR
	// holds their text, in page order (capped: it may hold fewer).
	OCRPages []int
	OCR      []PageText
}

// PageText is the text of one page of a Document.
type PageText struct {
	Page int
	Text string
}

// Result is what a run produced.
type Result struct {
	// Output is the tool's output, a JSON value.
	Output json.RawMessage
	// Units is what the run bills at the tool's rate: translate_text one per
	// string translated, structured_data_extraction one per page read; the
	// other tools bill nothing.
	Units int
}

// Executor runs one base tool. Run must return promptly once ctx is done,
// having stopped everything it started (a subprocess's whole process group,
// a query on the server); the caller sets ctx's deadline to the tool's.
type Executor interface {
	Run(ctx context.Context, call Call) (Result, error)
}

// Func adapts a function to Executor.
type Func func(ctx context.Context, call Call) (Result, error)

// Run implements Executor.
func (f Func) Run(ctx context.Context, call Call) (Result, error) { return f(ctx, call) }

// Failure is an error the tool itself reports: the call was allowed and
// reached the tool, which then could not do it (a script that raised, a CSV
// not yet available, translation disabled, a query the database refused).
// The caller answers 200 with Message as the reply's error.
type Failure struct {
	// Message is shown to the bundle.
	Message string
	// Detail adds what helps whoever wrote the tool (a traceback); it may be
	// empty.
	Detail string
	// Units is what the run bills although it failed, because the work was
	// done: an extraction whose model read the pages but answered outside
	// the output schema.
	Units int
	// Cause is what only the operator sees (the worker logs it): the
	// service's own words, which the bundle is not told.
	Cause error
}

func (f *Failure) Error() string { return "tool failure: " + f.Message }

// Unwrap returns the failure's cause.
func (f *Failure) Unwrap() error { return f.Cause }

// Failf returns a Failure whose message is formatted like fmt.Sprintf.
func Failf(format string, args ...any) *Failure {
	return &Failure{Message: fmt.Sprintf(format, args...)}
}

// AsFailure returns the Failure in err's chain, if any.
func AsFailure(err error) (*Failure, bool) {
	var f *Failure
	ok := errors.As(err, &f)
	return f, ok
}

// Stopped is the error of a run whose context ended: 504 when its deadline
// passed, and also when it was cancelled, which is how the API stops a run
// at its deadline from another process.
func Stopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return apperr.Wrap(ctx.Err(), apperr.Timeout, "the tool did not finish before its deadline")
	}
	return apperr.Wrap(ctx.Err(), apperr.Timeout, "the tool run was cancelled at its deadline")
}

// Set routes calls to the executor of their base tool. A base tool with no
// executor (one the deployment lacks, or one that does not exist) is 501.
type Set map[string]Executor

// Run runs call on its base tool's executor. Whatever the executor returns
// after ctx ended becomes the Timeout error of Stopped, so a caller need not
// tell "the query failed because it was cancelled" from "the deadline
// passed".
func (s Set) Run(ctx context.Context, call Call) (Result, error) {
	ex, ok := s[call.BaseTool]
	if !ok || ex == nil {
		return Result{}, apperr.NotImplementedf("%s cannot run on this deployment", call.BaseTool)
	}
	res, err := ex.Run(ctx, call)
	if err != nil {
		if _, failed := AsFailure(err); !failed && ctx.Err() != nil {
			return Result{}, Stopped(ctx)
		}
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, Stopped(ctx)
	}
	return res, nil
}

// Settings decodes the configured tool's stored config into v. A base tool
// run without a configured tool, or a config that does not decode, is a
// 400: the binding names something that cannot run.
func Settings(call Call, v any) error {
	if call.Tool == nil {
		return apperr.Invalidf("%s runs only as a configured tool: name one by its display name", call.BaseTool)
	}
	if err := call.Tool.Config.Decode(v); err != nil {
		return apperr.Invalidf("configured tool %q has settings %s cannot read: %v", call.Tool.DisplayName, call.BaseTool, err)
	}
	return nil
}
