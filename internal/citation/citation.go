package citation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// Limits of citations.
const (
	// MaxPerResult is the most citations one tool result carries.
	MaxPerResult = 200
	// MaxPerTask is the most citations one task stores.
	MaxPerTask = 10000
	// MaxQuote is the longest quote, in characters.
	MaxQuote = 2000
	// MaxFileName is the longest file name, in characters.
	MaxFileName = 255
	// MaxIDs is the most ids one lookup names (open_citation's citation_ids).
	MaxIDs = 100
)

// Box is where a citation lies on its page: fractions of the page's width
// and height from its top left (as OCR's word boxes and the viewer's
// selection).
type Box struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// Citation is one stored citation of a task.
type Citation struct {
	ID        int64     `json:"id" gorm:"primaryKey"`
	TaskID    string    `json:"-"`
	RunID     string    `json:"-"`
	Position  int       `json:"-"`
	FileName  string    `json:"file" gorm:"column:file_name"`
	Page      int       `json:"page"`
	Quote     string    `json:"quote"`
	Box       *Box      `json:"box,omitempty" gorm:"serializer:json"`
	CreatedAt time.Time `json:"created_at"`
}

// TableName implements gorm's tabler.
func (Citation) TableName() string { return "task_citations" }

// Input is a citation as a tool result carries it, before it has an id.
type Input struct {
	File  string `json:"file"`
	Page  int    `json:"page"`
	Quote string `json:"quote"`
	Box   *Box   `json:"box,omitempty"`
}

// Parse reads the citations of a tool's output: its top-level "citations"
// array, nil when there is none (or the output is not an object). A file
// left out is defaultFile (the document the tool read), when there is one.
// A malformed citation is an invalid error naming it.
func Parse(output json.RawMessage, defaultFile string) ([]Input, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(output, &obj) != nil {
		return nil, nil
	}
	raw, ok := obj["citations"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var in []Input
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, apperr.Invalidf("citations is an array of {file, page, quote, box?}: %v", err)
	}
	if len(in) > MaxPerResult {
		return nil, apperr.Invalidf("citations holds %d citations; a result carries at most %d", len(in), MaxPerResult)
	}
	for i := range in {
		c := &in[i]
		if c.File == "" {
			c.File = defaultFile
		}
		if err := check(*c); err != nil {
			return nil, apperr.Invalidf("citations[%d]: %v", i, err)
		}
	}
	return in, nil
}

func check(c Input) error {
	switch {
	case strings.TrimSpace(c.File) == "":
		return errors.New("file names a file of the task")
	case utf8.RuneCountInString(c.File) > MaxFileName:
		return fmt.Errorf("file is at most %d characters", MaxFileName)
	case c.Page < 1:
		return errors.New("page is a page number from 1")
	case strings.TrimSpace(c.Quote) == "" && c.Box == nil:
		return errors.New("quote is required when there is no box")
	case utf8.RuneCountInString(c.Quote) > MaxQuote:
		return fmt.Errorf("quote is at most %d characters", MaxQuote)
	}
	if b := c.Box; b != nil {
		for _, v := range []float64{b.X, b.Y, b.W, b.H} {
			if math.IsNaN(v) || v < 0 || v > 1 {
				return errors.New("box holds fractions of the page from 0 to 1: {x, y, w, h}")
			}
		}
		if b.W == 0 || b.H == 0 || b.X+b.W > 1.0001 || b.Y+b.H > 1.0001 {
			return errors.New("box has a width and a height and lies on the page")
		}
	}
	return nil
}

// Save stores run runID's citations on taskID in tx and returns them with
// their ids, in order. A run saved again (a job that ran twice) gets the
// ids stored the first time. A task past MaxPerTask is an over_budget
// error.
func Save(ctx context.Context, tx *gorm.DB, taskID, runID string, in []Input) ([]Citation, error) {
	if len(in) == 0 {
		return nil, nil
	}
	var prior []Citation
	if err := tx.WithContext(ctx).Where("run_id = ? AND task_id = ?", runID, taskID).Order("position").Find(&prior).Error; err != nil {
		return nil, fmt.Errorf("citation: read the run's: %w", err)
	}
	if len(prior) > 0 {
		return prior, nil
	}
	var held int64
	if err := tx.WithContext(ctx).Model(&Citation{}).Where("task_id = ?", taskID).Count(&held).Error; err != nil {
		return nil, fmt.Errorf("citation: count the task's: %w", err)
	}
	if held+int64(len(in)) > MaxPerTask {
		return nil, apperr.New(apperr.OverBudget, "the task holds %d citations; a task stores at most %d", held, MaxPerTask)
	}
	now := time.Now().UTC()
	rows := make([]Citation, len(in))
	for i, c := range in {
		rows[i] = Citation{TaskID: taskID, RunID: runID, Position: i, FileName: c.File, Page: c.Page, Quote: c.Quote, Box: c.Box, CreatedAt: now}
	}
	if err := tx.WithContext(ctx).Create(&rows).Error; err != nil {
		return nil, fmt.Errorf("citation: save: %w", err)
	}
	return rows, nil
}

// Attach rewrites output's "citations" with the stored ones (each with its
// id); output without citations is returned as it is.
func Attach(output json.RawMessage, stored []Citation) (json.RawMessage, error) {
	if len(stored) == 0 {
		return output, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(output, &obj); err != nil {
		return nil, fmt.Errorf("citation: attach: %w", err)
	}
	obj["citations"] = json.RawMessage(models.MustJSON(stored))
	return json.Marshal(obj)
}

// List returns taskID's citations in id order; fileName, when set, keeps
// one file's.
func List(ctx context.Context, db *gorm.DB, taskID, fileName string) ([]Citation, error) {
	q := db.WithContext(ctx).Where("task_id = ?", taskID)
	if fileName != "" {
		q = q.Where("file_name = ?", fileName)
	}
	out := []Citation{}
	if err := q.Order("id").Limit(MaxPerTask).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("citation: list: %w", err)
	}
	return out, nil
}

// ByIDs returns taskID's citations with ids, in the order asked. An id the
// task does not hold (another task's included) is a not_found error naming
// it; more than MaxIDs ids is invalid.
func ByIDs(ctx context.Context, db *gorm.DB, taskID string, ids []int64) ([]Citation, error) {
	if len(ids) == 0 || len(ids) > MaxIDs {
		return nil, apperr.Invalidf("citation_ids names 1 to %d citations", MaxIDs)
	}
	var rows []Citation
	if err := db.WithContext(ctx).Where("task_id = ? AND id IN ?", taskID, ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("citation: by ids: %w", err)
	}
	byID := make(map[int64]Citation, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]Citation, 0, len(ids))
	var unknown []string
	for _, id := range ids {
		c, ok := byID[id]
		if !ok {
			unknown = append(unknown, fmt.Sprint(id))
			continue
		}
		out = append(out, c)
	}
	if len(unknown) > 0 {
		return nil, apperr.New(apperr.NotFound, "unknown citation id %s: the task holds no such citation", strings.Join(unknown, ", "))
	}
	return out, nil
}
