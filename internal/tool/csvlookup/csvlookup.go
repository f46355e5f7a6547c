package csvlookup

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/models"
)

// Limits of the tool.
const (
	// MaxMatches caps the rows a lookup returns; the rest are cut and
	// truncated is set.
	MaxMatches = 100
	// MaxCriteria bounds the criteria of one lookup.
	MaxCriteria = 20
	// DefaultMaxFileBytes is the largest CSV file indexed.
	DefaultMaxFileBytes = 64 << 20
	// DefaultCacheBytes bounds the memory the parsed files and their
	// indexes take, the parses and index builds in flight included.
	DefaultCacheBytes = 256 << 20
	// MaxParses bounds the files read at once; each parse also reserves
	// its table's size against the cache's budget before it allocates it.
	MaxParses = 2
)

// FileRef names one version of a stored file. Version changes whenever the
// bytes do (a content hash or an upload id), so a version is parsed once.
type FileRef struct {
	ID      string
	Version string
}

// Files is where the CSV a configured tool names is found.
type Files interface {
	// Current returns the newest version of the file called name that the
	// configured tool t reads, or an apperr not_found error when there is
	// none yet.
	Current(ctx context.Context, t *models.ConfiguredTool, name string) (FileRef, error)
	// Open returns the bytes of a version.
	Open(ctx context.Context, ref FileRef) (io.ReadCloser, error)
}

// Options configure the executor. Zero values take the defaults.
type Options struct {
	MaxFileBytes int64
	CacheBytes   int64
}

// Executor runs csv_lookup_tool. It is safe for concurrent use.
type Executor struct {
	files Files
	opts  Options
	cache *cache
	loads singleflight.Group
	// parses holds a slot for each parse in flight (MaxParses).
	parses chan struct{}

	parsed  atomic.Int64
	indexed atomic.Int64
}

// New returns an executor reading files from files.
func New(files Files, opts Options) *Executor {
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	return &Executor{files: files, opts: opts, cache: newCache(opts.CacheBytes), parses: make(chan struct{}, MaxParses)}
}

// Stats counts the work behind the lookups so far.
type Stats struct {
	// FilesParsed counts file versions read and parsed.
	FilesParsed int64
	// ColumnsIndexed counts columns indexed, over all versions.
	ColumnsIndexed int64
	// CachedBytes is the memory the cached versions take now, as allocated.
	CachedBytes int64
	// PeakBytes is the most the cached versions and the parses and index
	// builds in flight have held together; never more than CacheBytes.
	PeakBytes int64
}

// Stats returns the counts so far.
func (e *Executor) Stats() Stats {
	used, peak := e.cache.bytes()
	return Stats{FilesParsed: e.parsed.Load(), ColumnsIndexed: e.indexed.Load(), CachedBytes: used, PeakBytes: peak}
}

// settings is a csv_lookup_tool's stored config. matching_strategy is
// pinned to exact for runs: the LLM strategy is unreachable from a bundle.
type settings struct {
	FileName string `json:"file_name"`
}

// input is what a bundle supplies.
type input struct {
	MatchCriteria map[string]json.RawMessage `json:"match_criteria"`
	ReturnColumns []string                   `json:"return_columns"`
}

// output is a lookup's result.
type output struct {
	Rows      []map[string]string `json:"rows"`
	RowCount  int                 `json:"row_count"`
	Truncated bool                `json:"truncated"`
}

// Run implements tool.Executor.
func (e *Executor) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var cfg settings
	if err := tool.Settings(call, &cfg); err != nil {
		return tool.Result{}, err
	}
	if strings.TrimSpace(cfg.FileName) == "" {
		return tool.Result{}, apperr.Invalidf("configured tool %q names no file", call.Tool.DisplayName)
	}
	var in input
	if err := tool.DecodeInput(call.Input, &in); err != nil {
		return tool.Result{}, err
	}
	criteria, err := criteriaOf(in.MatchCriteria)
	if err != nil {
		return tool.Result{}, err
	}
	ref, err := e.files.Current(ctx, call.Tool, cfg.FileName)
	if apperr.Is(err, apperr.NotFound) {
		return tool.Result{}, tool.Failf("the CSV file %q is not available yet", cfg.FileName)
	}
	if err != nil {
		return tool.Result{}, err
	}
	t, err := e.table(ctx, ref, cfg.FileName)
	if err != nil {
		return tool.Result{}, err
	}
	out, err := t.lookup(criteria, in.ReturnColumns, &e.indexed)
	if errors.Is(err, errOverBudget) {
		return tool.Result{}, tool.Failf("the CSV file %q with its index needs more than the %d MiB this tool may keep parsed (CSV_CACHE_MB)", cfg.FileName, e.opts.CacheBytes>>20)
	}
	if err != nil {
		return tool.Result{}, err
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return tool.Result{}, fmt.Errorf("csvlookup: encode: %w", err)
	}
	return tool.Result{Output: raw}, nil
}

// criterion is one column that must hold exactly value.
type criterion struct {
	column, value string
}

// criteriaOf turns match_criteria into criteria in column order. A value is
// matched as the text the cell holds: a string as it is, a number as
// written, true/false, and null as an empty cell.
func criteriaOf(raw map[string]json.RawMessage) ([]criterion, error) {
	if len(raw) == 0 {
		return nil, apperr.Invalidf("input.match_criteria must name at least one column and the value it must hold")
	}
	if len(raw) > MaxCriteria {
		return nil, apperr.Invalidf("input.match_criteria has %d columns; at most %d", len(raw), MaxCriteria)
	}
	out := make([]criterion, 0, len(raw))
	for col, v := range raw {
		var value any
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&value); err != nil {
			return nil, apperr.Invalidf("input.match_criteria.%s is not valid JSON", col)
		}
		switch x := value.(type) {
		case string:
			out = append(out, criterion{col, x})
		case json.Number:
			out = append(out, criterion{col, x.String()})
		case bool:
			out = append(out, criterion{col, fmt.Sprint(x)})
		case nil:
			out = append(out, criterion{col, ""})
		default:
			return nil, apperr.Invalidf("input.match_criteria.%s must be a string, number, boolean or null", col)
		}
	}
	slices.SortFunc(out, func(a, b criterion) int { return strings.Compare(a.column, b.column) })
	return out, nil
}

// table returns the parsed version ref, reading it at most once however
// many lookups ask for it at the same time.
func (e *Executor) table(ctx context.Context, ref FileRef, name string) (*table, error) {
	key := ref.ID + "@" + ref.Version
	if t := e.cache.get(key); t != nil {
		return t, nil
	}
	v, err, _ := e.loads.Do(key, func() (any, error) {
		if t := e.cache.get(key); t != nil {
			return t, nil
		}
		// The parse is shared: it must not fail because the first caller's
		// deadline passed while others still wait.
		t, err := e.parse(context.WithoutCancel(ctx), ref, name)
		if err != nil {
			return nil, err
		}
		e.parsed.Add(1)
		e.cache.put(key, t)
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*table), nil
}

// parse reads one version twice as it streams in, never holding the
// file's bytes whole: first to measure the table it makes, whose size is
// then reserved against the cache's budget (a file that cannot fit is the
// tool's error, before anything is allocated), then to fill that table's
// arena, sized once. The table returned holds its reservation; put or
// release hands it back.
func (e *Executor) parse(ctx context.Context, ref FileRef, name string) (*table, error) {
	e.parses <- struct{}{}
	defer func() { <-e.parses }()
	var sh shape
	err := e.read(ctx, ref, name, func(in io.Reader) (err error) {
		sh, err = measure(in)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := e.cache.reserve(sh.bytes()); errors.Is(err, errOverBudget) {
		return nil, tool.Failf("the CSV file %q needs %d MiB parsed, more than the %d MiB this tool may keep parsed (CSV_CACHE_MB)", name, sh.bytes()>>20, e.opts.CacheBytes>>20)
	}
	var t *table
	err = e.read(ctx, ref, name, func(in io.Reader) (err error) {
		t, err = parseTable(in, sh)
		return err
	})
	if err != nil {
		e.cache.release(sh.bytes())
		return nil, err
	}
	return t, nil
}

// read opens a version and passes its bytes, at most MaxFileBytes of them,
// to use, sorting what goes wrong into the tool's errors and the platform's.
func (e *Executor) read(ctx context.Context, ref FileRef, name string, use func(io.Reader) error) error {
	rc, err := e.files.Open(ctx, ref)
	if apperr.Is(err, apperr.NotFound) {
		return tool.Failf("the CSV file %q is not available yet", name)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	in := &countingReader{r: io.LimitReader(rc, e.opts.MaxFileBytes+1)}
	err = use(in)
	switch {
	case in.n > e.opts.MaxFileBytes:
		return tool.Failf("the CSV file %q is larger than %d MiB, the most this tool indexes", name, e.opts.MaxFileBytes>>20)
	case in.err != nil:
		return fmt.Errorf("csvlookup: read %s: %w", name, in.err)
	case err != nil:
		return tool.Failf("the CSV file %q cannot be read: %v", name, err)
	}
	return nil
}

// countingReader counts the bytes read through it and keeps the reader's
// own error apart from the parser's.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}

// errOverBudget is the cache's answer to a reservation larger than its
// whole budget.
var errOverBudget = errors.New("larger than the whole budget")

// errShapeChanged is parseTable's answer for a file that holds more than
// measure found: files never change once stored, so it is not expected.
var errShapeChanged = errors.New("it changed while it was read")

// shape bounds the table a file parses into, measured by one pass over its
// bytes that allocates nothing.
type shape struct {
	text  int64 // bytes of cell text: the file less its separators
	cells int64 // cells, the header's included
	rows  int64 // records, the header's included
}

// bytes is the table's allocated size.
func (s shape) bytes() int64 { return s.text + 4*s.cells + 4*(s.rows+1) }

// measure reads a CSV and bounds its table. Outside quotes every comma ends
// a cell and every newline a record, and neither is cell text; inside
// quotes both are text. A quote toggles between the two: in a file
// encoding/csv accepts, quotes inside a quoted cell come in pairs, and a
// file it refuses is refused by the parse that follows.
func measure(in io.Reader) (shape, error) {
	var (
		buf      [64 << 10]byte
		size     int64
		commas   int64
		newlines int64
		quoted   bool
	)
	for {
		n, err := in.Read(buf[:])
		size += int64(n)
		for _, c := range buf[:n] {
			switch c {
			case '"':
				quoted = !quoted
			case ',':
				if !quoted {
					commas++
				}
			case '\n':
				if !quoted {
					newlines++
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return shape{}, err
		}
	}
	return shape{text: size - commas - newlines, cells: commas + newlines + 1, rows: newlines + 1}, nil
}

// table is one parsed file version, laid out without pointers so that a
// cache of large files costs the garbage collector nothing to scan: every
// cell's text is in one string, and the cells are found by offsets.
type table struct {
	header  []string
	columns map[string]int // name → position; the first of duplicate names wins
	data    string         // every cell's text, row after row
	ends    []uint32       // ends[i] is where cell i ends in data
	rowAt   []uint32       // row r's cells are rowAt[r] ≤ i < rowAt[r+1]
	seed    maphash.Seed
	size    int64 // allocated bytes, indexes included

	// reserve and grew, set by the cache before the table is used, take
	// an index's size from the cache's budget before it is built and add
	// it to the table's once it is.
	reserve func(n int64) error
	grew    func(delta int64)

	mu      sync.Mutex
	indexes map[int]*index // by column
}

// index is a column's cells' hashes with their rows, sorted by hash then
// row: the rows holding a value are one run of it, found by binary search.
// Rows are compared cell by cell afterwards, so a collision costs a
// comparison, never a wrong answer. It is one allocation of indexEntrySize
// bytes a row, without pointers.
type index struct {
	entries []indexEntry
}

type indexEntry struct {
	hash uint64
	row  int32
}

// indexEntrySize is an indexEntry's size, padding included.
const indexEntrySize = 16

// parseTable parses a CSV whose first record is its header, read from in,
// into a table of the shape measure found: its arena and offsets are
// allocated once, at that size, and never copied. Rows may be shorter or
// longer than the header (missing cells are empty).
func parseTable(in io.Reader, sh shape) (*table, error) {
	br := bufio.NewReaderSize(in, 64<<10)
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) { // a UTF-8 byte order mark
		_, _ = br.Discard(3)
	}
	r := csv.NewReader(br)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("it is empty")
	}
	if err != nil {
		return nil, err
	}
	t := &table{header: header, columns: map[string]int{}, seed: maphash.MakeSeed(), indexes: map[int]*index{},
		ends: make([]uint32, 0, sh.cells), rowAt: make([]uint32, 0, sh.rows+1), size: sh.bytes()}
	for i, h := range header {
		if _, dup := t.columns[h]; !dup {
			t.columns[h] = i
		}
	}
	r.ReuseRecord = true
	var text strings.Builder
	text.Grow(int(sh.text))
	t.rowAt = append(t.rowAt, 0)
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(t.ends)+len(rec) > cap(t.ends) || len(t.rowAt) == cap(t.rowAt) {
			return nil, errShapeChanged
		}
		for _, c := range rec {
			if int64(text.Len()+len(c)) > sh.text {
				return nil, errShapeChanged
			}
			text.WriteString(c)
			t.ends = append(t.ends, uint32(text.Len()))
		}
		t.rowAt = append(t.rowAt, uint32(len(t.ends)))
	}
	t.data = text.String()
	return t, nil
}

func (t *table) rowCount() int { return len(t.rowAt) - 1 }

// column returns the position of a named column, or a 400 listing them.
func (t *table) column(name, field string) (int, error) {
	if i, ok := t.columns[name]; ok {
		return i, nil
	}
	names := t.header
	more := ""
	if len(names) > 20 {
		names, more = names[:20], ", …"
	}
	return 0, apperr.Invalidf("%s names column %q, which the CSV file does not have (it has %s%s)", field, name, strings.Join(quoteAll(names), ", "), more)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func (t *table) cell(row, col int) string {
	i := t.rowAt[row] + uint32(col)
	if i >= t.rowAt[row+1] {
		return ""
	}
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.data[start:t.ends[i]]
}

// index returns the index of column col, building it on first use once
// its size is reserved against the cache's budget.
func (t *table) index(col int, built *atomic.Int64) (*index, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if idx, ok := t.indexes[col]; ok {
		return idx, nil
	}
	n := t.rowCount()
	size := indexEntrySize * int64(n)
	if t.reserve != nil {
		if err := t.reserve(size); err != nil {
			return nil, err
		}
	}
	idx := &index{entries: make([]indexEntry, n)}
	for r := range n {
		idx.entries[r] = indexEntry{hash: maphash.String(t.seed, t.cell(r, col)), row: int32(r)}
	}
	slices.SortFunc(idx.entries, func(a, b indexEntry) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	t.indexes[col] = idx
	built.Add(1)
	if t.grew != nil {
		t.grew(size)
	}
	return idx, nil
}

// candidates are the entries whose cell in the index's column may hold
// value, in row order.
func (idx *index) candidates(seed maphash.Seed, value string) []indexEntry {
	h := maphash.String(seed, value)
	i, _ := slices.BinarySearchFunc(idx.entries, h, func(e indexEntry, h uint64) int { return cmp.Compare(e.hash, h) })
	j := i
	for j < len(idx.entries) && idx.entries[j].hash == h {
		j++
	}
	return idx.entries[i:j]
}

// lookup returns the rows matching every criterion, with returnColumns (all
// columns when none are named).
func (t *table) lookup(criteria []criterion, returnColumns []string, built *atomic.Int64) (output, error) {
	cols := make([]int, len(criteria))
	for i, c := range criteria {
		col, err := t.column(c.column, "input.match_criteria")
		if err != nil {
			return output{}, err
		}
		cols[i] = col
	}
	if len(returnColumns) == 0 {
		returnColumns = t.header
	}
	ret := make([]int, len(returnColumns))
	for i, name := range returnColumns {
		col, err := t.column(name, "input.return_columns")
		if err != nil {
			return output{}, err
		}
		ret[i] = col
	}
	// Start from the criterion with the fewest candidate rows, then check
	// every criterion cell by cell.
	var candidates []indexEntry
	for i, c := range criteria {
		idx, err := t.index(cols[i], built)
		if err != nil {
			return output{}, err
		}
		rows := idx.candidates(t.seed, c.value)
		if i == 0 || len(rows) < len(candidates) {
			candidates = rows
		}
	}
	out := output{Rows: []map[string]string{}}
	for _, e := range candidates {
		r := e.row
		if !t.matches(int(r), criteria, cols) {
			continue
		}
		if len(out.Rows) == MaxMatches {
			out.Truncated = true
			break
		}
		row := make(map[string]string, len(ret))
		for i, col := range ret {
			row[returnColumns[i]] = t.cell(int(r), col)
		}
		out.Rows = append(out.Rows, row)
	}
	out.RowCount = len(out.Rows)
	return out, nil
}

func (t *table) matches(row int, criteria []criterion, cols []int) bool {
	for i, c := range criteria {
		if t.cell(row, cols[i]) != c.value {
			return false
		}
	}
	return true
}
