package document

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Bounds of reading a spreadsheet, beside the budgets of every document.
const (
	// maxPartBytes bounds the decoded XML of a workbook's small parts (the
	// workbook, its relationships): a few KB in real files.
	maxPartBytes = 4 << 20
	// maxSharedStringBytes bounds the text of the shared-string table held
	// while a sheet is rendered; each string is also cut at the text's
	// limit, since the sheet's text never holds more.
	maxSharedStringBytes = 16 << 20
	// maxXMLTagBytes bounds one XML tag (its name and attributes): a
	// cell's tag is a few dozen bytes.
	maxXMLTagBytes = 64 << 10
)

// workbook is an XLSX's list of sheets, read without the sheets
// themselves: each sheet is streamed when its page is read.
type workbook struct {
	zip    *zip.Reader
	sheets []sheetPart
	// sharedStrings is the shared-string part's path, "" when there is none.
	sharedStrings string
}

type sheetPart struct{ name, path string }

// openWorkbook reads a spreadsheet's sheet list; a file that is not one
// is an invalid error, one of more than MaxSheets sheets over budget.
func openWorkbook(data []byte) (*workbook, error) {
	bad := func(err error) error {
		return apperr.Wrap(err, apperr.Invalid, "the file is not a readable spreadsheet")
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, bad(err)
	}
	wb := &workbook{zip: zr}
	var wbook struct {
		Sheets []struct {
			Name string `xml:"name,attr"`
			RID  string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
		} `xml:"sheets>sheet"`
	}
	if err := wb.readPart("xl/workbook.xml", &wbook); err != nil {
		return nil, bad(err)
	}
	var rels struct {
		Rels []struct {
			ID     string `xml:"Id,attr"`
			Type   string `xml:"Type,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	if err := wb.readPart("xl/_rels/workbook.xml.rels", &rels); err != nil {
		return nil, bad(err)
	}
	if len(wbook.Sheets) > MaxSheets {
		return nil, apperr.New(apperr.OverBudget, "the spreadsheet has %d sheets; at most %d", len(wbook.Sheets), MaxSheets)
	}
	targets := map[string]string{}
	for _, r := range rels.Rels {
		target := r.Target
		if strings.HasPrefix(target, "/") {
			target = strings.TrimPrefix(target, "/")
		} else {
			target = path.Join("xl", target)
		}
		targets[r.ID] = target
		if strings.HasSuffix(r.Type, "/sharedStrings") {
			wb.sharedStrings = target
		}
	}
	for _, s := range wbook.Sheets {
		p, ok := targets[s.RID]
		if !ok {
			return nil, bad(fmt.Errorf("sheet %q names no part", s.Name))
		}
		wb.sheets = append(wb.sheets, sheetPart{name: s.Name, path: p})
	}
	if len(wb.sheets) == 0 {
		return nil, bad(errors.New("no sheets"))
	}
	return wb, nil
}

// readPart decodes a small part of the workbook, at most maxPartBytes.
func (wb *workbook) readPart(name string, v any) error {
	f, err := wb.zip.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPartBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxPartBytes {
		return apperr.New(apperr.OverBudget, "the spreadsheet's %s is larger than %s", name, mib(maxPartBytes))
	}
	return xml.Unmarshal(data, v)
}

// SheetNames returns a spreadsheet's sheet names, in order: sheet n's
// text is SheetText(…, n, …). A file that is not a spreadsheet is an
// invalid error.
func SheetNames(data []byte) ([]string, error) {
	wb, err := openWorkbook(data)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(wb.sheets))
	for i, s := range wb.sheets {
		names[i] = s.name
	}
	return names, nil
}

// SheetText renders sheet n (1-based) of a spreadsheet as CSV, at most
// limit bytes of it (Truncated when the sheet holds more), streaming its
// XML under the budgets of PageText's sheets: MaxDocumentDecodedBytes of
// decoded XML, MaxSheetCells, MaxWork and ctx. limit is at least 1 and at
// most MaxSheetTextBytes.
func SheetText(ctx context.Context, data []byte, n, limit int) (Text, error) {
	return sheetText(ctx, data, n, max(1, min(limit, MaxSheetTextBytes)))
}

// MaxSheetTextBytes is the most text SheetText renders of one sheet: what
// a reader of a whole sheet (structured_data_extraction) may ask for.
const MaxSheetTextBytes = 4 << 20

// sheetText renders sheet n (1-based) of a spreadsheet as CSV, streaming
// its XML: reading stops at limit bytes of text, a cell's text is never
// held past that either, and the decoded XML (shared strings and sheet
// together) is metered against MaxDocumentDecodedBytes, the cells against
// MaxSheetCells.
func sheetText(ctx context.Context, data []byte, n, limit int) (Text, error) {
	wb, err := openWorkbook(data)
	if err != nil {
		return Text{}, refusesWholeFile(err)
	}
	if n < 1 || n > len(wb.sheets) {
		return Text{}, pageOutOfRange(n, len(wb.sheets))
	}
	sheet := wb.sheets[n-1]
	b := newBudget(ctx, fmt.Sprintf("sheet %q", sheet.name), MaxDocumentDecodedBytes)
	defer b.release()
	var shared []string
	if wb.sharedStrings != "" {
		if shared, err = wb.readSharedStrings(b, limit); err != nil {
			// Every sheet reads the same table first.
			return Text{}, refusesWholeFile(err)
		}
	}
	f, err := wb.zip.Open(sheet.path)
	if err != nil {
		return Text{}, apperr.Wrap(err, apperr.Invalid, "sheet %q cannot be read", sheet.name)
	}
	defer f.Close()
	r := sheetReader{dec: xml.NewDecoder(newTextRunCap(b.reader(f), limit)), shared: shared, b: b, limit: limit}
	text, err := r.render()
	text.Sheet = sheet.name
	if berr := b.check(); berr != nil {
		return Text{}, berr
	}
	if err != nil {
		if apperr.Is(err, apperr.OverBudget) {
			return Text{}, err
		}
		return Text{}, apperr.Wrap(err, apperr.Invalid, "sheet %q cannot be read", sheet.name)
	}
	return text, nil
}

// readSharedStrings streams the shared-string table, each string cut at
// limit and all of them at maxSharedStringBytes.
func (wb *workbook) readSharedStrings(b *budget, limit int) ([]string, error) {
	f, err := wb.zip.Open(wb.sharedStrings)
	if err != nil {
		return nil, apperr.Wrap(err, apperr.Invalid, "the spreadsheet's shared strings cannot be read")
	}
	defer f.Close()
	dec := xml.NewDecoder(newTextRunCap(b.reader(f), limit))
	var out []string
	var cur strings.Builder
	held, inT, phonetic := 0, false, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			if berr := b.check(); berr != nil {
				return nil, berr
			}
			return nil, apperr.Wrap(err, apperr.Invalid, "the spreadsheet's shared strings cannot be read")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				cur.Reset()
			case "t":
				inT = true
			case "rPh":
				phonetic++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				s := cur.String()
				held += len(s)
				if held > maxSharedStringBytes {
					return nil, apperr.New(apperr.OverBudget, "the spreadsheet's shared strings hold more than %s of text", mib(maxSharedStringBytes))
				}
				if len(out) >= MaxSheetCells {
					return nil, apperr.New(apperr.OverBudget, "the spreadsheet has more than %d shared strings", MaxSheetCells)
				}
				out = append(out, s)
			case "t":
				inT = false
			case "rPh":
				phonetic--
			}
		case xml.CharData:
			if inT && phonetic == 0 && cur.Len() <= limit {
				cur.Write(t)
			}
		}
	}
}

// sheetReader renders a sheet's XML as CSV, row by row.
type sheetReader struct {
	dec    *xml.Decoder
	shared []string
	b      *budget
	out    bytes.Buffer
	csv    *csv.Writer
	cells  int
	limit  int // the most text rendered
}

// render reads rows until the sheet ends or its CSV passes r.limit.
func (r *sheetReader) render() (Text, error) {
	r.csv = csv.NewWriter(&r.out)
	var row []string
	rowNum, col, rowBytes := 0, 0, 0
	var cell struct {
		typ   string
		value strings.Builder
		inV   bool
		inT   bool
		phon  int
	}
	for {
		tok, err := r.dec.Token()
		if err == io.EOF {
			r.csv.Flush()
			return capTextTo(r.out.String(), r.limit), nil
		}
		if err != nil {
			return Text{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				next := rowNum + 1
				if v, ok := attr(t, "r"); ok {
					if n, err := strconv.Atoi(v); err == nil && n > rowNum {
						next = n
					}
				}
				for ; rowNum+1 < next; rowNum++ { // rows the sheet skips are empty
					if r.write(nil) {
						return capTextTo(r.out.String(), r.limit), nil
					}
				}
				rowNum, row, col, rowBytes = next, row[:0], 0, 0
			case "c":
				if r.cells++; r.cells > MaxSheetCells {
					return Text{}, apperr.New(apperr.OverBudget, "the sheet has more than %d cells; at most that many are read", MaxSheetCells)
				}
				if ref, ok := attr(t, "r"); ok {
					if c := columnIndex(ref); c > col {
						col = c
					}
				}
				for len(row) < col { // cells the row skips are empty
					row = append(row, "")
				}
				cell.typ, _ = attr(t, "t")
				cell.value.Reset()
			case "v":
				cell.inV = true
			case "t":
				cell.inT = true
			case "rPh":
				cell.phon++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "row":
				for len(row) > 0 && row[len(row)-1] == "" {
					row = row[:len(row)-1]
				}
				if r.write(row) {
					return capTextTo(r.out.String(), r.limit), nil
				}
			case "c":
				row = append(row, r.value(cell.typ, cell.value.String()))
				col = len(row)
				if rowBytes += len(row[col-1]); r.out.Len()+rowBytes > r.limit {
					r.write(row) // the text is full: the rest of the sheet is not read
					return capTextTo(r.out.String(), r.limit), nil
				}
			case "v":
				cell.inV = false
			case "t":
				cell.inT = false
			case "rPh":
				cell.phon--
			}
		case xml.CharData:
			if !(cell.inV || cell.inT && cell.phon == 0) {
				break
			}
			if cell.value.Len() <= r.limit {
				cell.value.Write(t)
			}
			if cell.typ != "s" && r.out.Len()+rowBytes+cell.value.Len() > r.limit {
				// The text is full inside this cell: the rest of the cell
				// and of the sheet is not read (a bomb's one huge cell
				// costs the limit, not its size).
				r.write(append(row, r.value(cell.typ, cell.value.String())))
				return capTextTo(r.out.String(), r.limit), nil
			}
		}
	}
}

// write appends a row and reports whether the text is past the cap.
func (r *sheetReader) write(row []string) bool {
	_ = r.csv.Write(row) // a bytes.Buffer does not fail
	r.csv.Flush()
	return r.out.Len() > r.limit
}

// value is what a cell of type typ holding raw shows.
func (r *sheetReader) value(typ, raw string) string {
	switch typ {
	case "s":
		i, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || i < 0 || i >= len(r.shared) {
			return ""
		}
		return r.shared[i]
	case "b":
		if strings.TrimSpace(raw) == "1" {
			return "TRUE"
		}
		return "FALSE"
	}
	return raw
}

func attr(e xml.StartElement, local string) (string, bool) {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value, true
		}
	}
	return "", false
}

// columnIndex is the 0-based column of a cell reference ("C7" is 2); -1
// when ref names none.
func columnIndex(ref string) int {
	n := 0
	for i := 0; i < len(ref) && i < 4; i++ {
		c := ref[i]
		if c < 'A' || c > 'Z' {
			break
		}
		n = n*26 + int(c-'A'+1)
	}
	return n - 1
}

// textRunCap passes XML through, keeping at most limit bytes (and
// the end of an entity reference it cut into) of each run of text between
// tags and dropping the rest, so that a decoder never holds a cell of
// hundreds of MB; a tag longer than maxXMLTagBytes is an error.
type textRunCap struct {
	r        io.Reader
	buf      []byte
	limit    int
	inTag    bool
	quote    byte
	run, tag int
	inEntity bool
	err      error
}

func newTextRunCap(r io.Reader, limit int) io.Reader {
	return &textRunCap{r: r, buf: make([]byte, 32<<10), limit: limit}
}

func (t *textRunCap) Read(p []byte) (int, error) {
	for {
		if t.err != nil {
			return 0, t.err
		}
		n, err := t.r.Read(t.buf[:min(len(t.buf), len(p))])
		out := 0
		for _, c := range t.buf[:n] {
			if t.keep(c) {
				p[out] = c
				out++
			}
		}
		if t.tag > maxXMLTagBytes {
			t.err = apperr.New(apperr.OverBudget, "the spreadsheet holds an XML tag longer than %d KiB", maxXMLTagBytes>>10)
			return 0, t.err
		}
		if err != nil {
			t.err = err
		}
		if out > 0 || err != nil {
			return out, err
		}
	}
}

// keep tracks the XML byte c and says whether it passes.
func (t *textRunCap) keep(c byte) bool {
	if t.inTag {
		t.tag++
		switch {
		case t.quote != 0:
			if c == t.quote {
				t.quote = 0
			}
		case c == '"' || c == '\'':
			t.quote = c
		case c == '>':
			t.inTag, t.run = false, 0
		}
		return true
	}
	if c == '<' {
		t.inTag, t.tag, t.inEntity = true, 0, false
		return true
	}
	t.run++
	switch {
	case t.run <= t.limit+1: // one past the cap: a cut run shows it was cut
		t.inEntity = c == '&' || t.inEntity && c != ';'
		return true
	case t.inEntity && t.run <= t.limit+17:
		t.inEntity = c != ';'
		return true
	}
	return false
}

// Table splits a sheet's or a CSV file's page text (PageText: at most
// MaxPageTextBytes, so the rows are bounded by the page's budget) into
// rows of cells, for the viewer's table. A truncated text's last row may
// be cut, so it is dropped; a text that is not CSV is an invalid error.
func Table(text Text) ([][]string, error) {
	r := csv.NewReader(strings.NewReader(text.Text))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = false
	var rows [][]string
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			if text.Truncated {
				break // the cut ends inside a quoted cell
			}
			return nil, apperr.Wrap(err, apperr.Invalid, "the page is not a table")
		}
		rows = append(rows, row)
	}
	if text.Truncated && len(rows) > 0 {
		rows = rows[:len(rows)-1]
	}
	return rows, nil
}
