package documenttest

import (
	"bytes"
	"compress/zlib"
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
	img := ScanImage(lines...)
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	for y := range h {
		_, _ = zw.Write(img.Pix[y*img.Stride : y*img.Stride+w])
	}
	_ = zw.Close()
	// The page is the image at 300 dpi.
	pw, ph := float64(w)*72/300, float64(h)*72/300
	contents := fmt.Sprintf("q %.2f 0 0 %.2f 0 0 cm /Im1 Do Q", pw, ph)
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.2f %.2f] /Resources << /XObject << /Im1 4 0 R >> >> /Contents 5 0 R >>", pw, ph))
	obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", w, h, z.Len(), z.Bytes()))
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(contents), contents))
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}
