package csvlookup

import (
	"errors"
	"strings"
	"testing"
)

// FuzzMeasureBoundsTheParse checks that measure's shape holds every file
// the parse accepts: the arena and offsets sized by it never overflow.
func FuzzMeasureBoundsTheParse(f *testing.F) {
	for _, seed := range []string{
		"id,name\n1,a\n",
		"\xef\xbb\xbfid,name\r\n1,\"a, b\"\r\n2,\"x\ny\"\n",
		"a,b\n\"q\"\"uote\",\"\"\"\"\n,,,,\n\n\n",
		"a\n\"multi\r\nline\",x,y,z\n",
		"h\n\"unterminated\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		sh, err := measure(strings.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := parseTable(strings.NewReader(data), sh)
		if errors.Is(err, errShapeChanged) {
			t.Fatalf("the shape %+v does not hold %q", sh, data)
		}
		if err == nil && int64(len(tbl.data))+4*int64(len(tbl.ends))+4*int64(len(tbl.rowAt)) > sh.bytes() {
			t.Fatalf("the table outgrew its shape %+v", sh)
		}
	})
}
