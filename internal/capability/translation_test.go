package capability_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 2))))
	return b.Bytes()
}

func translation(fileID string, page int, language, granularity string) capability.TranslationParams {
	return capability.TranslationParams{FileID: fileID, Page: &page, TargetLanguage: language, Granularity: granularity}
}

func TestGetTranslationIsCached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, testkit.Tx(t))
	pdf := f.upload(t, f.task, "invoice.pdf", documenttest.PDF(pages(3)...))

	out, err := f.call(t, f.task, capability.GetTranslation, `{"file_id":"`+pdf.ID+`","page":2,"target_language":"de","granularity":"sentence"}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"file_id": pdf.ID, "page": float64(2), "target_language": "de", "granularity": "sentence",
		"segments": []any{
			map[string]any{"text": "Page 2 opens here.", "translated": "[de] PAGE 2 OPENS HERE."},
			map[string]any{"text": "It wraps onto a second line.", "translated": "[de] IT WRAPS ONTO A SECOND LINE."},
			map[string]any{"text": "A second paragraph on page 2!", "translated": "[de] A SECOND PARAGRAPH ON PAGE 2!"},
			map[string]any{"text": "Is it read?", "translated": "[de] IS IT READ?"},
		},
	}, out)
	require.Equal(t, 1, f.engine.count())

	again, err := f.call(t, f.task, capability.GetTranslation, `{"file_id":"`+pdf.ID+`","page":2,"target_language":"de","granularity":"sentence"}`)
	require.NoError(t, err)
	require.Equal(t, out, again)
	require.Equal(t, 1, f.engine.count(), "the second call is served from the cache: one engine request for two calls")

	var rows []models.Translation
	require.NoError(t, f.st.DB.Where("file_id = ?", pdf.ID).Find(&rows).Error)
	require.Len(t, rows, 1)
	require.JSONEq(t, `{"segments":[
		{"text":"Page 2 opens here.","translated":"[de] PAGE 2 OPENS HERE."},
		{"text":"It wraps onto a second line.","translated":"[de] IT WRAPS ONTO A SECOND LINE."},
		{"text":"A second paragraph on page 2!","translated":"[de] A SECOND PARAGRAPH ON PAGE 2!"},
		{"text":"Is it read?","translated":"[de] IS IT READ?"}]}`, string(rows[0].Content))

	// Each page, language and granularity is a translation of its own;
	// paragraph is the default.
	par, err := f.caps.GetTranslation(ctx, f.task, translation(pdf.ID, 2, "de", ""))
	require.NoError(t, err)
	require.Equal(t, "paragraph", par.Granularity)
	require.Equal(t, []capability.Segment{
		{Text: "Page 2 opens here. It wraps onto a second line.", Translated: "[de] PAGE 2 OPENS HERE. IT WRAPS ONTO A SECOND LINE."},
		{Text: "A second paragraph on page 2! Is it read?", Translated: "[de] A SECOND PARAGRAPH ON PAGE 2! IS IT READ?"},
	}, par.Segments)
	_, err = f.caps.GetTranslation(ctx, f.task, translation(pdf.ID, 2, "pt-BR", "paragraph"))
	require.NoError(t, err)
	_, err = f.caps.GetTranslation(ctx, f.task, translation(pdf.ID, 3, "de", "paragraph"))
	require.NoError(t, err)
	whole, err := f.caps.GetTranslation(ctx, f.task, translation(pdf.ID, 3, "de", "page"))
	require.NoError(t, err)
	require.Len(t, whole.Segments, 1)
	require.Equal(t, 5, f.engine.count())
	_, err = f.caps.GetTranslation(ctx, f.task, translation(pdf.ID, 2, "de", "paragraph"))
	require.NoError(t, err)
	require.Equal(t, 5, f.engine.count())

	// A page without text is translated without asking the engine.
	img := f.upload(t, f.task, "photo.png", pngBytes(t))
	empty, err := f.caps.GetTranslation(ctx, f.task, translation(img.ID, 1, "de", "page"))
	require.NoError(t, err)
	require.Empty(t, empty.Segments)
	require.Equal(t, 5, f.engine.count())
}

func TestGetTranslationRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.Tx(t))
	pdf := f.upload(t, f.task, "invoice.pdf", documenttest.PDF(pages(2)...))
	theirs := f.upload(t, f.other, "theirs.pdf", documenttest.PDF(pages(2)...))

	_, err := f.call(t, f.task, capability.GetTranslation, `{"file_id":"`+theirs.ID+`","page":1,"target_language":"de"}`)
	require.True(t, apperr.Is(err, apperr.NotFound), "another task's file: %v", err)

	for payload, want := range map[string]string{
		`{"page":1,"target_language":"de"}`:                                                 "payload.file_id is required",
		`{"file_id":"` + pdf.ID + `","target_language":"de"}`:                               "payload.page is required",
		`{"file_id":"` + pdf.ID + `","page":3,"target_language":"de"}`:                      "payload.page must be from 1 to 2",
		`{"file_id":"` + pdf.ID + `","page":1}`:                                             "payload.target_language is required",
		`{"file_id":"` + pdf.ID + `","page":1,"target_language":"German"}`:                  `payload.target_language "German" is not a language code`,
		`{"file_id":"` + pdf.ID + `","page":1,"target_language":"de","granularity":"word"}`: `payload.granularity must be one of page, paragraph, sentence, got "word"`,
		`{"file_id":"` + pdf.ID + `","page":1,"target_language":"de","source":"en"}`:        `unknown field "source"`,
	} {
		_, err := f.call(t, f.task, capability.GetTranslation, payload)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", payload, err)
		require.ErrorContains(t, err, want, payload)
	}

	require.NoError(t, f.st.DB.Model(&f.agent).Update("document_translation_enabled", false).Error)
	_, err = f.call(t, f.task, capability.GetTranslation, `{"file_id":"`+pdf.ID+`","page":1,"target_language":"de"}`)
	require.True(t, apperr.Is(err, apperr.Forbidden), "%v", err)
	require.ErrorContains(t, err, "document_translation_enabled")
	require.Zero(t, f.engine.count(), "nothing refused reached the engine")
}

func TestGetTranslationEngineFailureIsNotCached(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.Tx(t))
	pdf := f.upload(t, f.task, "invoice.pdf", documenttest.PDF(pages(1)...))
	f.engine.fail = true
	_, err := f.caps.GetTranslation(context.Background(), f.task, translation(pdf.ID, 1, "de", "page"))
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
	var n int64
	require.NoError(t, f.st.DB.Model(&models.Translation{}).Where("file_id = ?", pdf.ID).Count(&n).Error)
	require.Zero(t, n, "a failed production leaves no row behind")

	f.engine.mu.Lock()
	f.engine.fail = false
	f.engine.mu.Unlock()
	got, err := f.caps.GetTranslation(context.Background(), f.task, translation(pdf.ID, 1, "de", "page"))
	require.NoError(t, err, "the next call produces it")
	require.Len(t, got.Segments, 1)
	require.Equal(t, 2, f.engine.count())
}

// TestGetTranslationConcurrentMisses: calls that miss together (on
// connections of their own, as on several replicas) produce the
// translation once.
func TestGetTranslationConcurrentMisses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.Schema(t))
	pdf := f.upload(t, f.task, "invoice.pdf", documenttest.PDF(pages(1)...))
	f.engine.delay = 300 * time.Millisecond

	const callers = 8
	results := make([]capability.Translation, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			results[i], errs[i] = f.caps.GetTranslation(context.Background(), f.task, translation(pdf.ID, 1, "fr", "paragraph"))
		})
	}
	wg.Wait()
	for i := range callers {
		require.NoError(t, errs[i])
		require.Equal(t, results[0], results[i])
	}
	require.Len(t, results[0].Segments, 2)
	require.Equal(t, 1, f.engine.count(), "one engine request for %d concurrent misses", callers)
}

// It runs on a schema of its own, not testkit.Tx: the first call's deadline
// may cancel a statement in flight, which ends the connection it ran on, and
// with it a test transaction.
func TestGetTranslationTakesOverAStaleClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.Schema(t))
	pdf := f.upload(t, f.task, "invoice.pdf", documenttest.PDF(pages(1)...))
	claim := models.Translation{ID: models.NewID(), FileID: pdf.ID, Page: 1, TargetLanguage: "de", Granularity: "page", CreatedAt: f.now}
	require.NoError(t, f.st.DB.Create(&claim).Error)

	// A fresh claim is another call at work: this one waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := f.caps.GetTranslation(ctx, f.task, translation(pdf.ID, 1, "de", "page"))
	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
	require.Zero(t, f.engine.count())

	// A claim older than any production can last was left by a producer
	// that died: it is taken over.
	f.now = f.now.Add(capability.TranslationTimeout + time.Minute)
	got, err := f.caps.GetTranslation(context.Background(), f.task, translation(pdf.ID, 1, "de", "page"))
	require.NoError(t, err)
	require.Len(t, got.Segments, 1)
	require.Equal(t, 1, f.engine.count())
	var row models.Translation
	require.NoError(t, f.st.DB.Where("id = ?", claim.ID).Take(&row).Error)
	require.NotEmpty(t, row.Content, "the claimed row holds the translation")
}

func TestSegments(t *testing.T) {
	t.Parallel()
	text := "Dear customer, thank you.\nWe shipped (3 boxes). Track them at example.com!\n\n  \n\"Where?\" she asked. 請付款。謝謝！\nThe end"
	cases := []struct {
		granularity string
		want        []string
	}{
		{"page", []string{text}},
		{"paragraph", []string{
			"Dear customer, thank you. We shipped (3 boxes). Track them at example.com!",
			"\"Where?\" she asked. 請付款。謝謝！ The end",
		}},
		{"sentence", []string{
			"Dear customer, thank you.", "We shipped (3 boxes).", "Track them at example.com!",
			"\"Where?\" she asked.", "請付款。", "謝謝！", "The end",
		}},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, capability.Segments(text, tc.granularity), tc.granularity)
	}
	require.Empty(t, capability.Segments(" \n\n ", "sentence"))
	require.Equal(t, []string{"Pay e.g. by card.", "Or not."}, capability.Segments("Pay e.g. by card. Or not.", "sentence"),
		"no cut before a word in lower case")
}
