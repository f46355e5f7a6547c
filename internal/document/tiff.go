package document

import (
	"encoding/binary"

	"github.com/appruntime/appruntime/internal/apperr"
)

// A TIFF holds its pages as a chain of image file directories (IFDs): the
// header names the first, each IFD the next. golang.org/x/image/tiff
// decodes only the first, so a page of a multi-page TIFF (what scanners
// write for a letter of several sheets) is decoded from a copy of the
// file whose header names that page's IFD instead: an IFD's strips and
// tiles are at absolute offsets, so the copy is a valid one-page view.
// The chain is walked without decoding anything, at most MaxPages IFDs,
// and a chain that loops or leaves the file is an invalid error.

// tiffIFDs returns the offsets of the IFDs of a classic TIFF (BigTIFF is
// not read, as x/image/tiff does not read it).
func tiffIFDs(data []byte) ([]uint32, error) {
	if len(data) < 8 {
		return nil, tiffInvalid()
	}
	var order binary.ByteOrder
	switch string(data[:4]) {
	case "II*\x00":
		order = binary.LittleEndian
	case "MM\x00*":
		order = binary.BigEndian
	default:
		return nil, tiffInvalid()
	}
	var ifds []uint32
	seen := map[uint32]bool{}
	for off := order.Uint32(data[4:8]); off != 0; {
		if seen[off] || uint64(off)+2 > uint64(len(data)) {
			return nil, tiffInvalid()
		}
		if len(ifds) == MaxPages {
			return nil, tooManyPages(len(ifds) + 1)
		}
		seen[off] = true
		ifds = append(ifds, off)
		entries := uint64(order.Uint16(data[off:]))
		next := uint64(off) + 2 + 12*entries
		if next+4 > uint64(len(data)) {
			return nil, tiffInvalid()
		}
		off = order.Uint32(data[next:])
	}
	if len(ifds) == 0 {
		return nil, tiffInvalid()
	}
	return ifds, nil
}

func tiffInvalid() error {
	return apperr.Invalidf("the file is not a readable TIFF: its image directories are missing, loop or lie outside the file")
}

// tiffPage returns a copy of a TIFF whose first page is page (1-based) of
// data; page 1 is data itself.
func tiffPage(data []byte, page int) ([]byte, error) {
	ifds, err := tiffIFDs(data)
	if err != nil {
		return nil, err
	}
	if page < 1 || page > len(ifds) {
		return nil, pageOutOfRange(page, len(ifds))
	}
	if page == 1 {
		return data, nil
	}
	view := make([]byte, len(data))
	copy(view, data)
	setFirstIFD(view, ifds[page-1])
	return view, nil
}

// tiffPages counts a TIFF's pages, each checked as checkImage checks an
// image (a readable header within MaxImagePixels), on one copy of the
// file whose header is pointed at each page in turn.
func tiffPages(data []byte) (int, error) {
	ifds, err := tiffIFDs(data)
	if err != nil {
		return 0, err
	}
	view := make([]byte, len(data))
	copy(view, data)
	for i, off := range ifds {
		setFirstIFD(view, off)
		if err := checkImage(view); err != nil {
			_, _, why := apperr.Public(err)
			return 0, apperr.Invalidf("page %d of the TIFF: %s", i+1, why)
		}
	}
	return len(ifds), nil
}

// setFirstIFD points a TIFF's header at the IFD at off.
func setFirstIFD(tiff []byte, off uint32) {
	if tiff[0] == 'I' {
		binary.LittleEndian.PutUint32(tiff[4:8], off)
	} else {
		binary.BigEndian.PutUint32(tiff[4:8], off)
	}
}

// imagePage returns the image of page (1-based) of an image document: a
// TIFF's page, or the image itself (page 1).
func imagePage(data []byte, contentType string, page int) ([]byte, error) {
	if contentType == TypeTIFF {
		return tiffPage(data, page)
	}
	if page != 1 {
		return nil, pageOutOfRange(page, 1)
	}
	return data, nil
}
