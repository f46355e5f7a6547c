package binding_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// clock is a settable clock for ServiceOptions.NowFunc.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

func newService(t *testing.T, st *store.Store, rc redis.UniversalClient, prefix string, c *clock) *binding.Service {
	t.Helper()
	o := binding.ServiceOptions{Store: st, Redis: rc, KeyPrefix: prefix}
	if c != nil {
		o.NowFunc = c.Now
	}
	s, err := binding.NewService(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// dataSource creates a tenant and a postgres integration for its bindings.
func dataSource(t *testing.T, st *store.Store) (workspaceID, integrationID string) {
	t.Helper()
	tn := testkit.NewTenant(t, st.DB)
	in := models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "db", Kind: bindingspec.IntegrationPostgres}
	require.NoError(t, st.DB.Create(&in).Error)
	return tn.Workspace.ID, in.ID
}

func opsWithColumns(cols ...string) json.RawMessage {
	return json.RawMessage(models.MustJSON(map[string]any{
		"writes": []any{map[string]any{"op": "save", "table": "t", "mode": "insert", "columns": cols}},
	}))
}

func writeColumns(t *testing.T, l *binding.Loaded) []string {
	t.Helper()
	w, ok := l.Write("save")
	require.True(t, ok)
	return w.Columns
}

// TestLookupServesAtMostFiveSecondsOld: a binding changed without an
// announcement (here, straight in the database) is re-read once the cached
// copy is MaxStaleness old, and not before.
func TestLookupServesAtMostFiveSecondsOld(t *testing.T) {
	t.Parallel()
	st, rd, c := testkit.Tx(t), testkit.Redis(t), newClock()
	svc := newService(t, st, rd.Client, rd.Prefix, c)
	ws, integ := dataSource(t, st)
	row := models.Binding{ID: models.NewID(), WorkspaceID: ws, Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: &integ,
		AllowedOperations: models.JSON(opsWithColumns("a")), Version: 1}
	require.NoError(t, st.DB.Create(&row).Error)
	ctx := context.Background()

	loadedAt := c.Now()
	l, err := svc.Lookup(ctx, row.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, writeColumns(t, l))

	require.NoError(t, st.DB.Model(&models.Binding{}).Where("id = ?", row.ID).
		Updates(map[string]any{"allowed_operations": models.JSON(opsWithColumns("a", "b")), "version": 2}).Error)
	for _, age := range []time.Duration{0, time.Second, binding.MaxStaleness - time.Millisecond} {
		c.Set(loadedAt.Add(age))
		l, err = svc.Lookup(ctx, row.ID)
		require.NoError(t, err)
		require.Equal(t, 1, l.Version, "at age %s the cached copy is served", age)
	}
	c.Advance(time.Millisecond)
	l, err = svc.Lookup(ctx, row.ID)
	require.NoError(t, err)
	require.Equal(t, 2, l.Version, "at MaxStaleness the binding is re-read")
	require.Equal(t, []string{"a", "b"}, writeColumns(t, l))
}

// TestLookupFallsBackWhenRedisFails: a replica that cannot hear saves
// serves a cached binding while younger than MaxStaleness, then re-reads it.
func TestLookupFallsBackWhenRedisFails(t *testing.T) {
	t.Parallel()
	st, rd, c := testkit.Tx(t), testkit.Redis(t), newClock()
	writer := newService(t, st, rd.Client, rd.Prefix, nil)
	opts, err := redis.ParseURL(testkit.RedisURL())
	require.NoError(t, err)
	failing := redis.NewClient(opts)
	reader := newService(t, st, failing, rd.Prefix, c)
	ws, integ := dataSource(t, st)
	ctx := context.Background()

	b, err := writer.Create(ctx, ws, "test", bindingspec.Input{Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: integ, AllowedOperations: opsWithColumns("a")})
	require.NoError(t, err)
	l, err := reader.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, 1, l.Version)

	require.NoError(t, failing.Close())
	_, err = writer.Update(ctx, ws, b.ID, "test", binding.Patch{AllowedOperations: opsWithColumns("a", "b")})
	require.NoError(t, err)

	c.Advance(binding.MaxStaleness - time.Millisecond)
	l, err = reader.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, 1, l.Version, "without Redis a young entry is served")
	c.Advance(time.Millisecond)
	l, err = reader.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, 2, l.Version, "without Redis an entry is re-read at MaxStaleness")
}

// TestSaveEvictsEveryReplicasEntry: a save returns only once every replica
// has dropped its entry, so the next call anywhere reads the new version.
func TestSaveEvictsEveryReplicasEntry(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Tx(t), testkit.Redis(t)
	one := newService(t, st, rd.Client, rd.Prefix, nil)
	ws, integ := dataSource(t, st)
	ctx := context.Background()

	b, err := one.Create(ctx, ws, "test", bindingspec.Input{Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: integ, AllowedOperations: opsWithColumns("a")})
	require.NoError(t, err)
	two := newService(t, st, rd.Client, rd.Prefix, nil)
	_, err = two.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.True(t, two.Cached(b.ID))

	_, err = one.Update(ctx, ws, b.ID, "test", binding.Patch{AllowedOperations: opsWithColumns("b")})
	require.NoError(t, err)
	require.False(t, two.Cached(b.ID), "the save waited for the other replica's eviction")
	require.False(t, one.Cached(b.ID))
	l, err := two.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, writeColumns(t, l))

	require.NoError(t, one.Delete(ctx, ws, b.ID, "test"))
	_, err = two.Lookup(ctx, b.ID)
	require.True(t, apperr.Is(err, apperr.NotFound), "a deleted binding is gone on the next call: %v", err)
}

// TestResubscribingEmptiesTheCache: saves announced while a replica was
// disconnected are lost, so a replica that reconnects drops every entry.
func TestResubscribingEmptiesTheCache(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Tx(t), testkit.Redis(t)
	opts, err := redis.ParseURL(testkit.RedisURL())
	require.NoError(t, err)
	opts.ClientName = "resubscribe-" + models.NewID() // to find this service's subscriber connection
	own := redis.NewClient(opts)
	t.Cleanup(func() { _ = own.Close() })
	svc := newService(t, st, own, rd.Prefix, nil)
	ws, integ := dataSource(t, st)
	ctx := context.Background()
	b, err := svc.Create(ctx, ws, "test", bindingspec.Input{Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: integ, AllowedOperations: opsWithColumns("a")})
	require.NoError(t, err)
	_, err = svc.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.True(t, svc.Cached(b.ID))

	// Kill the service's subscriber connection; go-redis reconnects and
	// subscribes again, and the service must assume it missed saves.
	list, err := rd.Client.ClientList(ctx).Result()
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+opts.ClientName+" ") || !strings.Contains(line, " sub=1 ") {
			continue
		}
		id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
		require.NoError(t, rd.Client.Do(ctx, "CLIENT", "KILL", "ID", id).Err())
		killed++
	}
	require.Equal(t, 1, killed, "one subscriber connection")
	require.Eventually(t, func() bool { return !svc.Cached(b.ID) }, 10*time.Second, 10*time.Millisecond)
}

func TestLookupUnknownBinding(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Tx(t), testkit.Redis(t)
	svc := newService(t, st, rd.Client, rd.Prefix, nil)
	for _, id := range []string{models.NewID(), "not-an-id"} {
		_, err := svc.Lookup(context.Background(), id)
		require.True(t, apperr.Is(err, apperr.NotFound), "%s: %v", id, err)
		require.False(t, svc.Cached(id))
	}
}

func TestLoadedIndexesEveryOp(t *testing.T) {
	t.Parallel()
	yes := false
	l := binding.NewLoaded(binding.Binding{
		ID: "b", WorkspaceID: "w", BindingKind: bindingspec.KindPostgres, Version: 3,
		AllowedOperations: bindingspec.Spec{
			Reads:        []bindingspec.Read{{Op: "list", Table: "t", Columns: []string{"a"}}},
			Writes:       []bindingspec.Write{{Op: "save", Table: "t", Mode: bindingspec.ModeInsert, Columns: []string{"a"}}},
			Actions:      []bindingspec.Action{{Name: "approve", Writes: []string{"save"}, ResolvesAwait: true}},
			HTTPCalls:    []bindingspec.HTTPCall{{Op: "lookup", Method: "GET", URL: "https://crm.example.com/a"}},
			Tools:        []bindingspec.Tool{{Op: "translate", Tool: "translate_text", Record: &yes}},
			Capabilities: []string{"next_review_task"},
		},
	})
	r, ok := l.Read("list")
	require.True(t, ok)
	require.Equal(t, "t", r.Table)
	_, ok = l.Read("save")
	require.False(t, ok, "a write is not a read")
	w, ok := l.Write("save")
	require.True(t, ok)
	require.Equal(t, bindingspec.ModeInsert, w.Mode)
	a, ok := l.Action("approve")
	require.True(t, ok)
	require.True(t, a.ResolvesAwait)
	h, ok := l.HTTPCall("lookup")
	require.True(t, ok)
	require.Equal(t, "GET", h.Method)
	tool, ok := l.Tool("translate")
	require.True(t, ok)
	require.False(t, tool.Records())
	_, ok = l.Tool("list")
	require.False(t, ok)

	require.True(t, l.Grants("file_preview"), "grandfathered")
	require.True(t, l.Grants("next_review_task"), "granted by the list")
	require.False(t, l.Grants("document_selection"), "not granted")
	require.Equal(t, []string{"file_preview", "list_files", "split_document", "get_translation", "next_review_task"}, l.Capabilities())
}

// BenchmarkLookupHit measures the runtime's hot path: a cached binding
// younger than MaxStaleness (no Redis or database round trip).
func BenchmarkLookupHit(b *testing.B) {
	st, rd := testkit.Schema(b), testkit.Redis(b)
	svc, err := binding.NewService(context.Background(), binding.ServiceOptions{Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix})
	require.NoError(b, err)
	defer svc.Close()
	tn := testkit.NewTenant(b, st.DB)
	in := models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "db", Kind: bindingspec.IntegrationPostgres}
	require.NoError(b, st.DB.Create(&in).Error)
	ctx := context.Background()
	bd, err := svc.Create(ctx, tn.Workspace.ID, "bench", bindingspec.Input{Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: in.ID, AllowedOperations: opsWithColumns("a")})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.Lookup(ctx, bd.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// TestALoadThatRacesASaveDoesNotCacheTheOldRow: a replica that read the row
// just before a save committed must not cache that row after the save's
// eviction reached it, or the saved change would wait MaxStaleness there.
func TestALoadThatRacesASaveDoesNotCacheTheOldRow(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	writer := newService(t, st, rd.Client, rd.Prefix, nil)
	reader := newService(t, st, rd.Client, rd.Prefix, nil)
	ws, integ := dataSource(t, st)
	ctx := context.Background()
	b, err := writer.Create(ctx, ws, "test", bindingspec.Input{Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: integ, AllowedOperations: opsWithColumns("a")})
	require.NoError(t, err)

	// Hold the reader's load after it has read the row, before it caches it.
	var armed atomic.Bool
	read, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, st.DB.Callback().Query().After("gorm:query").Register("test:hold_binding_load", func(db *gorm.DB) {
		if db.Statement.Table == "bindings" && armed.CompareAndSwap(true, false) {
			close(read)
			<-release
		}
	}))
	armed.Store(true)
	type lookup struct {
		l   *binding.Loaded
		err error
	}
	first := make(chan lookup, 1)
	go func() { l, err := reader.Lookup(ctx, b.ID); first <- lookup{l, err} }()
	<-read

	_, err = writer.Update(ctx, ws, b.ID, "test", binding.Patch{AllowedOperations: opsWithColumns("a", "b")})
	require.NoError(t, err)
	close(release)
	got := <-first
	require.NoError(t, got.err)
	require.Equal(t, 1, got.l.Version, "a call that began before the save may see the old row")
	require.False(t, reader.Cached(b.ID), "the old row is not cached over the save's eviction")

	l, err := reader.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, 2, l.Version, "the next call reads the saved version")
}

// TestSaveWithoutRedisIsRefused is issue 23's LOW: a binding save during a
// Redis outage answered 200 while another replica kept serving the removed
// op for up to MaxStaleness. With Redis stopped, an update and a delete
// are 503 and change nothing; the other replica's entry stays the truth.
func TestSaveWithoutRedisIsRefused(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	embedded, err := rdb.StartEmbedded()
	require.NoError(t, err)
	t.Cleanup(embedded.Close)
	opts, err := redis.ParseURL(embedded.URL)
	require.NoError(t, err)
	opts.MaxRetries = -1
	rc := redis.NewClient(opts)
	t.Cleanup(func() { _ = rc.Close() })
	one := newService(t, st, rc, "outage:", nil)
	two := newService(t, st, rc, "outage:", nil)
	ws, integ := dataSource(t, st)
	ctx := context.Background()
	b, err := one.Create(ctx, ws, "test", bindingspec.Input{Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: integ, AllowedOperations: opsWithColumns("a", "b")})
	require.NoError(t, err)
	_, err = two.Lookup(ctx, b.ID)
	require.NoError(t, err)

	embedded.Close()
	_, err = one.Update(ctx, ws, b.ID, "test", binding.Patch{AllowedOperations: opsWithColumns("a")})
	require.True(t, apperr.Is(err, apperr.Unavailable), "the save is a 503: %v", err)
	require.Contains(t, err.Error(), "was not saved")
	err = one.Delete(ctx, ws, b.ID, "test")
	require.True(t, apperr.Is(err, apperr.Unavailable), "the delete is a 503: %v", err)

	var row models.Binding
	require.NoError(t, st.DB.Where("id = ?", b.ID).Take(&row).Error)
	require.Equal(t, 1, row.Version, "nothing was saved")
	var versions, audits int64
	require.NoError(t, st.DB.Model(&models.BindingVersion{}).Where("binding_id = ?", b.ID).Count(&versions).Error)
	require.EqualValues(t, 1, versions)
	require.NoError(t, st.DB.Model(&models.AuditEntry{}).Where("target_id = ?", b.ID).Count(&audits).Error)
	require.EqualValues(t, 1, audits, "only the create is audited")
	l, err := two.Lookup(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, writeColumns(t, l), "what the other replica serves is what is saved")
}
