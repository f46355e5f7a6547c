// The invoice review bundle on the typed SDK: every call is checked against
// the demo binding's ops (binding.d.ts, written by `appruntime bundle types`).
// It reads the invoices, holds one (a write), approves with a reason (the
// action that resumes the parked task), renews its session, and backs off
// on 429 beyond the SDK's own retries.
import { AppRuntimeError, connect } from "@appruntime/sdk";
import { withBackoff } from "./backoff.js";
import type { Ops, Runtime } from "./binding.js";

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const statusEl = $("status");
const sessionEl = $("session");
const tbody = $<HTMLTableElement>("rows").tBodies[0]!;
const approve = $<HTMLButtonElement>("approve");
const reason = $<HTMLInputElement>("reason");

const say = (err: unknown): void => {
  statusEl.textContent = err instanceof AppRuntimeError ? `${err.message} (${err.status})` : String(err);
};

// Busy beyond the SDK's own retries: withBackoff waits and tells the reviewer.
const backoff = <T>(call: () => Promise<T>): Promise<T> =>
  withBackoff(call, 4, { onWait: (ms) => { statusEl.textContent = `Busy: retrying in ${Math.ceil(ms / 1000)} s`; } });

const app: Runtime = await connect<Ops>({ maxRetries: 2 });
const showSession = (at: Date): void => { sessionEl.textContent = `Session until ${at.toISOString()}`; };
showSession(app.expiresAt);
app.on("session", (m) => { if (m.expires_at) showSession(new Date(m.expires_at)); });

async function load(): Promise<void> {
  const page = await backoff(() => app.read("list_invoices", { columns: ["id", "vendor", "amount", "status"], limit: 50 }));
  tbody.replaceChildren();
  for (const [id, vendor, amount, status] of page.rows) {
    const tr = tbody.insertRow();
    for (const v of [id, vendor, Number(amount).toFixed(2), status]) tr.insertCell().textContent = String(v);
    const hold = document.createElement("button");
    hold.textContent = "Hold";
    hold.disabled = status === "on_hold";
    hold.onclick = async () => {
      hold.disabled = true;
      try {
        await backoff(() => app.write("set_status", { row: { id, status: "on_hold" } }));
        await load();
      } catch (err) { say(err); }
    };
    tr.insertCell().append(hold);
  }
  statusEl.textContent = `${page.row_count} invoice(s)`;
  approve.disabled = false;
}

approve.onclick = async () => {
  approve.disabled = true;
  try {
    // A review can sit open for long: renew the session first so the
    // approval never meets an expired token (the SDK also renews on a 401).
    showSession(await app.renewSession());
    const r = await backoff(() => app.action("approve_invoice",
      { rows: { record_decision: { decision: "approved", note: reason.value } } },
      { awaitId: app.awaitId }));
    statusEl.textContent = r.results.await_resolved ? "Approved: the agent resumes." : "Approved (the task was not waiting).";
    statusEl.dataset.approved = String(r.results.await_resolved === true);
  } catch (err) { say(err); approve.disabled = false; }
};

load().catch(say);
