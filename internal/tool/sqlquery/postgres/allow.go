package postgres

// allowedFunctions are the functions a stored query may call: the built-in
// ones a read-only report needs (aggregates and window functions, math,
// string, date and time, JSON, arrays, text search ranking, function-style
// casts), by the name the parser gives (unquoted names folded to lower
// case), unqualified or in pg_catalog. Everything else is refused at save
// and at run: a deny list let through what it did not name, such as
// ts_stat and ts_rewrite, which run SQL text of their argument that this
// check never parses (issue 23).
var allowedFunctions = setOf(
	// Aggregates.
	"count", "sum", "avg", "min", "max", "array_agg", "string_agg", "json_agg", "jsonb_agg",
	"json_object_agg", "jsonb_object_agg", "bool_and", "bool_or", "every", "bit_and", "bit_or", "bit_xor",
	"stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "corr", "covar_pop", "covar_samp",
	"regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
	"percentile_cont", "percentile_disc", "mode", "any_value",
	// Window functions.
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
	"first_value", "last_value", "nth_value",
	// Math.
	"abs", "ceil", "ceiling", "floor", "round", "trunc", "sign", "sqrt", "cbrt", "power", "pow", "exp", "ln", "log",
	"log10", "mod", "div", "pi", "degrees", "radians", "width_bucket", "gcd", "lcm", "factorial", "scale",
	"trim_scale", "min_scale", "random", "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2",
	"sind", "cosd", "tand", "cotd", "asind", "acosd", "atand", "atan2d", "sinh", "cosh", "tanh",
	// Strings.
	"length", "char_length", "character_length", "octet_length", "bit_length", "lower", "upper", "initcap",
	"btrim", "ltrim", "rtrim", "substr", "substring", "position", "strpos", "replace", "translate", "left", "right",
	"lpad", "rpad", "concat", "concat_ws", "format", "split_part", "string_to_array", "string_to_table",
	"array_to_string", "regexp_replace", "regexp_match", "regexp_matches", "regexp_split_to_array",
	"regexp_split_to_table", "regexp_like", "regexp_count", "regexp_substr", "regexp_instr", "repeat", "reverse",
	"starts_with", "md5", "sha224", "sha256", "sha384", "sha512", "to_hex", "ascii", "chr", "overlay", "encode",
	"decode", "normalize", "is_normalized", "quote_ident", "quote_literal", "quote_nullable", "like_escape",
	"similar_to_escape", "to_ascii",
	// Dates and times.
	"now", "clock_timestamp", "statement_timestamp", "transaction_timestamp", "timeofday", "date_trunc",
	"date_part", "extract", "date_bin", "age", "make_date", "make_time", "make_timestamp", "make_timestamptz",
	"make_interval", "justify_days", "justify_hours", "justify_interval", "isfinite", "timezone", "overlaps",
	// Formatting and conversion.
	"to_char", "to_date", "to_timestamp", "to_number", "num_nulls", "num_nonnulls", "pg_typeof",
	// Function-style casts (date(x), int4(x)…).
	"date", "time", "timestamp", "timestamptz", "interval", "text", "varchar", "bpchar", "numeric",
	"int2", "int4", "int8", "float4", "float8", "bool", "money", "uuid",
	// JSON.
	"to_json", "to_jsonb", "row_to_json", "array_to_json", "json_build_object", "jsonb_build_object",
	"json_build_array", "jsonb_build_array", "json_object", "jsonb_object", "json_array_length",
	"jsonb_array_length", "json_each", "jsonb_each", "json_each_text", "jsonb_each_text", "json_extract_path",
	"jsonb_extract_path", "json_extract_path_text", "jsonb_extract_path_text", "json_object_keys",
	"jsonb_object_keys", "json_array_elements", "jsonb_array_elements", "json_array_elements_text",
	"jsonb_array_elements_text", "json_typeof", "jsonb_typeof", "json_strip_nulls", "jsonb_strip_nulls",
	"jsonb_pretty", "jsonb_set", "jsonb_set_lax", "jsonb_insert", "json_to_record", "jsonb_to_record",
	"json_to_recordset", "jsonb_to_recordset", "jsonb_path_query", "jsonb_path_query_array",
	"jsonb_path_query_first", "jsonb_path_exists", "jsonb_path_match",
	// Arrays and sets.
	"array_length", "cardinality", "unnest", "array_position", "array_positions", "array_remove",
	"array_replace", "array_append", "array_prepend", "array_cat", "array_dims", "array_lower",
	"array_upper", "array_ndims", "trim_array", "generate_series", "generate_subscripts",
	// Text search, ranking a document against a query (not ts_stat or
	// ts_rewrite, whose text argument is a query the server runs).
	"to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery",
	"ts_rank", "ts_rank_cd", "ts_headline", "setweight", "strip", "numnode",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
