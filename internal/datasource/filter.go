package datasource

import (
	"cmp"
	"database/sql/driver"
	"reflect"
	"slices"

	"github.com/appruntime/appruntime/internal/apperr"
)

// filterOp is the comparison one filter term makes.
type filterOp uint8

// The filter operators. opNotNull has no name of its own: it is is_null with
// value false, or ne with value null.
const (
	opEq filterOp = iota + 1
	opNe
	opLt
	opLte
	opGt
	opGte
	opLike
	opILike
	opIn
	opIsNull
	opNotNull
)

// opByName maps the operator form's "op" to its operator.
var opByName = map[string]filterOp{
	"eq": opEq, "ne": opNe, "lt": opLt, "lte": opLte, "gt": opGt, "gte": opGte,
	"like": opLike, "ilike": opILike, "in": opIn, "is_null": opIsNull,
}

// term is one parsed filter: column op value.
type term struct {
	column string
	op     filterOp
	fixed  bool  // from the binding's fixed filters
	value  any   // the operand of a comparison
	values []any // the operands of IN
}

// parseFilters turns a request's filters and a binding's fixed filters into
// terms sorted by column (fixed first), so one filter shape always gives the
// same SQL text and argument order.
func parseFilters(filters, fixed map[string]any) ([]term, error) {
	if len(filters)+len(fixed) == 0 {
		return nil, nil
	}
	terms := make([]term, 0, len(filters)+len(fixed))
	for col, v := range fixed {
		t, err := parseFilter(col, v)
		if err != nil {
			return nil, err
		}
		t.fixed = true
		terms = append(terms, t)
	}
	for col, v := range filters {
		t, err := parseFilter(col, v)
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	slices.SortFunc(terms, func(a, b term) int {
		if c := cmp.Compare(a.column, b.column); c != 0 {
			return c
		}
		switch {
		case a.fixed == b.fixed:
			return 0
		case a.fixed:
			return -1
		default:
			return 1
		}
	})
	return terms, nil
}

// parseFilter reads one filter value in any of its forms: a scalar
// (equality), an array (IN), null (IS NULL) or {"op": …, "value": …}.
func parseFilter(col string, v any) (term, error) {
	if v == nil {
		return term{column: col, op: opIsNull}, nil
	}
	if m, ok := v.(map[string]any); ok {
		return parseOperatorForm(col, m)
	}
	if values, ok := asList(v); ok {
		return inTerm(col, values)
	}
	if !isScalar(v) {
		return term{}, apperr.Invalidf("filter %q: want a scalar, an array, null or {\"op\", \"value\"}", col)
	}
	return term{column: col, op: opEq, value: v}, nil
}

// parseOperatorForm reads {"op": "…", "value": …}.
func parseOperatorForm(col string, m map[string]any) (term, error) {
	for k := range m {
		if k != "op" && k != "value" {
			return term{}, apperr.Invalidf("filter %q: unknown field %q (want \"op\" and \"value\")", col, k)
		}
	}
	name, ok := m["op"].(string)
	if !ok {
		return term{}, apperr.Invalidf("filter %q: \"op\" must be one of eq, ne, lt, lte, gt, gte, like, ilike, in, is_null", col)
	}
	op, ok := opByName[name]
	if !ok {
		return term{}, apperr.Invalidf("filter %q: unknown op %q (want eq, ne, lt, lte, gt, gte, like, ilike, in, is_null)", col, name)
	}
	value, present := m["value"]
	switch op {
	case opIsNull:
		switch value {
		case nil, true:
			return term{column: col, op: opIsNull}, nil
		case false:
			return term{column: col, op: opNotNull}, nil
		}
		return term{}, apperr.Invalidf("filter %q: is_null takes true or false", col)
	case opIn:
		values, ok := asList(value)
		if !ok {
			return term{}, apperr.Invalidf("filter %q: in takes an array", col)
		}
		return inTerm(col, values)
	}
	if !present {
		return term{}, apperr.Invalidf("filter %q: %s needs a \"value\"", col, name)
	}
	if value == nil {
		// SQL's "= NULL" is never true; say what the bundle meant.
		switch op {
		case opEq:
			return term{column: col, op: opIsNull}, nil
		case opNe:
			return term{column: col, op: opNotNull}, nil
		}
		return term{}, apperr.Invalidf("filter %q: %s cannot compare with null", col, name)
	}
	if !isScalar(value) {
		return term{}, apperr.Invalidf("filter %q: %s takes a scalar value", col, name)
	}
	if _, isString := value.(string); (op == opLike || op == opILike) && !isString {
		return term{}, apperr.Invalidf("filter %q: %s takes a string pattern", col, name)
	}
	return term{column: col, op: op, value: value}, nil
}

func inTerm(col string, values []any) (term, error) {
	if len(values) > MaxInValues {
		return term{}, apperr.Invalidf("filter %q: at most %d values in an in filter", col, MaxInValues)
	}
	for _, v := range values {
		if v == nil || !isScalar(v) {
			return term{}, apperr.Invalidf("filter %q: in values must be scalars (use is_null for null)", col)
		}
	}
	return term{column: col, op: opIn, values: values}, nil
}

// asList returns v's elements when v is an array (any slice but bytes).
func asList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []byte, nil:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// isScalar reports whether v is a single value (not an object or array).
func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	case []byte:
		return true
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer, reflect.Func, reflect.Chan:
		return isStructScalar(v)
	}
	return true
}

// isStructScalar admits the struct values that are scalars to a database
// (time.Time and other driver values) and nothing else.
func isStructScalar(v any) bool {
	switch v.(type) {
	case interface{ MarshalText() ([]byte, error) }:
		return true
	case driver.Valuer:
		return true
	}
	return false
}
