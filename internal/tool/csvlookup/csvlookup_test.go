package csvlookup_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/csvlookup"
	"github.com/appruntime/appruntime/models"
)

// files is an in-memory Files: the store behind it arrives with the files
// feature, and the tool only needs the interface.
type files struct {
	mu       sync.Mutex
	versions map[string][]byte // name → newest bytes
	version  map[string]int
	opens    atomic.Int32
}

func newFiles() *files { return &files{versions: map[string][]byte{}, version: map[string]int{}} }

func (f *files) upload(name, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions[name] = []byte(data)
	f.version[name]++
}

func (f *files) Current(_ context.Context, _ *models.ConfiguredTool, name string) (csvlookup.FileRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.versions[name]; !ok {
		return csvlookup.FileRef{}, apperr.NotFoundf("no file %s", name)
	}
	return csvlookup.FileRef{ID: name, Version: fmt.Sprint(f.version[name])}, nil
}

func (f *files) Open(_ context.Context, ref csvlookup.FileRef) (io.ReadCloser, error) {
	f.opens.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return io.NopCloser(bytes.NewReader(f.versions[ref.ID])), nil
}

const vendors = "\xef\xbb\xbfvendor_id,name,country,iban\n" +
	"V1,ACME GmbH,DE,DE001\n" +
	"V2,\"Globex, Inc.\",US,\n" +
	"V3,ACME GmbH,AT,AT002\n" +
	"V4,Initech,DE\n" + // a short row: iban is empty
	"42,Numbers Ltd,UK,UK042\n"

func lookupCall(file, input string) tool.Call {
	return tool.Call{
		BaseTool: models.BaseCSVLookup,
		Tool: &models.ConfiguredTool{DisplayName: "Vendors", BaseTool: models.BaseCSVLookup,
			Config: models.MustJSON(map[string]string{"file_name": file, "matching_strategy": "llm"})},
		Input: json.RawMessage(input),
	}
}

func run(t *testing.T, ex *csvlookup.Executor, file, input string) (json.RawMessage, error) {
	t.Helper()
	res, err := ex.Run(context.Background(), lookupCall(file, input))
	require.Zero(t, res.Units, "the CSV tool bills nothing")
	return res.Output, err
}

func TestExactMatching(t *testing.T) {
	t.Parallel()
	fs := newFiles()
	fs.upload("vendors.csv", vendors)
	ex := csvlookup.New(fs, csvlookup.Options{})
	for _, tc := range []struct{ input, want string }{
		{`{"match_criteria":{"name":"ACME GmbH"},"return_columns":["vendor_id","country"],"task_id":"t-1"}`,
			`{"rows":[{"vendor_id":"V1","country":"DE"},{"vendor_id":"V3","country":"AT"}],"row_count":2,"truncated":false}`},
		{`{"match_criteria":{"name":"ACME GmbH","country":"AT"},"return_columns":["vendor_id"]}`,
			`{"rows":[{"vendor_id":"V3"}],"row_count":1,"truncated":false}`},
		{`{"match_criteria":{"name":"Globex, Inc."},"return_columns":["iban"]}`,
			`{"rows":[{"iban":""}],"row_count":1,"truncated":false}`},
		// Exact: no case folding, no trimming, no partial matches; the
		// LLM strategy stored on the tool is not used.
		{`{"match_criteria":{"name":"acme gmbh"}}`, `{"rows":[],"row_count":0,"truncated":false}`},
		{`{"match_criteria":{"name":"ACME"}}`, `{"rows":[],"row_count":0,"truncated":false}`},
		{`{"match_criteria":{"name":" ACME GmbH"}}`, `{"rows":[],"row_count":0,"truncated":false}`},
		// A number matches the cell as written; null an empty cell, short rows included.
		{`{"match_criteria":{"vendor_id":42},"return_columns":["name"]}`, `{"rows":[{"name":"Numbers Ltd"}],"row_count":1,"truncated":false}`},
		{`{"match_criteria":{"iban":null,"country":"DE"},"return_columns":["vendor_id"]}`, `{"rows":[{"vendor_id":"V4"}],"row_count":1,"truncated":false}`},
		// No return_columns: every column.
		{`{"match_criteria":{"vendor_id":"V1"}}`, `{"rows":[{"vendor_id":"V1","name":"ACME GmbH","country":"DE","iban":"DE001"}],"row_count":1,"truncated":false}`},
	} {
		out, err := run(t, ex, "vendors.csv", tc.input)
		require.NoError(t, err, tc.input)
		require.JSONEq(t, tc.want, string(out), tc.input)
	}
}

func TestBadInputIs400(t *testing.T) {
	t.Parallel()
	fs := newFiles()
	fs.upload("vendors.csv", vendors)
	ex := csvlookup.New(fs, csvlookup.Options{})
	for input, want := range map[string]string{
		`{"match_criteria":{"nmae":"ACME GmbH"}}`:                         `input.match_criteria names column "nmae", which the CSV file does not have (it has "vendor_id", "name", "country", "iban")`,
		`{"match_criteria":{"name":"x"},"return_columns":["name","vat"]}`: `input.return_columns names column "vat"`,
		`{"return_columns":["name"]}`:                                     "input.match_criteria must name at least one column",
		`{"match_criteria":{}}`:                                           "input.match_criteria must name at least one column",
		`{"match_criteria":{"name":["a"]}}`:                               "input.match_criteria.name must be a string, number, boolean or null",
		`{"match_criteria":"name"}`:                                       "input.match_criteria",
		`{"match_criteria":{"name":"x"},"return_columns":"name"}`:         "input.return_columns",
	} {
		_, err := run(t, ex, "vendors.csv", input)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", input, err)
		require.ErrorContains(t, err, want, input)
	}
}

func TestFileProblemsAreToolFailures(t *testing.T) {
	t.Parallel()
	fs := newFiles()
	fs.upload("broken.csv", "a,b\n\"unterminated,1\n")
	fs.upload("empty.csv", "")
	fs.upload("big.csv", "a\n"+strings.Repeat("x\n", 1<<20))
	ex := csvlookup.New(fs, csvlookup.Options{MaxFileBytes: 1 << 20})
	for file, want := range map[string]string{
		"missing.csv": `the CSV file "missing.csv" is not available yet`,
		"broken.csv":  `the CSV file "broken.csv" cannot be read`,
		"empty.csv":   `the CSV file "empty.csv" cannot be read: it is empty`,
		"big.csv":     `the CSV file "big.csv" is larger than 1 MiB`,
	} {
		_, err := run(t, ex, file, `{"match_criteria":{"a":"x"}}`)
		f, ok := tool.AsFailure(err)
		require.True(t, ok, "%s: %v", file, err)
		require.Contains(t, f.Message, want)
	}
	_, err := ex.Run(context.Background(), tool.Call{BaseTool: models.BaseCSVLookup, Input: json.RawMessage(`{}`)})
	require.True(t, apperr.Is(err, apperr.Invalid), "a base csv_lookup_tool without a configured tool: %v", err)
}

func TestEachVersionIsParsedAndIndexedOnce(t *testing.T) {
	t.Parallel()
	fs := newFiles()
	fs.upload("vendors.csv", vendors)
	ex := csvlookup.New(fs, csvlookup.Options{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := run(t, ex, "vendors.csv", `{"match_criteria":{"name":"ACME GmbH"}}`)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	for range 5 {
		_, err := run(t, ex, "vendors.csv", `{"match_criteria":{"name":"Initech","country":"DE"}}`)
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, fs.opens.Load(), "one file measured and parsed once for 25 lookups")
	stats := ex.Stats()
	require.EqualValues(t, 1, stats.FilesParsed)
	require.EqualValues(t, 2, stats.ColumnsIndexed, "name and country, each indexed once")

	// A new version is read and indexed anew, and answers with its rows.
	fs.upload("vendors.csv", "vendor_id,name\nV9,ACME GmbH\n")
	out, err := run(t, ex, "vendors.csv", `{"match_criteria":{"name":"ACME GmbH"},"return_columns":["vendor_id"]}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"rows":[{"vendor_id":"V9"}],"row_count":1,"truncated":false}`, string(out))
	stats = ex.Stats()
	require.EqualValues(t, 2, stats.FilesParsed)
	require.EqualValues(t, 3, stats.ColumnsIndexed)
}

func TestMatchesAreCapped(t *testing.T) {
	t.Parallel()
	fs := newFiles()
	var b strings.Builder
	b.WriteString("id,group\n")
	for i := range csvlookup.MaxMatches + 50 {
		fmt.Fprintf(&b, "%d,g\n", i)
	}
	fs.upload("many.csv", b.String())
	out, err := run(t, csvlookup.New(fs, csvlookup.Options{}), "many.csv", `{"match_criteria":{"group":"g"},"return_columns":["id"]}`)
	require.NoError(t, err)
	var got struct {
		Rows      []map[string]string `json:"rows"`
		RowCount  int                 `json:"row_count"`
		Truncated bool                `json:"truncated"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, csvlookup.MaxMatches, got.RowCount)
	require.True(t, got.Truncated)
	require.Equal(t, "0", got.Rows[0]["id"], "rows come in file order")
}

func TestCacheStaysWithinItsBudget(t *testing.T) {
	t.Parallel()
	fs := newFiles()
	file := "id,name\n" + strings.Repeat("1234567890,abcdefghij\n", 2000)
	for i := range 4 {
		fs.upload(fmt.Sprintf("f%d.csv", i), file)
	}
	lookup := func(ex *csvlookup.Executor, i int) {
		t.Helper()
		_, err := run(t, ex, fmt.Sprintf("f%d.csv", i), `{"match_criteria":{"id":"1"}}`)
		require.NoError(t, err)
	}
	// What one file takes, parsed and indexed; the cache gets room for two and a half.
	probe := csvlookup.New(fs, csvlookup.Options{})
	lookup(probe, 0)
	one := probe.Stats().CachedBytes
	require.Positive(t, one)
	budget := one * 5 / 2

	ex := csvlookup.New(fs, csvlookup.Options{CacheBytes: budget})
	parsed := func() int64 { return ex.Stats().FilesParsed }
	lookup(ex, 0)
	lookup(ex, 1)
	lookup(ex, 0) // f0 is the most recently used
	lookup(ex, 2) // evicts f1
	require.EqualValues(t, 3, parsed())
	require.LessOrEqual(t, ex.Stats().CachedBytes, budget)
	lookup(ex, 0)
	require.EqualValues(t, 3, parsed(), "f0 stayed")
	lookup(ex, 1)
	require.EqualValues(t, 4, parsed(), "f1 was evicted and is read again")
	require.Equal(t, 2*one, ex.Stats().CachedBytes)

	// A file whose parse does not fit the whole budget is the tool's error,
	// found before its table is allocated.
	small := csvlookup.New(fs, csvlookup.Options{CacheBytes: one / 4})
	_, err := run(t, small, "f3.csv", `{"match_criteria":{"id":"1"}}`)
	f, ok := tool.AsFailure(err)
	require.True(t, ok, "want a tool failure, got %v", err)
	require.Contains(t, f.Message, "may keep parsed (CSV_CACHE_MB)")
	require.Zero(t, small.Stats().FilesParsed)
	require.Zero(t, small.Stats().CachedBytes)
	require.Zero(t, small.Stats().PeakBytes, "refused before anything was reserved")
}

// benchmarkRows is the size of the file the benchmark looks up in.
const benchmarkRows = 100_000

func benchmarkFile() string {
	var b strings.Builder
	b.WriteString("invoice_id,vendor_id,amount,currency,status\n")
	for i := range benchmarkRows {
		fmt.Fprintf(&b, "INV-%06d,V%04d,%d.%02d,EUR,open\n", i, i%5000, i%9000, i%100)
	}
	return b.String()
}

// BenchmarkLookup compares, on one 100k-row file in the same run, a lookup
// through the executor (the file parsed and indexed by a first call before
// the clock starts) with a full scan of the already-parsed rows for the same
// criteria.
func BenchmarkLookup(b *testing.B) {
	data := benchmarkFile()
	input := func(i int) string {
		return fmt.Sprintf(`{"match_criteria":{"invoice_id":"INV-%06d","vendor_id":"V%04d"},"return_columns":["amount","status"]}`, i, i%5000)
	}
	b.Run("indexed", func(b *testing.B) {
		fs := newFiles()
		fs.upload("invoices.csv", data)
		ex := csvlookup.New(fs, csvlookup.Options{})
		ctx := context.Background()
		if _, err := ex.Run(ctx, lookupCall("invoices.csv", input(0))); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			res, err := ex.Run(ctx, lookupCall("invoices.csv", input((i*7919)%benchmarkRows)))
			if err != nil || !bytes.Contains(res.Output, []byte(`"row_count":1`)) {
				b.Fatalf("%s %v", res.Output, err)
			}
		}
		b.StopTimer()
		if s := ex.Stats(); s.FilesParsed != 1 || s.ColumnsIndexed != 2 {
			b.Fatalf("stats %+v: the file was parsed or indexed more than once", s)
		}
	})
	b.Run("scan", func(b *testing.B) {
		records, err := csv.NewReader(strings.NewReader(data)).ReadAll()
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			var in struct {
				MatchCriteria map[string]string `json:"match_criteria"`
			}
			if err := json.Unmarshal([]byte(input((i*7919)%benchmarkRows)), &in); err != nil {
				b.Fatal(err)
			}
			found := 0
			for _, rec := range records[1:] {
				if rec[0] == in.MatchCriteria["invoice_id"] && rec[1] == in.MatchCriteria["vendor_id"] {
					found++
				}
			}
			if found != 1 {
				b.Fatalf("found %d", found)
			}
		}
	})
}

// TestConcurrentParsesStayWithinTheBudget looks up six files at once, each
// of which fits the budget alone but not all six together: every lookup
// answers, and the cached versions with the parses and index builds in
// flight never held more than the budget.
func TestConcurrentParsesStayWithinTheBudget(t *testing.T) {
	t.Parallel()
	fs := newFiles()
	var b strings.Builder
	b.WriteString("id,name,city\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "%d,name %d,city %d\n", i, i, i%100)
	}
	const n = 6
	for i := range n {
		fs.upload(fmt.Sprintf("f%d.csv", i), b.String())
	}
	probe := csvlookup.New(fs, csvlookup.Options{})
	_, err := run(t, probe, "f0.csv", `{"match_criteria":{"id":"7"}}`)
	require.NoError(t, err)
	one := probe.Stats().CachedBytes
	budget := one * 5 / 2 // two files and a half

	ex := csvlookup.New(fs, csvlookup.Options{CacheBytes: budget})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := run(t, ex, fmt.Sprintf("f%d.csv", i), fmt.Sprintf(`{"match_criteria":{"id":"%d"},"return_columns":["name"]}`, 100+i))
			require.NoError(t, err)
			require.JSONEq(t, fmt.Sprintf(`{"rows":[{"name":"name %d"}],"row_count":1,"truncated":false}`, 100+i), string(out))
		})
	}
	wg.Wait()
	s := ex.Stats()
	require.EqualValues(t, n, s.FilesParsed)
	require.LessOrEqual(t, s.PeakBytes, budget, "cached, parsing and indexing together (one file takes %d)", one)
	require.LessOrEqual(t, s.CachedBytes, budget)
}
