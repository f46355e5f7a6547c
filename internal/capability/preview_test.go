package capability_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestPreviewIsComputedOncePerFileAndPage: a page's text, and a refusal
// of it (422), are computed once and served from Redis for an hour by
// every later call (concurrent calls on a replica share one computation):
// with the file's bytes gone
// the answers stay the same. Before, every file_preview read the
// document again, so a bomb burned its budget on every call.
func TestPreviewIsComputedOncePerFileAndPage(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	rd := testkit.Redis(t)
	f := newFixture(t, st)
	blobs := f.blobs
	caps := capability.New(capability.Options{Store: st, Files: f.files, Redis: rd.Client, KeyPrefix: rd.Prefix})

	prose := f.upload(t, f.task, "letter.pdf", documenttest.PDF("dear reader"))
	cells := f.upload(t, f.task, "cells.xlsx", documenttest.XLSXBomb(0, document.MaxSheetCells+1))
	page := 1
	preview := func(id string) (capability.Preview, error) {
		return caps.FilePreview(context.Background(), f.task, capability.PreviewParams{FileID: id, Page: &page})
	}
	p, err := preview(prose.ID)
	require.NoError(t, err)
	require.Equal(t, "dear reader", p.Text)
	_, err = preview(cells.ID)
	require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)

	ttl, err := rd.Client.TTL(context.Background(), rd.Prefix+"preview:"+cells.ID+":1").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute)
	n, err := rd.Client.Exists(context.Background(), rd.Prefix+"preview:"+cells.ID+":file").Result()
	require.NoError(t, err)
	require.Zero(t, n, "a sheet's own refusal is kept for that sheet, not for the file")
	raw, err := rd.Client.Get(context.Background(), rd.Prefix+"preview:"+prose.ID+":1").Bytes()
	require.NoError(t, err)
	require.True(t, json.Valid(raw))

	for _, id := range []string{prose.StorageKey, cells.StorageKey} {
		require.NoError(t, blobs.Delete(context.Background(), id))
	}
	// (one connection of a rolled-back transaction: calls in turn)
	for range 2 {
		p, err := preview(prose.ID)
		require.NoError(t, err)
		require.Equal(t, "dear reader", p.Text)
		start := time.Now()
		_, err = preview(cells.ID)
		require.True(t, apperr.Is(err, apperr.OverBudget), "%v", err)
		require.Less(t, time.Since(start), time.Second, "a cached refusal costs no reading")
	}
}

// TestAWholeFileRefusalIsKeptForTheFile: a workbook whose shared strings
// are past their budget is refused on its first sheet, and the refusal is
// kept for the file: its other sheets answer it from Redis, with the
// file's bytes gone. Before, each of up to MaxSheets sheets parsed the
// table again (once an hour each). (A sheet's own refusal is kept for that
// sheet only: TestPreviewIsComputedOncePerFileAndPage.)
func TestAWholeFileRefusalIsKeptForTheFile(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	rd := testkit.Redis(t)
	f := newFixture(t, st)
	caps := capability.New(capability.Options{Store: st, Files: f.files, Redis: rd.Client, KeyPrefix: rd.Prefix})

	bomb := f.upload(t, f.task, "shared.xlsx", documenttest.XLSXSharedStringsBomb(3, 130, document.MaxPageTextBytes))
	preview := func(id string, page int) error {
		_, err := caps.FilePreview(context.Background(), f.task, capability.PreviewParams{FileID: id, Page: &page})
		return err
	}
	require.True(t, apperr.Is(preview(bomb.ID, 1), apperr.OverBudget))
	ttl, err := rd.Client.TTL(context.Background(), rd.Prefix+"preview:"+bomb.ID+":file").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute, "the file's refusal is kept")

	require.NoError(t, f.blobs.Delete(context.Background(), bomb.StorageKey))
	for _, page := range []int{2, 3} {
		err := preview(bomb.ID, page)
		require.True(t, apperr.Is(err, apperr.OverBudget), "sheet %d, with the file's bytes gone: %v", page, err)
		require.Contains(t, err.Error(), "shared strings")
	}
}
