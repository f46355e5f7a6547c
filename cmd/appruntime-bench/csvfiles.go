package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// The CSV phase: the attack's large CSV files, each the source of a
// csv_lookup_tool of its own, uploaded to a task as an agent would, then
// looked up all at once through /run as soon as the worker is up, so that
// the worker's peak RSS is theirs. It prints the worker's peak RSS
// (VmHWM, and the most VmRSS sampled), its RSS once the lookups are over
// and the goal: CSV_CACHE_MB + 128 MiB.

// csvFileBytes is the size of each file: the attack's 49 MiB, under the
// 50 MiB a task's file may take.
const csvFileBytes = 49 << 20

// csvOp is the binding op of the CSV phase's i-th tool.
func csvOp(i int) string { return fmt.Sprintf("csv%d", i) }

// csvToolName is the display name of the CSV phase's i-th tool.
func csvToolName(i int) string { return fmt.Sprintf("bench csv %d", i) }

// csvFileName is the file the CSV phase's i-th tool reads.
func csvFileName(i int) string { return fmt.Sprintf("big-%d.csv", i) }

// csvTools returns the CSV phase's n configured tools and their binding
// ops, for seed.
func csvTools(workspaceID, agentID string, n int) ([]models.ConfiguredTool, []bindingspec.Tool) {
	var tools []models.ConfiguredTool
	var ops []bindingspec.Tool
	for i := range n {
		tools = append(tools, models.ConfiguredTool{ID: models.NewID(), WorkspaceID: workspaceID, AgentID: agentID, DisplayName: csvToolName(i),
			BaseTool: models.BaseCSVLookup, Config: models.MustJSON(map[string]any{"file_name": csvFileName(i)})})
		ops = append(ops, bindingspec.Tool{Op: csvOp(i), Tool: csvToolName(i), Params: []string{"match_criteria", "return_columns"}, Record: new(false)})
	}
	return tools, ops
}

// bigCSV is a file of about csvFileBytes: customer rows of six columns
// whose ids start with prefix, so that each file is its own.
func bigCSV(prefix int) string {
	var b strings.Builder
	b.Grow(csvFileBytes + 256)
	b.WriteString("id,name,email,city,balance,note\n")
	for i := 0; b.Len() < csvFileBytes-200; i++ {
		fmt.Fprintf(&b, "%d-%d,customer %d,customer%d@example.test,city %d,%d.%02d,\"opened %d, tier %d\"\n",
			prefix, i, i, i, i%977, i%100000, i%100, 2000+i%25, i%5)
	}
	return b.String()
}

// uploadCSVFiles uploads the n files of the CSV phase to taskID through
// the files service, as an agent's upload stores them.
func uploadCSVFiles(ctx context.Context, dbURL string, secretsKey []byte, taskID string, n int) error {
	st, err := store.Open(ctx, dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	svc, err := files.New(files.Options{Store: st, Blobs: storage.NewDatabase(st.DB), SecretsKey: secretsKey, PublicAPIURL: "http://127.0.0.1"})
	if err != nil {
		return err
	}
	for i := range n {
		if _, err := svc.Upload(ctx, taskID, csvFileName(i), "text/csv", strings.NewReader(bigCSV(i))); err != nil {
			return fmt.Errorf("upload %s: %w", csvFileName(i), err)
		}
	}
	return nil
}

// csvPhase looks up one row in each of the n files at once through /run
// and prints the worker's memory.
func csvPhase(apiAddr string, pid int, tokens []string, n, cacheMB int) error {
	before, err := rss(pid, "VmRSS:")
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	sampled := make(chan int64)
	go func() {
		var most int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := rss(pid, "VmRSS:"); err == nil {
				most = max(most, v)
			}
			select {
			case <-stop:
				sampled <- most
				return
			case <-tick.C:
			}
		}
	}()
	client := &http.Client{Timeout: 5 * time.Minute}
	statuses := make([]int, n)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			want := fmt.Sprintf("%d-%d", i, 1000+i)
			body := fmt.Appendf(nil, `{"op":%q,"payload":{"match_criteria":{"id":%q},"return_columns":["name"]}}`, csvOp(i), want)
			req, err := http.NewRequest("POST", "http://"+apiAddr+"/api/app-runtime/run", bytes.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+tokens[i%len(tokens)])
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			out, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			statuses[i] = res.StatusCode
			if res.StatusCode != http.StatusOK || !bytes.Contains(out, fmt.Appendf(nil, `"customer %d"`, 1000+i)) {
				errs[i] = fmt.Errorf("%s answered %d: %.300s", csvOp(i), res.StatusCode, out)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	// The lookups are over; the worker has had a few seconds to return
	// what it no longer uses.
	time.Sleep(5 * time.Second)
	close(stop)
	most := <-sampled
	after, err := rss(pid, "VmRSS:")
	if err != nil {
		return err
	}
	hwm, err := peakRSS(pid)
	if err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("CSV phase: %w", err)
		}
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Printf("CSV phase: %d files of %.0f MiB looked up at once through /run in %s (statuses %v); worker RSS before %.1f MiB, most sampled %.1f MiB\n",
		n, mib(csvFileBytes), took.Round(time.Millisecond), statuses, mib(before), mib(most))
	fmt.Printf("csv_worker_peak_rss_mib=%.1f csv_worker_rss_after_mib=%.1f csv_worker_goal_mib=%d\n\n", mib(max(hwm, most)), mib(after), cacheMB+128)
	return nil
}
