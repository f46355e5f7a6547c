package bindingspec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// restIntegration returns the base URL and id of a rest binding's own
// integration, which its reads and writes are requests against.
func (v *validator) restIntegration() (baseURL, id string, err error) {
	if v.own == nil {
		return "", "", errors.New("a rest binding's reads and writes are requests against its integration: integration_id is required")
	}
	if v.own.Kind != IntegrationREST {
		return "", "", fmt.Errorf("integration %q is a %s integration; a rest binding's reads and writes need a %s integration with a base_url",
			v.own.ID, v.own.Kind, IntegrationREST)
	}
	if v.own.BaseURL == "" {
		return "", "", fmt.Errorf("integration %q has no base_url for the rest binding's reads and writes", v.own.ID)
	}
	return v.own.BaseURL, v.own.ID, nil
}

// checkRequest checks a rest read's or write's request as the call the
// gateway will run.
func (v *validator) checkRequest(op string, r *Request) error {
	if r == nil {
		return errors.New("request is required: a rest binding reads and writes through requests against its integration's base_url")
	}
	if !strings.HasPrefix(r.Path, "/") || strings.HasPrefix(r.Path, "//") {
		return fmt.Errorf("request.path %q must start with a single / (it is appended to the integration's base_url)", r.Path)
	}
	base, id, err := v.restIntegration()
	if err != nil {
		return err
	}
	call := r.Call(op, base, id)
	if err := checkCall(call); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	r.Method = call.Method
	return nil
}

// restRead checks a rest binding's read: a request, the columns a reply's
// objects are mapped to, filters as placeholder values. What only a table
// has (table, order_by, fixed_filters) is refused.
func (v *validator) restRead(r *Read) error {
	switch {
	case r.Table != "":
		return errors.New("table applies to a postgres binding; a rest read names a request")
	case len(r.OrderBy) > 0:
		return errors.New("order_by applies to a postgres binding; a rest read's order is the upstream's")
	case len(r.FixedFilters) > 0:
		return errors.New("fixed_filters applies to a postgres binding; put {{task_id}} and the other session values in the request's templates")
	}
	if len(r.Columns) == 0 {
		return errors.New("columns must list at least one column: the keys of the reply's objects returned as rows")
	}
	if err := checkColumns("columns", r.Columns); err != nil {
		return err
	}
	if err := checkColumns("filterable", r.Filterable); err != nil {
		return err
	}
	for _, c := range r.Filterable {
		if !slices.Contains(r.Columns, c) {
			return fmt.Errorf("filterable column %q is not among the read's columns", c)
		}
	}
	if r.Limit < 0 || r.Limit > MaxReadLimit {
		return fmt.Errorf("limit %d is out of range 0..%d (0 means %d)", r.Limit, MaxReadLimit, DefaultReadLimit)
	}
	return v.checkRequest(r.Op, r.Request)
}

// restWrite checks a rest binding's write: a request whose placeholders
// are the row's columns (and fixed values); the request's method says what
// it does, so mode and table are refused.
func (v *validator) restWrite(w *Write) error {
	switch {
	case w.Table != "":
		return errors.New("table applies to a postgres binding; a rest write names a request")
	case w.Mode != "":
		return errors.New("mode applies to a postgres binding; a rest write's request method says what it does")
	}
	if len(w.Columns) == 0 {
		return errors.New("columns must list at least one writable column")
	}
	for _, f := range []struct {
		name string
		cols []string
	}{{"columns", w.Columns}, {"key_columns", w.KeyColumns}} {
		if err := checkColumns(f.name, f.cols); err != nil {
			return err
		}
	}
	if err := checkFixed("fixed_values", w.FixedValues); err != nil {
		return err
	}
	for _, c := range w.Columns {
		if _, ok := w.FixedValues[c]; ok {
			return fmt.Errorf("column %q is both writable and in fixed_values; a fixed value cannot be set by a request", c)
		}
	}
	return v.checkRequest(w.Op, w.Request)
}
