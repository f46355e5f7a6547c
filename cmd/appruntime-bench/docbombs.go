package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// The document phase: the attack's bombs, n of each kind, previewed all at
// once through the api's /capability file_preview, each a file of its
// own (a page's text is computed once per file and page, so one file
// previewed n times would measure the cache). The PDF (67 KB, one 64 MiB
// FlateDecode stream named 200 times) is refused at upload now, so its
// files are stored here directly, as one uploaded before the budgets
// would be; the XLSX (about 1.3 MB of 232 MB inlineStr cells) is
// accepted at upload and previews its first 128 KiB. It prints the api's
// peak RSS growth over its RSS before the phase and its CPU per bomb.

// seedBombs stores n PDF bombs and n XLSX bombs as files of taskID.
func seedBombs(ctx context.Context, dbURL, taskID string, n int) (pdfs, sheets []string, err error) {
	st, err := store.Open(ctx, dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	blobs := storage.NewDatabase(st.DB)
	pdf, xlsx := documenttest.PDFBomb(64<<20, 200), documenttest.XLSXBomb(58<<20, 4)
	for i := range 2 * n {
		data, name, typ := pdf, fmt.Sprintf("bomb-%d.pdf", i), document.TypePDF
		if i >= n {
			data, name, typ = xlsx, fmt.Sprintf("bomb-%d.xlsx", i), document.TypeXLSX
		}
		f := models.File{ID: models.NewID(), TaskID: taskID, Name: name, ContentType: typ, Pages: 1, Size: int64(len(data)), CreatedAt: time.Now().UTC()}
		f.StorageKey = "files/" + taskID + "/" + f.ID
		if err := blobs.Put(ctx, f.StorageKey, typ, data); err != nil {
			return nil, nil, err
		}
		if err := st.DB.WithContext(ctx).Create(&f).Error; err != nil {
			return nil, nil, err
		}
		if i < n {
			pdfs = append(pdfs, f.ID)
		} else {
			sheets = append(sheets, f.ID)
		}
	}
	return pdfs, sheets, nil
}

// docPhase previews every file at once and prints the figures.
func docPhase(apiAddr string, pid int, token string, pdfs, sheets []string) error {
	rss0, err := rss(pid, "VmRSS:")
	if err != nil {
		return err
	}
	cpu0, err := cpuTime(pid)
	if err != nil {
		return err
	}
	ids := append(append([]string{}, pdfs...), sheets...)
	statuses := make([]int, len(ids))
	errs := make([]error, len(ids))
	start := time.Now()
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			body := fmt.Appendf(nil, `{"op":"file_preview","payload":{"file_id":%q,"page":1}}`, id)
			req, err := http.NewRequest("POST", "http://"+apiAddr+"/api/app-runtime/capability", bytes.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			statuses[i] = res.StatusCode
		})
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("document phase: %w", err)
		}
	}
	cpu1, err := cpuTime(pid)
	if err != nil {
		return err
	}
	hwm, err := peakRSS(pid)
	if err != nil {
		return err
	}
	growth := max(hwm-rss0, 0)
	fmt.Printf("document phase: %d PDF bombs (statuses %v) and %d XLSX bombs (statuses %v) previewed at once in %s\n",
		len(pdfs), statuses[:len(pdfs)], len(sheets), statuses[len(pdfs):], took.Round(time.Millisecond))
	fmt.Printf("doc_bomb_rss_growth_mib=%.1f doc_bomb_cpu_s_per_bomb=%.3f\n\n",
		float64(growth)/(1<<20), (cpu1-cpu0).Seconds()/float64(len(ids)))
	return nil
}
