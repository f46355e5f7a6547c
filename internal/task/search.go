package task

import (
	"context"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// SearchScanBound is how many of a list's newest tasks a search reads when
// no index serves it: on SQLite (dev mode), on Postgres without the trigram
// indexes of migration 0026, and for a query with no run of
// SearchIndexMinRunes letters or digits (no trigram to look up). The page
// then says so (SummaryPage.SearchBound).
const SearchScanBound = 10000

// SearchIndexMinRunes is the shortest run of letters or digits a query needs
// for the trigram indexes to serve it.
const SearchIndexMinRunes = 3

// searchFirstScan is how many of a list's newest tasks an indexed search
// reads first, by the list's own index: a query matching many tasks fills
// its page there and never reads its matches through the trigram indexes
// (docs/performance.md#the-console-task-list).
const searchFirstScan = 2000

// searchMatches is the search as a condition on each task read: title, id,
// agent name, or a key detail's key or value (of the workspace's agents
// only, so a hashed subplan never reads another workspace's key details).
// Its arguments: the pattern twice, the workspace and the pattern, the
// workspace and the pattern twice.
const searchMatches = "(LOWER(tasks.title) LIKE ?" + store.LikeEscape +
	" OR LOWER(CAST(tasks.id AS TEXT)) LIKE ?" + store.LikeEscape +
	" OR tasks.agent_id IN (SELECT a.id FROM agents a WHERE a.workspace_id = ? AND LOWER(a.name) LIKE ?" + store.LikeEscape + ")" +
	" OR tasks.id IN (SELECT kv.task_id FROM agent_key_values kv WHERE kv.agent_id IN (SELECT a.id FROM agents a WHERE a.workspace_id = ?)" +
	" AND (LOWER(kv.key) LIKE ?" + store.LikeEscape + " OR LOWER(CAST(kv.value AS TEXT)) LIKE ?" + store.LikeEscape + ")))"

// searchIndexedIDs is the search through the trigram indexes of migration
// 0026 (Postgres): the ids of the workspace's matching tasks, each branch
// read from an index that leads with the workspace or its agents, so no
// other workspace's entries are read. Its arguments: the workspace and the
// pattern twice, the workspace and the pattern twice. The tasks of agents
// whose names match are a branch IndexedSearch adds with their ids (read
// first: a subquery there let the planner seq-scan or launch parallel
// workers for an empty list, 70-170 ms).
const searchIndexedIDs = "SELECT id FROM tasks WHERE workspace_id = ? AND LOWER(title) LIKE ?" + store.LikeEscape +
	" UNION SELECT id FROM tasks WHERE workspace_id = ? AND LOWER(CAST(id AS TEXT)) LIKE ?" + store.LikeEscape +
	" UNION SELECT kv.task_id FROM agent_key_values kv WHERE kv.agent_id = ANY(ARRAY(SELECT a.id FROM agents a WHERE a.workspace_id = ?))" +
	" AND (LOWER(kv.key) LIKE ?" + store.LikeEscape + " OR LOWER(CAST(kv.value AS TEXT)) LIKE ?" + store.LikeEscape + ")"

// searchIndexes are the indexes migration 0026 creates where the database
// lets it create pg_trgm and btree_gin.
var searchIndexes = []string{"tasks_search_title", "tasks_search_id", "agent_key_values_search_key", "agent_key_values_search_value"}

// indexedSearch caches whether the store has the trigram indexes, and
// holds the search's bounds (searchFirstScan, SearchScanBound; tests make
// them small).
type indexedSearch struct {
	state     atomic.Int32 // 0 not yet asked, 1 yes, 2 no
	firstScan int
	scanBound int
}

// get reports whether st has every index of searchIndexes.
func (c *indexedSearch) get(ctx context.Context, st *store.Store) (bool, error) {
	switch c.state.Load() {
	case 1:
		return true, nil
	case 2:
		return false, nil
	}
	if st.Dialect != config.Postgres {
		c.state.Store(2)
		return false, nil
	}
	var n int64
	err := st.DB.WithContext(ctx).Raw("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname IN ?", searchIndexes).Scan(&n).Error
	if err != nil {
		return false, err
	}
	if n == int64(len(searchIndexes)) {
		c.state.Store(1)
		return true, nil
	}
	c.state.Store(2)
	return false, nil
}

// listCond narrows a query of the task list.
type listCond = func(*gorm.DB) *gorm.DB

// search reads a page of the list's tasks matching text. Through the
// trigram indexes when the store has them and text has a trigram; else
// among the list's newest SearchScanBound tasks, saying so on out.
// list is the filtered list newest first, (at, id) its keyset's columns,
// read a page of it from the cursor with extra conditions.
func (s *Service) search(ctx context.Context, workspaceID, text string, out *SummaryPage, list func() *gorm.DB, at, id string,
	read func(...listCond) ([]models.Task, error)) ([]models.Task, error) {
	like := store.Contains(text)
	matches := func(q *gorm.DB) *gorm.DB {
		return q.Where(searchMatches, like, like, workspaceID, like, workspaceID, like, like)
	}
	indexed, err := s.searchIndex.get(ctx, s.st)
	if err != nil {
		return nil, err
	}
	out.SearchIndexed = indexed
	if indexed && hasTrigram(text) {
		// A query matching many tasks fills the page among the newest ones;
		// one matching few reads its matches through the indexes.
		rows, bounded, err := scanNewest(list, at, id, s.searchIndex.firstScan, read, matches)
		if err != nil || !bounded || len(rows) > TasksPerPage {
			return rows, err
		}
		var agents []string
		err = s.st.DB.WithContext(ctx).Model(&models.Agent{}).Where("workspace_id = ? AND LOWER(name) LIKE ?"+store.LikeEscape, workspaceID, like).
			Pluck("id", &agents).Error
		if err != nil {
			return nil, err
		}
		return read(func(q *gorm.DB) *gorm.DB { return q.Where(IndexedSearch(s.st.DB, workspaceID, text, agents)) })
	}
	rows, bounded, err := scanNewest(list, at, id, s.searchIndex.scanBound, read, matches)
	if bounded && len(rows) <= TasksPerPage {
		out.SearchBound = s.searchIndex.scanBound
	}
	return rows, err
}

// IndexedSearch is the condition on tasks that the indexed search adds to
// the list (Postgres with migration 0026): the matching ids read through
// the trigram indexes, as an array, so the page is read by tasks_pkey from
// the matches (an IN would let the planner hash-join every task of the
// workspace). Exported for the bench's plan.
// agentIDs are the workspace's agents whose names match.
func IndexedSearch(db *gorm.DB, workspaceID, text string, agentIDs []string) clause.Expr {
	like := store.Contains(text)
	ids := db.Raw(searchIndexedIDs, workspaceID, like, workspaceID, like, workspaceID, like, like)
	if len(agentIDs) > 0 {
		ids = db.Raw("? UNION SELECT id FROM tasks WHERE workspace_id = ? AND agent_id IN ?", ids, workspaceID, agentIDs)
	}
	return gorm.Expr("tasks.id = ANY(ARRAY(?))", ids)
}

// scanNewest reads a page of the list's newest n tasks that meet matches;
// bounded says the list holds more than n, which were not read.
func scanNewest(list func() *gorm.DB, at, id string, n int, read func(...listCond) ([]models.Task, error), matches listCond) ([]models.Task, bool, error) {
	var edge struct {
		At time.Time
		ID string
	}
	if err := list().Select(at + " AS at, " + id + " AS id").Offset(n - 1).Limit(1).Scan(&edge).Error; err != nil {
		return nil, false, err
	}
	if edge.ID == "" {
		rows, err := read(matches)
		return rows, false, err
	}
	rows, err := read(matches, func(q *gorm.DB) *gorm.DB {
		// at >= edge alone is what an index reads from (the OR is a filter
		// in a generic plan, which would walk every task).
		return q.Where(at+" >= ? AND ("+at+" > ? OR "+id+" >= ?)", edge.At, edge.At, edge.ID)
	})
	return rows, true, err
}

// hasTrigram reports whether text holds a run of SearchIndexMinRunes
// letters or digits: a trigram pg_trgm can look up for LIKE '%text%'.
func hasTrigram(text string) bool {
	run := 0
	for _, r := range strings.ToLower(text) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if run++; run >= SearchIndexMinRunes {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}
