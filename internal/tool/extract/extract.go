package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/schema"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/models"
)

// Executor runs structured_data_extraction.
type Executor struct {
	model *llm.Client
}

// New returns an executor on the model behind client; with a nil client
// every run answers 501. The run's deadline (9 minutes on the extract
// queue) bounds each call, not the client's own timeout.
func New(client *llm.Client) *Executor {
	if client == nil {
		return &Executor{}
	}
	return &Executor{model: client.WithTimeout(0)}
}

// settings is a structured_data_extraction's stored config.
type settings struct {
	Instructions      string            `json:"instructions"`
	OutputSchema      json.RawMessage   `json:"output_schema"`
	PauseOnValidation bool              `json:"pause_on_validation"`
	Validations       []json.RawMessage `json:"validations"`
	Model             string            `json:"model"`
	// Citations asks the model where in the document each answer lies
	// (issue 30 §2): the output then carries citations, which the run
	// stores on the task (internal/citation).
	Citations bool `json:"citations"`
}

// input is what a bundle supplies (basetool.Tool.BundleParams).
type input struct {
	FileURL string   `json:"file_url"`
	Sheets  []string `json:"sheets"`
}

type output struct {
	Data  json.RawMessage `json:"data"`
	Pages int             `json:"pages"`
	// OCRPages are the pages read by OCR (no text layer), whose text the
	// model was sent beside the document.
	OCRPages  []int           `json:"ocr_pages,omitempty"`
	Citations json.RawMessage `json:"citations,omitempty"`
}

// Run implements tool.Executor.
func (e *Executor) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var cfg settings
	if err := tool.Settings(call, &cfg); err != nil {
		return tool.Result{}, err
	}
	if cfg.PauseOnValidation {
		return tool.Result{}, apperr.Forbiddenf("configured tool %q pauses on validation, which a bundle's run cannot do", call.Tool.DisplayName)
	}
	if e.model == nil {
		return tool.Result{}, apperr.NotImplementedf("structured_data_extraction cannot run on this deployment: no extraction model is configured")
	}
	outSchema, err := schema.Compile(cfg.OutputSchema, "config.output_schema")
	if err != nil {
		return tool.Result{}, err
	}
	var in input
	if err := tool.DecodeInput(call.Input, &in); err != nil {
		return tool.Result{}, err
	}
	if strings.TrimSpace(in.FileURL) == "" {
		return tool.Result{}, apperr.Invalidf("input.file_url is required: the managed-storage URL of the document to read")
	}
	if call.Document == nil {
		return tool.Result{}, errors.New("extract: the caller did not resolve input.file_url to a document")
	}
	parts, pages, err := read(ctx, call.Document, in.Sheets)
	if err != nil {
		return tool.Result{}, err
	}
	answerSchema := cfg.OutputSchema
	if cfg.Citations {
		answerSchema = citedSchema(cfg.OutputSchema)
	}
	answer, err := e.model.CompleteSchema(ctx, cfg.Model, "extraction", answerSchema, []llm.Message{
		{Role: "system", Content: systemPrompt(cfg)},
		{Role: "user", Parts: parts},
	})
	if err != nil {
		return tool.Result{}, modelError(ctx, err, pages)
	}
	out := output{Data: answer, Pages: pages}
	if len(call.Document.OCR) > 0 {
		out.OCRPages = call.Document.OCRPages
	}
	if cfg.Citations {
		var cited struct {
			Data      json.RawMessage `json:"data"`
			Citations json.RawMessage `json:"citations"`
		}
		if err := json.Unmarshal(answer, &cited); err != nil || len(cited.Data) == 0 {
			return tool.Result{}, &tool.Failure{Message: "the model's answer has no data beside its citations", Units: pages}
		}
		out.Data, out.Citations = cited.Data, cited.Citations
	}
	if err := conforms(outSchema, out.Data); err != nil {
		f := tool.Failf("the model's answer does not match the output schema: %v", err)
		f.Units = pages
		return tool.Result{}, f
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return tool.Result{}, fmt.Errorf("extract: encode: %w", err)
	}
	return tool.Result{Output: raw, Units: pages}, nil
}

// citedSchema is the answer asked of the model when the tool cites: the
// output schema's data beside the citations of where each value was read
// (page from 1, the quoted text, and the box on the page as fractions of
// its width and height, or null when the model cannot place it).
func citedSchema(outSchema json.RawMessage) json.RawMessage {
	fraction := map[string]any{"type": "number", "minimum": 0, "maximum": 1}
	return json.RawMessage(models.MustJSON(map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"data", "citations"},
		"properties": map[string]any{
			"data": outSchema,
			"citations": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "additionalProperties": false, "required": []string{"page", "quote", "box"},
				"properties": map[string]any{
					"page":  map[string]any{"type": "integer", "minimum": 1},
					"quote": map[string]any{"type": "string"},
					"box": map[string]any{"type": []string{"object", "null"}, "additionalProperties": false,
						"required":   []string{"x", "y", "w", "h"},
						"properties": map[string]any{"x": fraction, "y": fraction, "w": fraction, "h": fraction}},
				},
			}},
		},
	}))
}

// systemPrompt carries the configured tool's instructions and validations.
func systemPrompt(cfg settings) string {
	var b strings.Builder
	b.WriteString("You extract structured data from the document the user sends.\n\nInstructions:\n")
	b.WriteString(cfg.Instructions)
	b.WriteString("\n\nAnswer with one JSON object that matches the JSON Schema of the response format.")
	if cfg.Citations {
		b.WriteString(" Put the extracted values in data, and in citations where in the document each was read: the page (from 1), the exact text quoted, and its box on the page as fractions of the page's width and height from its top left (null when unknown).")
	}
	if len(cfg.Validations) > 0 {
		b.WriteString("\n\nThe answer must also pass these validations:")
		for _, v := range cfg.Validations {
			b.WriteString("\n- ")
			b.Write(v)
		}
	}
	return b.String()
}

// conforms checks the model's answer against the output schema.
func conforms(outSchema *jsonschema.Schema, answer json.RawMessage) error {
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(answer))
	if err != nil {
		return err
	}
	mismatch, err := schema.Mismatch(outSchema, value)
	if err != nil {
		return err
	}
	if mismatch != "" {
		return errors.New(mismatch)
	}
	return nil
}

// modelError maps a failed model call. A model that answered but not with
// a JSON object has read the pages: that is the tool's failure, billed.
func modelError(ctx context.Context, err error, pages int) error {
	if ctx.Err() != nil {
		return tool.Stopped(ctx)
	}
	if errors.Is(err, llm.ErrNotJSONObject) {
		return &tool.Failure{Message: "the model did not answer with a JSON object", Units: pages}
	}
	var se *llm.StatusError
	if errors.As(err, &se) && (se.Status == http.StatusTooManyRequests || se.Status == http.StatusServiceUnavailable) {
		return apperr.Wrap(err, apperr.Unavailable, "the extraction model is busy; retry")
	}
	return apperr.Wrap(err, apperr.BadGateway, "the extraction model failed")
}
