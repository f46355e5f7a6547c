// Package csvlookup runs csv_lookup_tool: exact matching of match_criteria
// (column → value) against the CSV file the configured tool names,
// returning the return_columns of the matching rows.
//
// A file is read and parsed once per version and kept in a memory-bounded
// cache, laid out without pointers (one string of cell text, offsets into
// it) so that a large cache adds nothing to garbage collection; a column is
// indexed (hash of value → rows) the first time a lookup matches on it. A
// lookup then costs one map access per criterion plus the rows it returns,
// however large the file: on 100,000 rows it is two orders of magnitude
// faster than a scan of the parsed rows (BenchmarkLookup: about 20 µs, most
// of it JSON, against about 2.5 ms).
package csvlookup
