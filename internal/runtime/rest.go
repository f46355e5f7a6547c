package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/models"
)

// A rest binding's reads and writes are requests against its integration's
// base_url through the gateway (docs/admins.md#rest-bindings). A read's reply
// must be a 2xx JSON array of objects; it answers the rows shape of a
// postgres read, one row per object, the op's columns taken by key.

// restCall is op's request as the gateway's call, on the binding's integration.
func (s *Service) restCall(ctx context.Context, b *binding.Loaded, op string, r *bindingspec.Request) (*bindingspec.HTTPCall, error) {
	if s.Gateway == nil {
		return nil, apperr.NotImplementedf("this deployment has no HTTP gateway; the reads and writes of a rest binding are not served")
	}
	if r == nil || b.IntegrationID == "" {
		return nil, apperr.Forbiddenf("op %q of rest binding %q has no request against an integration; an admin must fix the binding", op, b.Name)
	}
	integ, err := s.integration(ctx, b.WorkspaceID, b.IntegrationID)
	if err != nil {
		return nil, err
	}
	return r.Call(op, integ.BaseURL, integ.ID), nil
}

// restRead runs a rest binding's read: the filters (an absent filterable
// column is "", "no filter") fill the request's placeholders, and the
// reply's objects become rows. Like a lookup it is rate-limited per surface
// and bounded by the bulkhead. It has one page: a cursor is refused and
// rows past the limit are not returned.
func (s *Service) restRead(ctx context.Context, c session.Claims, b *binding.Loaded, op *bindingspec.Read, p readPayload, columns []string, limit int) (Result, error) {
	if p.Cursor != "" {
		return Result{}, apperr.Invalidf("op %q is a rest read: its reply is one page, there is no cursor", op.Op)
	}
	call, err := s.restCall(ctx, b, op.Op, op.Request)
	if err != nil {
		return Result{}, err
	}
	values := restFilterValues(op, p)
	resp, err := s.callUpstream(ctx, c, call, values)
	if err != nil {
		return Result{}, err
	}
	rows, err := restRows(op.Op, resp, columns, limit)
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: "rows", Body: &RowsReply{Kind: "rows", Columns: columns, Rows: rows, RowCount: len(rows)}}, nil
}

// restFilterValues are a rest read's placeholder values: each filterable
// column's filter, "" (no filter) when the request leaves it out.
func restFilterValues(op *bindingspec.Read, p readPayload) map[string]any {
	values := make(map[string]any, len(op.Filterable))
	for _, col := range op.Filterable {
		values[col] = ""
		if v, ok := p.Filters[col]; ok {
			values[col] = v
		}
	}
	return values
}

// restRows maps a rest read's reply to rows: a 2xx JSON array of objects,
// each object one row of columns (a key the object lacks is null; keys not
// among columns never leave). Anything else is 502 naming only the status.
func restRows(op string, resp Response, columns []string, limit int) ([][]any, error) {
	if !resp.OK() {
		return nil, apperr.New(apperr.BadGateway, "rest read %q: the upstream answered %d", op, resp.Status)
	}
	notArray := apperr.New(apperr.BadGateway, "rest read %q: the upstream's reply is not a JSON array of objects", op)
	if resp.Body == nil {
		if resp.Text != nil && *resp.Text == gateway.ReplyTooLargeNote {
			return nil, apperr.New(apperr.BadGateway, "rest read %q: the upstream's reply exceeded 1 MiB", op)
		}
		return nil, notArray
	}
	dec := json.NewDecoder(bytes.NewReader(resp.Body))
	dec.UseNumber()
	var objects []map[string]any
	if err := dec.Decode(&objects); err != nil || objects == nil {
		return nil, notArray
	}
	rows := make([][]any, 0, min(len(objects), limit))
	for _, obj := range objects {
		if obj == nil {
			return nil, notArray
		}
		if len(rows) == limit {
			break
		}
		row := make([]any, len(columns))
		for i, col := range columns {
			row[i] = obj[col]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// bodyMethods are the methods whose rest write sends the row as its body
// when the request declares no body_template.
var bodyMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch}

// restWrite sends a rest binding's write: the row (request columns, key
// columns and fixed values, as for a postgres write) fills the request's
// placeholders, and is the JSON body when the request has no body_template.
// A 2xx reply is one row affected; anything else is 502 and no feed row.
// The write intent is kept as outcome unknown only when the request may
// have reached the upstream without an answer.
func (s *Service) restWrite(ctx context.Context, c session.Claims, b *binding.Loaded, op *bindingspec.Write, record models.JSON, values map[string]any) (Result, error) {
	call, err := s.restCall(ctx, b, op.Op, op.Request)
	if err != nil {
		return Result{}, err
	}
	if len(call.BodyTemplate) == 0 && slices.Contains(bodyMethods, call.Method) {
		call.BodyTemplate = rowTemplate(values)
	}
	in, err := s.openIntent(ctx, c, op.Op, record)
	if err != nil {
		return Result{}, err
	}
	resp, err := s.Gateway.Call(ctx, call, CallInput{WorkspaceID: c.WorkspaceID, Session: c.Values(), Values: values})
	if err != nil {
		return Result{}, s.settleFailed(ctx, in, err, gateway.MayHaveArrived(err))
	}
	if !resp.OK() {
		return Result{}, s.settleFailed(ctx, in, apperr.New(apperr.BadGateway, "rest write %q: the upstream answered %d", op.Op, resp.Status), false)
	}
	if err := s.completeIntent(ctx, in, 1); err != nil {
		// Written upstream: the intent stays, and the sweep records it.
		return Result{Kind: "write", Body: &WriteReply{RowsAffected: 1}}, nil
	}
	return Result{Kind: "write", Body: &WriteReply{RowsAffected: 1}}, nil
}

// rowTemplate is the body_template {"col": "{{col}}", …} of a row's columns:
// each value keeps its JSON type.
func rowTemplate(values map[string]any) json.RawMessage {
	tmpl := make(map[string]string, len(values))
	for col := range values {
		tmpl[col] = "{{" + col + "}}"
	}
	raw, _ := json.Marshal(tmpl) // a map of strings always encodes
	return raw
}
