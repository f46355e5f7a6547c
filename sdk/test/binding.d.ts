// Ops of binding "every verb" (bnd_fixture, version 3), written by `appruntime bundle types`.
// Regenerate it when the binding changes: docs/bundle-authors.md#types-for-a-bindings-ops
import type { ActionResult, AppRuntime, Capabilities, Filter, HTTPResult, JSONValue, RowsResult, RunResult, WriteResult } from "@appruntime/sdk";

/** The ops of this binding, by verb: connect<Ops>() types every call. */
export type Ops = {
  read: {
    "list_invoices": { payload: { columns?: ("id" | "vendor" | "amount" | "status")[]; filters?: { "status"?: Filter; "vendor"?: Filter }; cursor?: string; limit?: number /* at most 50 */ }; result: RowsResult<"id" | "vendor" | "amount" | "status"> };
    "lookup_vendor": { payload: { "vendor_id": JSONValue }; result: HTTPResult };
    "notify_erp": { payload: { "invoice_id": JSONValue; "reason": JSONValue }; result: HTTPResult };
  };
  write: {
    "set_status": { payload: { row: { "status"?: JSONValue; "id": JSONValue } }; result: WriteResult };
    "record_decision": { payload: { row: { "decision"?: JSONValue; "note"?: JSONValue } }; result: WriteResult };
  };
  action: {
    "approve_invoice": { payload: { rows?: { "record_decision"?: { "decision"?: JSONValue; "note"?: JSONValue }; "set_status"?: { "status"?: JSONValue; "id": JSONValue } }; values: { "invoice_id": JSONValue; "reason": JSONValue } }; result: ActionResult };
  };
  run: {
    "vendor_lookup": { payload: { "vendor_name"?: JSONValue }; result: RunResult };
  };
  capability: Pick<Capabilities, "file_preview" | "list_files" | "split_document" | "get_translation">;
};

/** The SDK's AppRuntime for this binding. */
export type Runtime = AppRuntime<Ops>;
