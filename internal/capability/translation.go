package capability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/tool/translate"
	"github.com/appruntime/appruntime/models"
)

// Granularities of a page's translation: the unit the engine translates
// and the overlay paints.
const (
	// GranularityPage translates the page's text as one segment.
	GranularityPage = "page"
	// GranularityParagraph translates each paragraph (blocks separated by
	// a blank line) as a segment, its wrapped lines joined; the default.
	GranularityParagraph = "paragraph"
	// GranularitySentence translates each sentence of each paragraph, cut
	// after '.', '!', '?' and '…' followed by white space and what can open
	// a sentence (a capital, a digit, a quote), and after their CJK forms:
	// a heuristic, which still cuts after an abbreviation before a capital
	// ("Dr. Smith").
	GranularitySentence = "sentence"
)

var granularities = []string{GranularityPage, GranularityParagraph, GranularitySentence}

// TranslationTimeout bounds producing one page's translation, like the
// 60 s deadline of translate_text on the lookup queue.
const TranslationTimeout = 60 * time.Second

// staleAfter is when a pending translation row is taken to belong to a
// producer that died: longer than any production may last.
const staleAfter = TranslationTimeout + 30*time.Second

// TranslationParams are get_translation's: {file_id, page, target_language,
// granularity}; granularity defaults to "paragraph".
type TranslationParams struct {
	FileID         string `json:"file_id"`
	Page           *int   `json:"page"`
	TargetLanguage string `json:"target_language"`
	Granularity    string `json:"granularity"`
}

// Segment is one unit of a page and its translation.
type Segment struct {
	Text       string `json:"text"`
	Translated string `json:"translated"`
}

// content is what a translations row holds.
type content struct {
	Segments []Segment `json:"segments"`
}

// Translation is get_translation's result: the cached row's segments with
// what they translate.
type Translation struct {
	FileID         string    `json:"file_id"`
	Page           int       `json:"page"`
	TargetLanguage string    `json:"target_language"`
	Granularity    string    `json:"granularity"`
	Segments       []Segment `json:"segments"`
}

// GetTranslation is get_translation: the cached translation of one page,
// produced through the engine on a miss (see the package doc). Not billed.
func (s *Service) GetTranslation(ctx context.Context, taskID string, p TranslationParams) (Translation, error) {
	if s.translator == nil {
		return Translation{}, errNoEngine
	}
	if p.Granularity == "" {
		p.Granularity = GranularityParagraph
	}
	switch {
	case p.FileID == "":
		return Translation{}, requireFileID(p.FileID)
	case p.Page == nil:
		return Translation{}, apperr.Invalidf("payload.page is required: the page to translate, from 1")
	case p.TargetLanguage == "":
		return Translation{}, apperr.Invalidf("payload.target_language is required (a language code such as \"de\")")
	case !translate.IsLanguageCode(p.TargetLanguage):
		return Translation{}, apperr.Invalidf("payload.target_language %q is not a language code such as \"de\" or \"pt-BR\"", p.TargetLanguage)
	case !slices.Contains(granularities, p.Granularity):
		return Translation{}, apperr.Invalidf("payload.granularity must be one of %s, got %q", strings.Join(granularities, ", "), p.Granularity)
	}
	agent, err := s.agentOf(ctx, taskID)
	if err != nil {
		return Translation{}, err
	}
	if !agent.DocumentTranslationEnabled {
		return Translation{}, apperr.Forbiddenf("translation is disabled for this agent (document_translation_enabled)")
	}
	f, err := s.files.Get(ctx, taskID, p.FileID)
	if err != nil {
		return Translation{}, err
	}
	if err := checkPage(*p.Page, f); err != nil {
		return Translation{}, err
	}
	key := translationKey{file: f, page: *p.Page, language: p.TargetLanguage, granularity: p.Granularity}
	segments, err := s.cachedTranslation(ctx, key)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && !apperr.Is(err, apperr.Timeout) {
			// The caller's deadline ran out in a read or a claim rather than
			// in the wait: the same timeout to the caller.
			return Translation{}, apperr.Wrap(err, apperr.Timeout, "the translation was not ready in time")
		}
		return Translation{}, err
	}
	return Translation{FileID: f.ID, Page: key.page, TargetLanguage: key.language, Granularity: key.granularity, Segments: segments}, nil
}

// translationKey names one translations row.
type translationKey struct {
	file        models.File
	page        int
	language    string
	granularity string
}

func (k translationKey) where(db *gorm.DB) *gorm.DB {
	return db.Where("file_id = ? AND page = ? AND target_language = ? AND granularity = ?", k.file.ID, k.page, k.language, k.granularity)
}

// cachedTranslation returns the row's segments, producing them when no
// call has, waiting when another call is.
func (s *Service) cachedTranslation(ctx context.Context, k translationKey) ([]Segment, error) {
	db := s.st.DB.WithContext(ctx)
	for {
		var row models.Translation
		err := k.where(db).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			row = models.Translation{ID: models.NewID(), FileID: k.file.ID, Page: k.page, TargetLanguage: k.language, Granularity: k.granularity, CreatedAt: s.now().UTC()}
			res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
			if res.Error != nil {
				return nil, fmt.Errorf("capability: claim translation: %w", res.Error)
			}
			if res.RowsAffected == 1 {
				return s.produce(ctx, k, row.ID)
			}
			continue // another call claimed it in between: read it
		case err != nil:
			return nil, fmt.Errorf("capability: read translation: %w", err)
		case len(row.Content) > 0:
			var c content
			if err := row.Content.Decode(&c); err != nil {
				return nil, fmt.Errorf("capability: decode translation %s: %w", row.ID, err)
			}
			return c.Segments, nil
		case s.now().Sub(row.CreatedAt) > staleAfter:
			// Its producer died: take the claim over, if no one else has.
			res := db.Model(&models.Translation{}).
				Where("id = ? AND content IS NULL AND created_at = ?", row.ID, row.CreatedAt).
				Update("created_at", s.now().UTC())
			if res.Error != nil {
				return nil, fmt.Errorf("capability: take over translation %s: %w", row.ID, res.Error)
			}
			if res.RowsAffected == 1 {
				return s.produce(ctx, k, row.ID)
			}
			continue
		}
		select { // another call is producing it
		case <-ctx.Done():
			return nil, apperr.Wrap(ctx.Err(), apperr.Timeout, "the translation was not ready in time")
		case <-time.After(s.poll):
		}
	}
}

// produce translates the page into the claimed row id. On failure the row
// is deleted, so that the next call produces it again.
func (s *Service) produce(ctx context.Context, k translationKey, id string) (segments []Segment, err error) {
	defer func() {
		if err != nil {
			s.st.DB.WithContext(context.WithoutCancel(ctx)).Where("id = ? AND content IS NULL", id).Delete(&models.Translation{})
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, TranslationTimeout)
	defer cancel()
	text, err := s.pageText(ctx, k.file, k.page)
	if err != nil {
		return nil, err
	}
	units := Segments(text.Text, k.granularity)
	segments = make([]Segment, len(units))
	for i, u := range units {
		segments[i] = Segment{Text: u}
	}
	for start := 0; start < len(units); start += translate.MaxTexts {
		batch := units[start:min(start+translate.MaxTexts, len(units))]
		translated, err := s.translator.Translate(ctx, batch, k.language)
		if err != nil {
			if ctx.Err() != nil {
				return nil, apperr.Wrap(err, apperr.Timeout, "the translation engine did not answer in time")
			}
			return nil, err
		}
		if len(translated) != len(batch) {
			return nil, apperr.New(apperr.BadGateway, "the translation engine returned %d translations for %d strings", len(translated), len(batch))
		}
		for j, t := range translated {
			segments[start+j].Translated = t
		}
	}
	raw, err := json.Marshal(content{Segments: segments})
	if err != nil {
		return nil, fmt.Errorf("capability: encode translation: %w", err)
	}
	res := s.st.DB.WithContext(ctx).Model(&models.Translation{}).
		Where("id = ? AND content IS NULL", id).Update("content", models.JSON(raw))
	if res.Error != nil {
		return nil, fmt.Errorf("capability: save translation: %w", res.Error)
	}
	return segments, nil
}

var (
	paragraphBreak = regexp.MustCompile(`\n[ \t]*\n\s*`)
	sentenceEnd    = regexp.MustCompile(`([.!?…]["'”’)\]]*)\s+|([。！？])`)
)

// startsSentence reports whether rest can open a sentence: a capital, a
// digit, an opening quote or bracket, or a letter of a script without
// case.
func startsSentence(rest string) bool {
	r, _ := utf8.DecodeRuneInString(rest)
	return unicode.IsUpper(r) || unicode.IsDigit(r) || strings.ContainsRune("\"'“‘«¿¡([", r) ||
		(unicode.IsLetter(r) && !unicode.IsLower(r) && !unicode.IsUpper(r))
}

// Segments cuts a page's text into the units of granularity, dropping
// blank ones: the whole text; its paragraphs, wrapped lines joined by a
// space; or the sentences of those paragraphs.
func Segments(text, granularity string) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return []string{}
	}
	if granularity == GranularityPage {
		return []string{text}
	}
	var out []string
	for _, para := range paragraphBreak.Split(text, -1) {
		para = strings.Join(strings.Fields(para), " ")
		if para == "" {
			continue
		}
		if granularity == GranularityParagraph {
			out = append(out, para)
			continue
		}
		last := 0
		for _, m := range sentenceEnd.FindAllStringSubmatchIndex(para, -1) {
			end := m[1]
			if m[2] >= 0 {
				end = m[3] // keep the punctuation, not the space after it
				if !startsSentence(para[m[1]:]) {
					continue // "e.g. the", "\"Where?\" she asked"
				}
			}
			if s := strings.TrimSpace(para[last:end]); s != "" {
				out = append(out, s)
			}
			last = m[1]
		}
		if s := strings.TrimSpace(para[last:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}
