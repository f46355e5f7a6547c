// Package toolset builds the executors a deployment runs, one per base
// tool, from its configuration: what a worker hands the jobs of /run.
package toolset

import (
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/csvlookup"
	"github.com/appruntime/appruntime/internal/tool/extract"
	"github.com/appruntime/appruntime/internal/tool/python"
	"github.com/appruntime/appruntime/internal/tool/sqlquery"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/mssql"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/postgres"
	"github.com/appruntime/appruntime/internal/tool/translate"
	"github.com/appruntime/appruntime/models"
)

// New returns the executors configured by cfg: box opens the SQL tools'
// integration secrets, which connect through guard (the data sources'),
// files finds csv_lookup_tool's files (nil: the tool answers 501). Close
// releases the SQL tools' connection pools.
func New(cfg *config.Config, box *crypt.Box, guard datasource.Guard, files csvlookup.Files) (set tool.Set, closeFunc func()) {
	t := cfg.Tools
	sql := sqlquery.Options{Guard: guard, StatementTimeout: t.SQLStatementTimeout, LockTimeout: t.SQLLockTimeout, MaxConns: t.SQLMaxConns}
	pg, ms := postgres.New(box, sql), mssql.New(box, sql)
	// A nil *LibreTranslate must not become a non-nil Provider.
	var engine translate.Provider
	if lt := translate.NewLibreTranslate(t.TranslateURL, t.TranslateAPIKey, cfg.OutboundAllow); lt != nil {
		engine = lt
	}
	set = tool.Set{
		models.BasePythonCode: python.New(python.Options{
			Python: t.PythonBin, Bwrap: t.PythonBwrap, AllowUnsandboxed: t.PythonAllowUnsandboxed,
			CPUTime: t.PythonCPUTime, MemoryBytes: t.PythonMemoryBytes, FileBytes: t.PythonFileBytes, MaxProcesses: t.PythonMaxProcesses,
			Cgroup: t.PythonCgroup, AllowNoCgroup: t.PythonAllowNoCgroup,
		}),
		models.BasePostgresQuery: pg,
		models.BaseMSSQLQuery:    ms,
		models.BaseTranslateText: translate.New(engine),
		models.BaseExtraction:    extract.New(llm.New(t.ExtractionBaseURL, t.ExtractionAPIKey, t.ExtractionModel)),
	}
	if files != nil {
		set[models.BaseCSVLookup] = csvlookup.New(files, csvlookup.Options{MaxFileBytes: t.CSVMaxFileBytes, CacheBytes: t.CSVCacheBytes})
	}
	return set, func() {
		pg.Close()
		ms.Close()
	}
}
