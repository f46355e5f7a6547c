package documenttest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// ScanImage draws lines of text in black on a white grayscale page, as a
// scanner would see them: Go Regular at 40 px (11 pt type at 300 dpi),
// anti-aliased.
func ScanImage(lines ...string) *image.Gray {
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		panic(err)
	}
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 40, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		panic(err)
	}
	defer face.Close()
	width := 0
	for _, l := range lines {
		width = max(width, font.MeasureString(face, l).Ceil())
	}
	const margin, leading = 120, 64
	img := image.NewGray(image.Rect(0, 0, width+2*margin, len(lines)*leading+2*margin))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face}
	for i, l := range lines {
		d.Dot = fixed.P(margin, margin+40+i*leading)
		d.DrawString(l)
	}
	return img
}

// ScanPNG is ScanImage encoded as a PNG: an image upload of a scan.
func ScanPNG(lines ...string) []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, ScanImage(lines...))
	return b.Bytes()
}

// ScannedPDF returns a one-page PDF whose page is only an image of lines
// of text (ScanImage), with no text layer: what a scanner writes.
func ScannedPDF(lines ...string) []byte {
	page, image, w, h := scanObjects(lines, 4, 5)
	return assemble([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		page, image,
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(scanContent(w, h)), scanContent(w, h)),
	})
}

// TextThenScannedPDF returns a two-page PDF: page 1 shows text in a text
// layer (as PDF draws it), page 2 is only an image of scanLines (as
// ScannedPDF's page): a letter with a scanned enclosure.
func TextThenScannedPDF(text string, scanLines ...string) []byte {
	content := pageContent(text)
	page, image, w, h := scanObjects(scanLines, 7, 8)
	return assemble([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R 6 0 R] /Count 2 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		page, image,
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(scanContent(w, h)), scanContent(w, h)),
	})
}

// scanObjects returns the page object (its image object number imageObj,
// its content contentObj) and the image object of a scanned page of
// lines, with the page's size in points.
func scanObjects(lines []string, imageObj, contentObj int) (page, img string, pw, ph float64) {
	scan := ScanImage(lines...)
	w, h := scan.Bounds().Dx(), scan.Bounds().Dy()
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	for y := range h {
		_, _ = zw.Write(scan.Pix[y*scan.Stride : y*scan.Stride+w])
	}
	_ = zw.Close()
	// The page is the image at 300 dpi.
	pw, ph = float64(w)*72/300, float64(h)*72/300
	page = fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.2f %.2f] /Resources << /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>", pw, ph, imageObj, contentObj)
	img = fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", w, h, z.Len(), z.Bytes())
	return page, img, pw, ph
}

func scanContent(pw, ph float64) string {
	return fmt.Sprintf("q %.2f 0 0 %.2f 0 0 cm /Im1 Do Q", pw, ph)
}

// MultiPageTIFF returns an uncompressed grayscale TIFF of one page per
// image, in order: what a scanner writes for a letter of several sheets
// (golang.org/x/image/tiff writes only one page).
func MultiPageTIFF(pages ...*image.Gray) []byte {
	le := binary.LittleEndian
	out := []byte("II*\x00\x00\x00\x00\x00")
	link := 4 // where the offset of the next IFD goes
	for _, img := range pages {
		w, h := img.Bounds().Dx(), img.Bounds().Dy()
		pixels := len(out)
		for y := range h {
			out = append(out, img.Pix[y*img.Stride:y*img.Stride+w]...)
		}
		if len(out)%2 == 1 {
			out = append(out, 0) // an IFD starts on a word boundary
		}
		le.PutUint32(out[link:], uint32(len(out)))
		entries := [][3]uint32{ // tag, type (3 SHORT, 4 LONG), value
			{256, 4, uint32(w)}, {257, 4, uint32(h)}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1},
			{273, 4, uint32(pixels)}, {277, 3, 1}, {278, 4, uint32(h)}, {279, 4, uint32(w * h)},
		}
		out = le.AppendUint16(out, uint16(len(entries)))
		for _, e := range entries {
			out = le.AppendUint16(out, uint16(e[0]))
			out = le.AppendUint16(out, uint16(e[1]))
			out = le.AppendUint32(out, 1)
			if e[1] == 3 {
				out = le.AppendUint16(out, uint16(e[2]))
				out = le.AppendUint16(out, 0)
			} else {
				out = le.AppendUint32(out, e[2])
			}
		}
		link = len(out)
		out = le.AppendUint32(out, 0)
	}
	return out
}
