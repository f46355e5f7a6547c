package document

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Bounds of reading a page's text.
const (
	// MaxPageTextBytes caps the text of one page: a dense page of prose is
	// 5-10 KB, so only a page that is not prose (a dump of numbers, a
	// sheet of thousands of rows) reaches it, and it is cut there.
	MaxPageTextBytes = 128 << 10
	// MaxPageOperators bounds the content-stream operators interpreted for
	// one PDF page (a page of prose has a few thousand), so that a
	// crafted page cannot keep a worker busy.
	MaxPageOperators = 2_000_000
)

// Layout thresholds, in multiples of the font size: a vertical move of
// more than lineMove starts a new line, one of more than paragraphMove
// (past the usual 1.2 leading) a new paragraph; a horizontal gap of more
// than wordGap between two runs of text is a space, as is a TJ adjustment
// of more than tjWordGap thousandths of an em.
const (
	lineMove      = 0.5
	paragraphMove = 1.6
	wordGap       = 0.15
	tjWordGap     = 200
)

// Text is the text of one page.
type Text struct {
	// Text is the page's text: words separated by spaces, lines by "\n",
	// paragraphs by a blank line.
	Text string
	// Truncated says the page held more than MaxPageTextBytes of text and
	// Text is its beginning.
	Truncated bool
	// OCR says the text was read from the page's image by OCR: the page
	// (a scan, an image) has no text layer.
	OCR bool
	// Words are the words OCR read with their boxes (only when OCR).
	Words []Word
	// Sheet is the sheet's name when the page is a spreadsheet's sheet.
	Sheet string
}

// PageText reads the text of page (1-based) of a document of contentType:
// a PDF page's text, the whole text of a text file (page 1), a sheet as CSV
// for a spreadsheet. A PDF page without a text layer (a scan) and an image
// (page 1, or a TIFF's page) are OCR'd (ocr.go), the result saying so; on a worker without
// tesseract they have no text. A page out of range is an invalid error;
// ctx stops the reading of a PDF page (a timeout error).
func PageText(ctx context.Context, data []byte, contentType string, page int) (Text, error) {
	text, err := layerText(ctx, data, contentType, page)
	if err != nil || strings.TrimSpace(text.Text) != "" || (contentType != TypePDF && !IsImage(contentType)) {
		return text, err
	}
	ocr, ok, err := ocrPage(ctx, data, contentType, page)
	if err != nil || !ok {
		return text, err
	}
	return ocr, nil
}

// layerText reads the text a document holds as text: a PDF page's text
// layer, a text file, a sheet; an image has none.
func layerText(ctx context.Context, data []byte, contentType string, page int) (Text, error) {
	if err := ctx.Err(); err != nil {
		return Text{}, apperr.Wrap(err, apperr.Timeout, "reading the page's text was stopped")
	}
	switch {
	case contentType == TypePDF:
		return pdfPageText(ctx, data, page)
	case contentType == TypeXLSX:
		return sheetText(ctx, data, page, MaxPageTextBytes)
	case IsImage(contentType):
		_, err := imagePage(data, contentType, page)
		return Text{}, err // an image holds no text: PageText OCRs it
	case IsText(contentType):
		if page != 1 {
			return Text{}, pageOutOfRange(page, 1)
		}
		// Only the part that can show is copied: a text file may be
		// MaxFileBytes.
		text := bytes.TrimPrefix(data, []byte("\uFEFF"))
		return capText(string(text[:min(len(text), MaxPageTextBytes+1)])), nil
	}
	return Text{}, apperr.New(apperr.UnsupportedMedia, "documents of type %s have no text", contentType)
}

// capText cuts s to MaxPageTextBytes on a rune boundary.
func capText(s string) Text { return capTextTo(s, MaxPageTextBytes) }

// capTextTo cuts s to limit bytes on a rune boundary.
func capTextTo(s string, limit int) Text {
	if len(s) <= limit {
		return Text{Text: s}
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return Text{Text: s[:cut], Truncated: true}
}

// errStopped unwinds the interpretation of a page whose context ended or
// whose operators exceeded MaxPageOperators.
type errStopped struct{ err error }

func pdfPageText(ctx context.Context, data []byte, page int) (text Text, err error) {
	b := newBudget(ctx, fmt.Sprintf("the text of page %d", page), MaxPageDecodedBytes)
	defer b.release()
	defer func() {
		p := recover()
		if berr := b.check(); berr != nil && (p != nil || err != nil) {
			// The library turns a failed read into its own error or
			// panic; the budget's error says why.
			text, err = Text{}, berr
			return
		}
		if p == nil {
			return
		}
		if stop, ok := p.(errStopped); ok {
			err = stop.err
			return
		}
		err = apperr.Wrap(fmt.Errorf("panic: %v", p), apperr.Invalid, "the text of page %d cannot be read", page)
	}()
	r, err := pdf.NewReaderWrapped(bytes.NewReader(data), int64(len(data)), b.reader)
	if err != nil {
		return Text{}, refusesWholeFile(apperr.Wrap(err, apperr.Invalid, "the file is not a readable PDF"))
	}
	n := r.NumPage()
	if n > MaxPages {
		return Text{}, refusesWholeFile(tooManyPages(n))
	}
	if page < 1 || page > n {
		return Text{}, pageOutOfRange(page, n)
	}
	p := r.Page(page)
	if p.V.IsNull() || p.V.Key("Contents").Kind() == pdf.Null {
		return Text{}, nil
	}
	in := interpreter{page: p, fonts: map[string]*fontState{}, g: graphics{ctm: identity, th: 1}}
	ops := 0
	pdf.Interpret(p.V.Key("Contents"), func(stk *pdf.Stack, op string) {
		ops++
		if ops%1024 == 0 && b.check() != nil {
			panic(errStopped{b.check()})
		}
		if ops > MaxPageOperators {
			panic(errStopped{apperr.New(apperr.OverBudget, "page %d has more than %d drawing operators; its text is not read", page, MaxPageOperators)})
		}
		in.do(stk, op)
	})
	if err := b.check(); err != nil {
		return Text{}, err
	}
	return in.out.text(), nil
}

// matrix is a PDF transformation [a b c d e f].
type matrix [6]float64

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul is m × n: m applied first.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func translate(x, y float64) matrix { return matrix{1, 0, 0, 1, x, y} }

// graphics is the part of the graphics state that places text.
type graphics struct {
	ctm      matrix
	tm, tlm  matrix
	font     *fontState
	size     float64 // Tfs
	th       float64 // horizontal scaling (Tz / 100)
	tc, tw   float64 // character and word spacing
	leading  float64 // TL
	saved    []graphics
	inText   bool
	fontName string
}

// fontState decodes a font's codes to text and measures them.
type fontState struct {
	enc pdf.TextEncoding
	// codeBytes is the length of one character code: 1 for simple fonts,
	// 2 for Identity-H/V composite fonts.
	codeBytes int
	// widths maps codes to glyph widths in thousandths of an em; a code
	// it lacks is dw wide. When the font gives no widths (a standard
	// font without /Widths, a composite font with another CMap), widths
	// is nil and every code counts as guessWidth.
	widths map[int]float64
	dw     float64
}

// guessWidth is a glyph's width, in thousandths of an em, when the font
// does not say: about the average of Latin text.
const guessWidth = 500

// maxWidthEntries bounds the widths read from one font.
const maxWidthEntries = 1 << 16

// interpreter walks a page's content stream, placing each run of text.
type interpreter struct {
	page  pdf.Page
	fonts map[string]*fontState
	g     graphics
	out   layout
}

func numbers(stk *pdf.Stack, n int) ([]float64, bool) {
	if stk.Len() != n {
		for stk.Len() > 0 {
			stk.Pop()
		}
		return nil, false
	}
	v := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		x := stk.Pop()
		if x.Kind() != pdf.Integer && x.Kind() != pdf.Real {
			return nil, false
		}
		v[i] = x.Float64()
	}
	return v, true
}

func (in *interpreter) do(stk *pdf.Stack, op string) {
	g := &in.g
	switch op {
	case "q":
		saved := *g
		saved.saved = nil
		g.saved = append(g.saved, saved)
	case "Q":
		if n := len(g.saved); n > 0 {
			rest := g.saved[:n-1]
			*g = g.saved[n-1]
			g.saved = rest
		}
	case "cm":
		if v, ok := numbers(stk, 6); ok {
			g.ctm = matrix(v).mul(g.ctm)
		}
	case "BT":
		g.tm, g.tlm, g.inText = identity, identity, true
	case "ET":
		g.inText = false
	case "Tf":
		if stk.Len() != 2 {
			break
		}
		size, name := stk.Pop(), stk.Pop()
		g.size, g.font, g.fontName = size.Float64(), in.font(name.Name()), name.Name()
	case "Tz":
		if v, ok := numbers(stk, 1); ok {
			g.th = v[0] / 100
		}
	case "Tc":
		if v, ok := numbers(stk, 1); ok {
			g.tc = v[0]
		}
	case "Tw":
		if v, ok := numbers(stk, 1); ok {
			g.tw = v[0]
		}
	case "TL":
		if v, ok := numbers(stk, 1); ok {
			g.leading = v[0]
		}
	case "TD", "Td":
		if v, ok := numbers(stk, 2); ok {
			if op == "TD" {
				g.leading = -v[1]
			}
			g.tlm = translate(v[0], v[1]).mul(g.tlm)
			g.tm = g.tlm
		}
	case "Tm":
		if v, ok := numbers(stk, 6); ok {
			g.tm, g.tlm = matrix(v), matrix(v)
		}
	case "T*":
		in.nextLine()
	case "Tj":
		if stk.Len() == 1 {
			in.show(stk.Pop().RawString())
		}
	case "'":
		if stk.Len() == 1 {
			in.nextLine()
			in.show(stk.Pop().RawString())
		}
	case "\"":
		if stk.Len() == 3 {
			s := stk.Pop()
			g.tc, g.tw = stk.Pop().Float64(), stk.Pop().Float64()
			in.nextLine()
			in.show(s.RawString())
		}
	case "TJ":
		if stk.Len() != 1 {
			break
		}
		arr := stk.Pop()
		for i := 0; i < arr.Len(); i++ {
			x := arr.Index(i)
			if x.Kind() == pdf.String {
				in.show(x.RawString())
				continue
			}
			adjust := x.Float64()
			if adjust < -tjWordGap {
				in.out.pendingSpace = true
			}
			g.tm = translate(-adjust/1000*g.size*g.th, 0).mul(g.tm)
		}
	}
	for stk.Len() > 0 { // operators this walk does not use
		stk.Pop()
	}
}

func (in *interpreter) nextLine() {
	in.g.tlm = translate(0, -in.g.leading).mul(in.g.tlm)
	in.g.tm = in.g.tlm
}

// font returns the decoding state of the page's font resource name.
func (in *interpreter) font(name string) *fontState {
	if f, ok := in.fonts[name]; ok {
		return f
	}
	font := in.page.Font(name)
	f := &fontState{enc: font.Encoder(), codeBytes: 1, dw: guessWidth}
	if font.V.Key("Subtype").Name() == "Type0" {
		f.codeBytes = 2
		if enc := font.V.Key("Encoding").Name(); enc == "Identity-H" || enc == "Identity-V" {
			f.widths, f.dw = cidWidths(font.V.Key("DescendantFonts").Index(0))
		}
	} else if first, widths := font.FirstChar(), font.V.Key("Widths"); widths.Kind() == pdf.Array {
		f.widths, f.dw = map[int]float64{}, 0
		for i := 0; i < min(widths.Len(), maxWidthEntries); i++ {
			f.widths[first+i] = widths.Index(i).Float64()
		}
	}
	in.fonts[name] = f
	return f
}

// cidWidths reads a CID font's /W array ([c [w1 w2 …]] and [cfirst clast
// w] entries) and its /DW default.
func cidWidths(cid pdf.Value) (map[int]float64, float64) {
	dw := 1000.0
	if v := cid.Key("DW"); v.Kind() == pdf.Integer || v.Kind() == pdf.Real {
		dw = v.Float64()
	}
	widths := map[int]float64{}
	w := cid.Key("W")
	for i := 0; i+1 < w.Len() && len(widths) < maxWidthEntries; {
		first := int(w.Index(i).Int64())
		if next := w.Index(i + 1); next.Kind() == pdf.Array {
			for j := 0; j < next.Len() && len(widths) < maxWidthEntries; j++ {
				widths[first+j] = next.Index(j).Float64()
			}
			i += 2
			continue
		}
		if i+2 >= w.Len() {
			break
		}
		last, width := int(w.Index(i+1).Int64()), w.Index(i+2).Float64()
		for c := first; c <= last && len(widths) < maxWidthEntries; c++ {
			widths[c] = width
		}
		i += 3
	}
	return widths, dw
}

// width is the width of code in thousandths of an em.
func (f *fontState) width(code int) float64 {
	if f.widths == nil {
		return guessWidth
	}
	if w, ok := f.widths[code]; ok {
		return w
	}
	return f.dw
}

// show places one string of the current font at the text position and
// advances the position by its glyphs' widths where the font gives them.
func (in *interpreter) show(raw string) {
	g := &in.g
	if g.font == nil || raw == "" {
		return
	}
	m := g.tm.mul(g.ctm)
	size := math.Abs(g.size) * math.Hypot(m[2], m[3])
	x, y := m[4], m[5]
	text := g.font.enc.Decode(raw)
	for i := 0; i+g.font.codeBytes <= len(raw); i += g.font.codeBytes {
		code := int(raw[i])
		if g.font.codeBytes == 2 {
			code = code<<8 | int(raw[i+1])
		}
		advance := g.font.width(code)/1000*g.size + g.tc
		if g.font.codeBytes == 1 && raw[i] == ' ' {
			advance += g.tw // word spacing applies to single-byte code 32 only
		}
		g.tm = translate(advance*g.th, 0).mul(g.tm)
	}
	end := g.tm.mul(g.ctm)[4]
	in.out.place(text, x, y, size, end)
}

// layout assembles placed runs of text into lines and paragraphs.
type layout struct {
	b            strings.Builder
	truncated    bool
	placed       bool
	lastY        float64
	lastSize     float64
	lastEnd      float64
	pendingSpace bool
}

func (l *layout) place(s string, x, y, size, end float64) {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	if s == "" {
		return
	}
	if l.placed {
		ref := max(size, l.lastSize, 1)
		dy := l.lastY - y // positive: further down the page
		switch {
		case math.Abs(dy) > lineMove*ref && dy > paragraphMove*ref:
			l.write("\n\n")
		case math.Abs(dy) > lineMove*ref:
			l.write("\n")
		case l.pendingSpace || x > l.lastEnd+wordGap*ref:
			l.write(" ")
		}
	}
	l.write(s)
	l.placed, l.lastY, l.lastSize, l.lastEnd, l.pendingSpace = true, y, size, end, false
}

// write appends s, never doubling white space, up to MaxPageTextBytes.
func (l *layout) write(s string) {
	if l.truncated {
		return
	}
	cur := l.b.String()
	switch s {
	case " ":
		if cur == "" || strings.HasSuffix(cur, " ") || strings.HasSuffix(cur, "\n") {
			return
		}
	case "\n", "\n\n":
		trimmed := strings.TrimRight(cur, " ")
		if trimmed == "" {
			return
		}
		if len(trimmed) != len(cur) {
			l.b.Reset()
			l.b.WriteString(trimmed)
		}
		if strings.HasSuffix(trimmed, "\n\n") || (s == "\n" && strings.HasSuffix(trimmed, "\n")) {
			return
		}
		if strings.HasSuffix(trimmed, "\n") {
			s = "\n"
		}
	default:
		if strings.HasSuffix(cur, " ") || strings.HasSuffix(cur, "\n") || cur == "" {
			s = strings.TrimLeft(s, " ")
		}
	}
	if l.b.Len()+len(s) > MaxPageTextBytes {
		rest := capText(cur + s)
		l.b.Reset()
		l.b.WriteString(rest.Text)
		l.truncated = true
		return
	}
	l.b.WriteString(s)
}

func (l *layout) text() Text {
	return Text{Text: strings.TrimSpace(l.b.String()), Truncated: l.truncated}
}
