// A bundle on the typed SDK, against the types `appruntime bundle types`
// wrote for binding.json (binding.d.ts): it must type-check, and the call
// under each ts-expect-error directive must be refused (tsc fails on one
// that is not).
// scripts/sdk-check compiles it; bad/ holds calls that must not compile.
import { AppRuntimeError, connect, VERSION, type BundleMessage, type Envelope, type HostMessage } from "@appruntime/sdk";
import type { Ops, Runtime } from "./binding.js";

const version: "1" = VERSION;

export async function review(): Promise<string> {
  const app: Runtime = await connect<Ops>({ maxRetries: 2 });

  const page = await app.read("list_invoices", { columns: ["id", "vendor"], filters: { vendor: "ACME Corp", status: { op: "ne", value: "paid" } }, limit: 10 });
  const columns: ("id" | "vendor" | "amount" | "status")[] = page.columns;
  const cursor: string | null = page.next_cursor;
  const vendor = await app.read("lookup_vendor", { vendor_id: "v-1" });
  const upstream: number = vendor.status;

  const written = await app.write("set_status", { row: { id: 1, status: "held" } });
  const n: number = written.rows_affected;
  await app.write("record_decision", { row: { decision: "approved" } });

  const approved = await app.action("approve_invoice", {
    rows: { record_decision: { decision: "approved", note: "matches the PO" }, set_status: { id: 1, status: "approved" } },
    values: { invoice_id: "1", reason: "matches the PO" },
  }, { awaitId: app.awaitId, reason: "matches the PO" });
  const resolved: boolean | undefined = approved.results.await_resolved;

  const run = await app.run("vendor_lookup", { vendor_name: "ACME" });
  const ran: "ok" | "error" = run.status;
  const files = await app.capability("list_files");
  const first: string | undefined = files.files[0]?.file_id;
  const preview = await app.capability("file_preview", { file_id: "f1", page: 2 });
  const text: string = preview.text;

  app.on("document_selection", (m) => { const p: number = m.page; void p; });
  app.on("session", (m) => { void m.expires_at; });
  app.openCitation({ citation_ids: [3], label: "Line 2" });
  app.on("citation_error", (m) => { const unknown: number[] = m.citation_ids; void unknown; });
  const split = await app.openSplit({ file_id: "f1", ranges: [{ from: 1, to: 2 }, { from: 3, to: 4 }] });
  const confirmed: number = split ? split.ranges.length : 0;
  const renewed: Date = await app.renewSession();

  // @ts-expect-error an op the binding does not declare
  await app.read("list_invoicez", {});
  // @ts-expect-error a column that is not filterable
  await app.read("list_invoices", { filters: { amount: 10 } });
  // @ts-expect-error a misspelled filter key
  await app.read("list_invoices", { filters: { vendr: "x" } });
  // @ts-expect-error a column the read does not select
  await app.read("list_invoices", { columns: ["secret"] });
  // @ts-expect-error an update without its key column
  await app.write("set_status", { row: { status: "held" } });
  // @ts-expect-error a column the write's fixed values set
  await app.write("record_decision", { row: { decision: "approved", task_id: "t" } });
  // @ts-expect-error a write op under /action
  await app.action("set_status", {});
  // @ts-expect-error an http_call's placeholder left out
  await app.action("approve_invoice", { values: { invoice_id: "1" } });
  // @ts-expect-error no payload for an action whose http_calls need values
  await app.action("approve_invoice");
  // @ts-expect-error no payload for an http_call read with a placeholder to fill
  await app.read("lookup_vendor");
  // @ts-expect-error no payload, even with options, for a write
  await app.write("record_decision", undefined, {});
  // @ts-expect-error no payload for a write without the runtime's general shapes either
  await (await connect()).write("any_write");
  // @ts-expect-error a param the tools op does not list
  await app.run("vendor_lookup", { vendor: "ACME" });
  // @ts-expect-error a host capability is not a /capability call
  await app.capability("document_selection", {});
  // @ts-expect-error not an event the host sends
  app.on("init", () => {});

  try {
    await app.read("list_invoices");
  } catch (err) {
    if (err instanceof AppRuntimeError && err.status === 429) return `retry in ${err.retryAfter ?? 1} s`;
    throw err;
  }
  return [version, columns, cursor, upstream, n, resolved, ran, first, text, renewed, confirmed].join(" ");
}

// Without a binding's types, any op name goes and the verbs' general shapes apply.
export async function untyped(): Promise<number> {
  const app = await connect();
  const r = await app.read("anything", { filters: { x: 1 } });
  const w = await app.write("any_write", { row: { a: 1 } });
  return (r.kind === "rows" ? r.row_count : r.status) + w.rows_affected;
}

// The bridge and envelope types describe the wire.
export function wire(m: HostMessage): BundleMessage | null {
  const e: Envelope<{ rows_affected: number }> = { ok: false, error: { status: 409, message: "settled" } };
  if (!e.ok && m.type === "init") return { type: "ready" };
  // @ts-expect-error not a bundle message
  const bad: BundleMessage = { type: "approve" };
  void bad;
  return m.type === "session" ? { type: "renew_session" } : null;
}
