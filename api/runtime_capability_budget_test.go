package api_test

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/limit"
)

// TestCapabilityDocumentBombs: the attack's PDF (one 64 MiB FlateDecode
// stream named 200 times) is refused at upload with over_budget (422),
// and the XLSX of 232 MB of inlineStr cells previews its first 128 KiB
// allocating a few MiB instead of taking the api to 511 MB. It counts
// bytes, not seconds (a 5 s bound flaked on a loaded CI machine), and it
// is not parallel, so the process's allocations are this test's.
func TestCapabilityDocumentBombs(t *testing.T) {
	f := newRuntimeFixture(t)

	before := totalAlloc()
	_, err := f.api.P.Files.Upload(context.Background(), f.taskID, "bomb.pdf", "", bytes.NewReader(documenttest.PDFBomb(64<<20, 200)))
	require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
	require.Equal(t, 422, apperr.Status(apperr.OverBudget))
	require.Less(t, totalAlloc()-before, uint64(256<<20), "the PDF's metered pass stops at the document budget (64 MiB decoded), not at 12.5 GiB")

	sheet := f.upload(t, f.taskID, "bomb.xlsx", documenttest.XLSXBomb(58<<20, 4))
	before = totalAlloc()
	r := f.capability(t, "file_preview", map[string]any{"file_id": sheet, "page": 1})
	// Either bound may be met first: the text cap (200, truncated) or, on a
	// machine loaded enough, the 10 s work budget (422 over_budget). Both
	// are the bounded answer; what must hold is the memory.
	if r.Status == 422 {
		require.Contains(t, string(r.Raw), "the most one document operation may take")
	} else {
		require.Equal(t, 200, r.Status, string(r.Raw))
		require.Equal(t, true, r.Body["result"].(map[string]any)["truncated"])
	}
	require.Less(t, totalAlloc()-before, uint64(128<<20), "the sheet streams to the text cap (it took 511 MB)")
}

// totalAlloc is the bytes this process has allocated so far.
func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestCapabilityIsRateLimited: /capability is limited per surface like
// /run and /action (5/s, burst 20): a surface that keeps calling gets
// 429 with Retry-After; before, it was never refused.
func TestCapabilityIsRateLimited(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	var last response
	passed := 0
	for range 100 {
		last = f.capability(t, "list_files", nil)
		if last.Status == 429 {
			break
		}
		require.Equal(t, 200, last.Status, string(last.Raw))
		passed++
	}
	require.Equal(t, 429, last.Status, "a surface calling faster than 5/s is refused")
	require.GreaterOrEqual(t, passed, limit.SurfaceBurst)
	secs, err := strconv.Atoi(last.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, secs, 1)
}
