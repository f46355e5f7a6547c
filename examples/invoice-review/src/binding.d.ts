// Ops of binding (from a file), written by `appruntime bundle types`.
// Regenerate it when the binding changes: docs/bundle-authors.md#types-for-a-bindings-ops
import type { ActionResult, AppRuntime, Capabilities, Filter, HTTPResult, JSONValue, RowsResult, RunResult, WriteResult } from "@appruntime/sdk";

/** The ops of this binding, by verb: connect<Ops>() types every call. */
export type Ops = {
  read: {
    "list_invoices": { payload: { columns?: ("id" | "vendor" | "amount" | "status")[]; filters?: { "status"?: Filter; "vendor"?: Filter }; cursor?: string; limit?: number /* at most 50 */ }; result: RowsResult<"id" | "vendor" | "amount" | "status"> };
  };
  write: {
    "set_status": { payload: { row: { "status"?: JSONValue; "id": JSONValue } }; result: WriteResult };
    "record_decision": { payload: { row: { "decision"?: JSONValue; "note"?: JSONValue } }; result: WriteResult };
  };
  action: {
    "approve_invoice": { payload: { rows?: { "record_decision"?: { "decision"?: JSONValue; "note"?: JSONValue } } }; result: ActionResult };
  };
  run: {};
  capability: Pick<Capabilities, "file_preview" | "list_files" | "split_document" | "get_translation">;
};

/** The SDK's AppRuntime for this binding. */
export type Runtime = AppRuntime<Ops>;
