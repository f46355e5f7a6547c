package translate

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/tool"
)

// MaxTexts is the most strings one call translates (seed 000: "texts takes
// up to 200 strings"; batch a form's fields in one call).
const MaxTexts = 200

// languageCode is a target language as engines name them: "de", "pt-BR",
// "zh-Hans".
var languageCode = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)

// IsLanguageCode reports whether s is a target language as engines name
// them ("de", "pt-BR", "zh-Hans"): the rule of every translation's
// target_language.
func IsLanguageCode(s string) bool { return languageCode.MatchString(s) }

// Provider is a translation engine.
type Provider interface {
	// Translate returns the translations of texts into target, in order.
	// The source language is detected. Errors are apperr errors: invalid
	// when the engine refuses the request (an unsupported language), bad
	// gateway or unavailable when the engine fails.
	Translate(ctx context.Context, texts []string, target string) ([]string, error)
}

// Executor runs translate_text.
type Executor struct {
	provider Provider
}

// New returns an executor on provider; with a nil provider every run
// answers 501.
func New(provider Provider) *Executor { return &Executor{provider: provider} }

type input struct {
	Texts          []string `json:"texts"`
	TargetLanguage string   `json:"target_language"`
}

// Translation is one string and its translation.
type Translation struct {
	Text       string `json:"text"`
	Translated string `json:"translated"`
}

type output struct {
	Translations    []Translation `json:"translations"`
	TranslatedCount int           `json:"translated_count"`
}

// Run implements tool.Executor. Blank strings come back as they are and are
// not billed.
func (e *Executor) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	if e.provider == nil {
		return tool.Result{}, apperr.NotImplementedf("translate_text cannot run on this deployment: no translation engine is configured")
	}
	var in input
	if err := tool.DecodeInput(call.Input, &in); err != nil {
		return tool.Result{}, err
	}
	switch {
	case len(in.Texts) == 0:
		return tool.Result{}, apperr.Invalidf("input.texts must hold at least one string")
	case len(in.Texts) > MaxTexts:
		return tool.Result{}, apperr.Invalidf("input.texts holds %d strings; at most %d per call", len(in.Texts), MaxTexts)
	case in.TargetLanguage == "":
		return tool.Result{}, apperr.Invalidf("input.target_language is required (a language code such as \"de\")")
	case !IsLanguageCode(in.TargetLanguage):
		return tool.Result{}, apperr.Invalidf("input.target_language %q is not a language code such as \"de\" or \"pt-BR\"", in.TargetLanguage)
	}
	if !call.Agent.DocumentTranslationEnabled {
		return tool.Result{}, tool.Failf("translation is disabled for this agent (document_translation_enabled)")
	}
	out := output{Translations: make([]Translation, len(in.Texts))}
	var send []string
	var at []int
	for i, text := range in.Texts {
		out.Translations[i] = Translation{Text: text, Translated: text}
		if strings.TrimSpace(text) != "" {
			send = append(send, text)
			at = append(at, i)
		}
	}
	if len(send) > 0 {
		translated, err := e.provider.Translate(ctx, send, in.TargetLanguage)
		if err != nil {
			return tool.Result{}, err
		}
		if len(translated) != len(send) {
			return tool.Result{}, apperr.New(apperr.BadGateway, "the translation engine returned %d translations for %d strings", len(translated), len(send))
		}
		for j, i := range at {
			out.Translations[i].Translated = translated[j]
		}
	}
	out.TranslatedCount = len(send)
	raw, err := json.Marshal(out)
	if err != nil {
		return tool.Result{}, fmt.Errorf("translate: encode: %w", err)
	}
	return tool.Result{Output: raw, Units: len(send)}, nil
}
