package capability_test

import (
	"bytes"
	"context"
	"image/png"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestPageImageIsRenderedOnceAndKeptInTheBlobStore: a page's image at a
// size is rendered on the first call and served from the blob store after
// it, the file's bytes gone; a refusal (here of a file without page
// images) is kept in Redis for an hour, and a page out of range is refused.
func TestPageImageIsRenderedOnceAndKeptInTheBlobStore(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Skip("pdftoppm is not installed: run scripts/services.sh")
	}
	st := testkit.Tx(t)
	rd := testkit.Redis(t)
	f := newFixture(t, st)
	blobs := f.blobs
	caps := capability.New(capability.Options{Store: st, Files: f.files, Redis: rd.Client, KeyPrefix: rd.Prefix, Blobs: blobs})
	ctx := context.Background()

	letter := f.upload(t, f.task, "letter.pdf", documenttest.PDF("dear reader", "page two"))
	notes := f.upload(t, f.task, "notes.txt", []byte("plain text"))

	first, err := caps.PageImage(ctx, f.task, letter.ID, 2, document.SizeThumb)
	require.NoError(t, err)
	cfg, err := png.DecodeConfig(bytes.NewReader(first))
	require.NoError(t, err)
	require.Equal(t, document.SizeThumb, cfg.Height)
	_, err = caps.PageImage(ctx, f.task, notes.ID, 1, document.SizeThumb)
	require.True(t, apperr.Is(err, apperr.UnsupportedMedia), "%v", err)
	ttl, err := rd.Client.TTL(ctx, rd.Prefix+"pageimage:pages/"+f.task+"/"+notes.ID+"/1-200.png").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute)

	for _, key := range []string{letter.StorageKey, notes.StorageKey} {
		require.NoError(t, blobs.Delete(ctx, key))
	}
	again, err := caps.PageImage(ctx, f.task, letter.ID, 2, document.SizeThumb)
	require.NoError(t, err, "served from the blob store")
	require.Equal(t, first, again)
	_, err = caps.PageImage(ctx, f.task, letter.ID, 1, document.SizeThumb)
	require.Error(t, err, "another page is rendered anew: the file's bytes are gone")
	_, err = caps.PageImage(ctx, f.task, notes.ID, 1, document.SizeThumb)
	require.True(t, apperr.Is(err, apperr.UnsupportedMedia), "a kept refusal: %v", err)

	_, err = caps.PageImage(ctx, f.task, letter.ID, 3, document.SizeThumb)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
}
