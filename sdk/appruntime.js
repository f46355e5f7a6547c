// appruntime.js: the bundle SDK of appruntime, one dependency-free ES module.
//
//   import { connect, AppRuntimeError } from "<api>/sdk/appruntime.js";
//   const app = await connect();            // {type:"ready"} → the host's {type:"init"}
//   const page = await app.read("list_invoices", { filters: { vendor: "ACME" } });
//
// Every verb sends the session token and X-Nanonets-App-Runtime: v2, and
// returns the v2 envelope's `result` or throws an AppRuntimeError with the
// envelope's status and message. A 429 or 503 is retried after its
// Retry-After, a bounded number of times. The session is renewed before its
// expires_at through the host: the bundle posts {type:"renew_session"} and
// the host answers {type:"session", session_token, expires_at} with a fresh
// mint (or {type:"session", error}). The bridge messages of the App Tool
// contract have helpers (setSelectionMode, setTranslation,
// requestNextReview, abortReviewTask, openCitation) and listeners
// (on("document_selection"), on("host_state"), on("session")).
//
// The same bundle also runs under any MCP Apps host (SEP-1865, an agent
// platform that rendered the app tool's ui:// resource): connect() speaks
// both handshakes at once, our {type:"ready"} and the MCP Apps
// ui/initialize request, and the host that answers decides. Under an MCP
// Apps host the session comes in the app tool's result, which the host
// forwards as ui/notifications/tool-result: its _meta["appruntime/session"]
// is the init message our host would post. Renewal then calls the
// app-only tool appruntime_renew_session through the host (tools/call);
// the bridge helpers of our host do nothing there (app.hostKind says
// which host the bundle runs under).
//
// This file is the SDK's one source: the API serves it as it is, and the
// npm package @appruntime/sdk (sdk/package.json) publishes it with
// appruntime.d.ts, which tsc generates from the JSDoc types below
// (docs/bundle-authors.md#the-sdk-as-an-npm-package).

/** The runtime API version this SDK speaks (the OpenAPI document's info.version). */
export const VERSION = "1";

/** A value of a column: what a row cell, a filter or a written value holds.
 * @typedef {string | number | boolean | null} Scalar */

/** Any JSON value: what a written column (a json one too) or a placeholder takes.
 * @typedef {Scalar | unknown[] | {[key: string]: unknown}} JSONValue */

/** A comparison filter: {op, value}; is_null takes no value.
 * @typedef {{op: "eq" | "ne" | "lt" | "lte" | "gt" | "gte" | "like" | "ilike" | "in" | "is_null", value?: Scalar | Scalar[]}} FilterComparison */

/** A filter on one column: a scalar is `=`, an array `IN`, null `IS NULL`.
 * @typedef {Scalar | Scalar[] | FilterComparison} Filter */

/** The payload of a `reads` op: Col are its selectable columns, Filt its filterable ones.
 * @template {string} [Col=string]
 * @template {string} [Filt=string]
 * @typedef {{columns?: Col[], filters?: {[F in Filt]?: Filter}, cursor?: string, limit?: number}} ReadPayload */

/** A read's result (kind "rows"): rows are arrays of cells in the order of columns.
 * @template {string} [Col=string]
 * @typedef {{kind: "rows", columns: Col[], rows: Scalar[][], row_count: number, next_cursor: string | null}} RowsResult */

/** An http_call's reply, whatever the upstream's status: body when it answered JSON, text otherwise.
 * @typedef {{status: number, body?: unknown, text?: string}} HTTPResponse */

/** An http_call read's result (kind "http").
 * @typedef {{kind: "http"} & HTTPResponse} HTTPResult */

/** A `writes` op's payload: one row of its key and writable columns.
 * @template {Record<string, JSONValue>} [Row=Record<string, JSONValue>]
 * @typedef {{row: Row}} WritePayload */

/** A write's result (kind "write").
 * @typedef {{rows_affected: number}} WriteResult */

/** An action's payload: a row per write op and the placeholder values of its http_calls.
 * @template {Record<string, Record<string, JSONValue>>} [Rows=Record<string, Record<string, JSONValue>>]
 * @template {Record<string, JSONValue>} [Values=Record<string, JSONValue>]
 * @typedef {{rows?: Rows, values?: Values}} ActionPayload */

/** An action's result (kind "action"): rows affected per write op, status per
 * http op and await_resolved; each http op's reply in responses.
 * @typedef {{results: {await_resolved?: boolean, [op: string]: unknown}, responses: {[op: string]: HTTPResponse}}} ActionResult */

/** A /run result (kind "run"): HTTP 200 also when the tool reported an error.
 * @typedef {{kind: "run", status: "ok" | "error", output: unknown, error: string | null}} RunResult */

/** A file of the task as the file capabilities return it.
 * @typedef {{file_id: string, name: string, content_type: string, pages: number, size: number, created_at: string, url: string, url_expires_at: string}} FileInfo */

/** The capabilities /capability serves, with their payloads and results.
 * @typedef {{
 *   list_files: {payload: Record<string, never>, result: {files: FileInfo[]}},
 *   file_preview: {payload: {file_id: string, page?: number}, result: FileInfo & {page: number, text: string, truncated: boolean, ocr: boolean, words?: (PageBox & {text: string})[]}},
 *   split_document: {payload: {file_id: string, ranges: {from: number, to: number}[]}, result: {files: (FileInfo & {from: number, to: number})[]}},
 *   get_translation: {payload: {file_id: string, page?: number, target_language: string, granularity?: "page" | "paragraph" | "sentence"}, result: {file_id: string, page: number, target_language: string, granularity: string, segments: {text: string, translated: string}[]}},
 *   list_citations: {payload: {file_name?: string}, result: {citations: StoredCitation[]}},
 * }} Capabilities */

/** The shape of one op: what its payload is and what its call resolves with.
 * @typedef {{payload: unknown, result: unknown}} OpShape */

/** The ops of a binding, by verb. `appruntime bundle types --binding ID`
 * writes the one of a binding (docs/bundle-authors.md#types-for-a-bindings-ops).
 * @typedef {{read: {[op: string]: OpShape}, write: {[op: string]: OpShape}, action: {[op: string]: OpShape}, run: {[op: string]: OpShape}, capability: {[op: string]: OpShape}}} OpMap */

/** The ops of a binding the SDK was not told about: any op name, the verbs' general shapes.
 * @typedef {{
 *   read: {[op: string]: {payload: ReadPayload | Record<string, unknown>, result: RowsResult | HTTPResult}},
 *   write: {[op: string]: {payload: WritePayload, result: WriteResult}},
 *   action: {[op: string]: {payload: ActionPayload, result: ActionResult}},
 *   run: {[op: string]: {payload: Record<string, unknown>, result: RunResult}},
 *   capability: Capabilities & {[op: string]: OpShape},
 * }} AnyOps */

/** A call's arguments after its op: the payload (optional only when every key of it is, so a
 * no-payload call of an op with required keys fails to type-check) and the options.
 * @template P
 * @template O
 * @typedef {{} extends P ? [payload?: P, options?: O] : [payload: P, options?: O]} CallArgs */

/** The verbs of the runtime API.
 * @typedef {"read" | "write" | "action" | "run" | "capability"} Verb */

/** The v2 envelope of a success.
 * @template [R=unknown]
 * @typedef {{ok: true, kind: string, result: R}} SuccessEnvelope */

/** The v2 envelope of a failure.
 * @typedef {{ok: false, error: {status: number, message: string}}} ErrorEnvelope */

/** What every verb answers with X-Nanonets-App-Runtime: v2.
 * @template [R=unknown]
 * @typedef {SuccessEnvelope<R> | ErrorEnvelope} Envelope */

/** Options of one call.
 * @typedef {{signal?: AbortSignal}} CallOptions */

/** Options of an action: awaitId sends the top-level await_id (the artifact's own: app.awaitId);
 * reason is the reviewer's reason, sent as payload.reason (required by an action the binding
 * declares reason_required, at most 2000 characters; the agent's task.resumed event carries it).
 * @typedef {CallOptions & {awaitId?: string | null, reason?: string}} ActionOptions */

/** What the mint offers the bundle (init.runtime).
 * @typedef {{api_base?: string, verbs?: Verb[], versions?: string[], capabilities?: string[], host_capabilities?: string[], tools?: string[], reason_required?: string[], params?: unknown}} RuntimeInfo */

/** The host's init message, the answer to ready.
 * @typedef {{type: "init", session_token: string, expires_at: string, api_base?: string, params?: Record<string, unknown> | null, schema?: unknown, theme?: Record<string, unknown> | null, runtime?: RuntimeInfo, await_id?: string | null, host_prompts?: string[]}} InitMessage */

/** Which host mounted the bundle: ours (the App Tool bridge) or an MCP Apps host (SEP-1865).
 * @typedef {"appruntime" | "mcp-apps"} HostKind */

/** A JSON-RPC 2.0 message of the MCP Apps bridge.
 * @typedef {{jsonrpc: "2.0", id?: number | string, method?: string, params?: any, result?: any, error?: {code: number, message: string}}} JSONRPCMessage */

/** The host's answer to renew_session (or a session it pushes): a fresh token, or an error.
 * @typedef {{type: "session", session_token?: string, expires_at?: string, error?: string}} SessionMessage */

/** A box on a page, as fractions of its width and height from its top left.
 * @typedef {{x: number, y: number, w: number, h: number}} PageBox */

/** The reviewer's text selection, reported by the host (document_selection);
 * box is where it lies on the page's image, when selected there.
 * @typedef {{type: "document_selection", text: string, page: number, label?: string, box?: PageBox}} DocumentSelectionMessage */

/** The selection level the host really captures at.
 * @typedef {{type: "host_state", selectionMode: unknown}} HostStateMessage */

/** The host's answer to request_reason: the reason the reviewer typed, or cancelled.
 * @typedef {{type: "reason", id: number, reason?: string, cancelled?: boolean}} ReasonMessage */

/** A citation stored on the task from a tool result; id is what openCitation's citation_ids takes.
 * @typedef {{id: number, file: string, page: number, quote: string, box?: PageBox, created_at: string}} StoredCitation */

/** The host could not open citation_ids (an id the task does not hold).
 * @typedef {{type: "citation_error", citation_ids: number[], message: string}} CitationErrorMessage */

/** A split of a document: its file_id and the parts' page ranges (1-based, inclusive).
 * @typedef {{file_id: string, ranges: {from: number, to: number}[]}} Split */

/** The reviewer confirmed a split shown side by side (boundaries maybe moved), or cancelled it.
 * @typedef {{type: "split_confirmed"} & Split} SplitConfirmedMessage
 * @typedef {{type: "split_cancelled", file_id: string}} SplitCancelledMessage */

/** Every message a host posts to the bundle.
 * @typedef {InitMessage | SessionMessage | DocumentSelectionMessage | HostStateMessage | ReasonMessage | CitationErrorMessage | SplitConfirmedMessage | SplitCancelledMessage} HostMessage */

/** Where a citation points: citation_ids or source_page, a label (≤ 200 characters) and a file_name.
 * @typedef {{citation_ids?: number[], source_page?: number, label?: string, file_name?: string}} Citation */

/** Every message the bundle posts to its host.
 * @typedef {{type: "ready"} | {type: "renew_session"} | {type: "set_selection_mode", enabled: boolean} | {type: "set_translation", show: boolean} | {type: "request_next_review"} | {type: "abort_review_task"} | {type: "request_reason", id: number, op: string} | {type: "runtime_error", verb: Verb, op: string, status: number, message: string} | ({type: "open_citation"} & Citation) | ({type: "open_split"} & Split)} BundleMessage */

/** The events app.on listens to, with what the handler receives.
 * @typedef {{document_selection: DocumentSelectionMessage, host_state: HostStateMessage, session: {expires_at: string | undefined}, citation_error: CitationErrorMessage, split_confirmed: SplitConfirmedMessage, split_cancelled: SplitCancelledMessage}} HostEvents */

/** Options of connect.
 * @typedef {{maxRetries?: number, maxRetryDelay?: number, renewTimeout?: number, initTimeout?: number, host?: Window}} ConnectOptions */

/** @typedef {{maxRetries: number, maxRetryDelay: number, renewTimeout: number, initTimeout: number, host?: Window}} Settings */

/** Where an AppRuntimeError came from.
 * @typedef {{verb?: Verb, op?: string, retryAfter?: number}} ErrorDetails */

/** The error every failed call throws: status is the HTTP status (0 when no
 * reply came), message the runtime's own message. */
export class AppRuntimeError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   * @param {ErrorDetails} [details]
   */
  constructor(status, message, details) {
    super(message);
    this.name = "AppRuntimeError";
    /** The HTTP status; 0 when no reply came. */
    this.status = status;
    const d = details || {};
    /** The verb of the failed call. @type {Verb | undefined} */
    this.verb = d.verb;
    /** The op of the failed call. @type {string | undefined} */
    this.op = d.op;
    /** Seconds the runtime asked to wait (Retry-After), when it said. @type {number | undefined} */
    this.retryAfter = d.retryAfter; // seconds, when the runtime said
  }
}

/** @type {Settings} */
const DEFAULTS = {
  maxRetries: 3, // retries of one call answered 429 or 503
  maxRetryDelay: 30000, // ms; a longer Retry-After is not waited for
  renewTimeout: 10000, // ms the host has to answer renew_session
  initTimeout: 30000, // ms the host has to answer ready
};

const RETRYABLE = new Set([429, 503]);
const MAX_CITATION_LABEL = 200; // code points (App Tool: open_citation)
const MAX_SPLIT_RANGES = 50; // split_document's
const MAX_RENEW_MARGIN = 60000; // renew a minute before expiry, or at 3/4 of a shorter lifetime

/** The MCP Apps protocol version the SDK asks for in ui/initialize. */
export const MCP_APPS_PROTOCOL_VERSION = "2026-01-26";

/** The app tool result's _meta key holding the session (the init message), and the
 * app-only tool that renews it, under an MCP Apps host. */
export const MCP_SESSION_META_KEY = "appruntime/session";
export const MCP_RENEW_TOOL = "appruntime_renew_session";

/** Posts {type:"ready"} to the host page and, at once, the MCP Apps
 * ui/initialize request, and resolves with an AppRuntime once the host
 * answers: our host with its init message; an MCP Apps host with its
 * initialize result, then the app tool's result carrying the session
 * (_meta["appruntime/session"]). Options: maxRetries,
 * maxRetryDelay (ms), renewTimeout (ms), initTimeout (ms), host (the window
 * to talk to; the parent frame by default). Ops types the calls: pass the
 * binding's (connect<Ops>() in TypeScript).
 * @template {OpMap} [Ops=AnyOps]
 * @param {ConnectOptions} [options]
 * @returns {Promise<AppRuntime<Ops>>}
 */
export function connect(options) {
  /** @type {Settings} */
  const opts = Object.assign({}, DEFAULTS, options || {});
  const host = opts.host || window.parent;
  if (!host || host === window) {
    return Promise.reject(new AppRuntimeError(0, "not mounted by a host page: open the bundle through its artifact"));
  }
  return new Promise((resolve, reject) => {
    const bridge = new MCPBridge(host);
    /** @type {string | undefined} */
    let stepId; // an MCP Apps result that came without a session names its step
    const timer = setTimeout(() => {
      done();
      reject(new AppRuntimeError(0, "the host did not answer ready with init"));
    }, opts.initTimeout);
    function done() {
      clearTimeout(timer);
      window.removeEventListener("message", onMessage);
    }
    /** @param {unknown} meta */
    function fromResult(meta) {
      const m = /** @type {any} */ (meta);
      if (m && typeof m.session_token === "string" && m.session_token !== "") {
        done();
        resolve(new AppRuntime(/** @type {InitMessage} */ (Object.assign({}, m, { type: "init" })), host, opts, bridge));
        return;
      }
      if (m && typeof m.step_id === "string" && !stepId) {
        // The step was added but its session could not be minted yet (its
        // producer still runs): ask the server again through the host.
        stepId = m.step_id;
        bridge.renew(m.step_id, null, opts.renewTimeout).then(fromResult, (err) => { done(); reject(err); });
        return;
      }
      done();
      reject(new AppRuntimeError(401, "the app tool's result carries no session" + (m && m.error ? ": " + m.error : "")));
    }
    /** @param {MessageEvent} event */
    function onMessage(event) {
      const m = event.data;
      if (event.source !== host || !m) return;
      if (m.type === "init") {
        done();
        resolve(new AppRuntime(m, host, opts));
        return;
      }
      if (m.jsonrpc !== "2.0") return;
      bridge.receive(m);
      if (m.method === "ui/notifications/tool-result") {
        const meta = m.params && m.params._meta;
        fromResult(meta && meta[MCP_SESSION_META_KEY]);
      }
    }
    window.addEventListener("message", onMessage);
    host.postMessage({ type: "ready" }, "*");
    bridge.request("ui/initialize", {
      protocolVersion: MCP_APPS_PROTOCOL_VERSION,
      appInfo: { name: "appruntime-bundle", version: VERSION },
      appCapabilities: {},
    }).then(() => {
      bridge.notify("ui/notifications/initialized", {});
      bridge.reportSize();
    }, () => {}); // our host never answers it; the init message settles the promise
  });
}

/** The app side of the MCP Apps bridge (SEP-1865) over postMessage:
 * JSON-RPC requests with their pending answers, notifications, and
 * answers to the host's own requests. */
class MCPBridge {
  /** @type {Window} */
  #host;
  #nextId = 1;
  /** @type {Map<number | string, {resolve: (result: any) => void, reject: (err: Error) => void}>} */
  #pending = new Map();
  /** @type {ResizeObserver | null} */
  #observer = null;

  /** @param {Window} host */
  constructor(host) {
    this.#host = host;
  }

  /**
   * @param {string} method
   * @param {unknown} params
   * @returns {Promise<any>}
   */
  request(method, params) {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#host.postMessage({ jsonrpc: "2.0", id: id, method: method, params: params }, "*");
    });
  }

  /**
   * @param {string} method
   * @param {unknown} params
   */
  notify(method, params) {
    this.#host.postMessage({ jsonrpc: "2.0", method: method, params: params }, "*");
  }

  /** Settles an answer to one of our requests, and answers the host's
   * requests (ping, ui/resource-teardown) with an empty result.
   * @param {JSONRPCMessage} m */
  receive(m) {
    if (m.id !== undefined && m.method === undefined) {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error) p.reject(new AppRuntimeError(0, "MCP Apps host: " + m.error.message));
      else p.resolve(m.result);
      return;
    }
    if (m.id !== undefined && m.method !== undefined) {
      const known = m.method === "ping" || m.method === "ui/resource-teardown";
      this.#host.postMessage(known ? { jsonrpc: "2.0", id: m.id, result: {} }
        : { jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found: " + m.method } }, "*");
    }
  }

  /** Asks the server, through the host, for a fresh session on stepId
   * (the app-only tool MCP_RENEW_TOOL); resolves with its _meta session.
   * @param {string} stepId
   * @param {string | null} replaces the session it renews (revoked with the mint)
   * @param {number} timeout
   * @returns {Promise<unknown>} */
  renew(stepId, replaces, timeout) {
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    const timedOut = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new AppRuntimeError(401, "the MCP Apps host did not renew the session")), timeout);
    });
    const call = this.request("tools/call", { name: MCP_RENEW_TOOL, arguments: replaces ? { step_id: stepId, replaces } : { step_id: stepId } }).then((result) => {
      const meta = result && result._meta && result._meta[MCP_SESSION_META_KEY];
      if (!result || result.isError || !meta || !meta.session_token) {
        const text = result && Array.isArray(result.content) && result.content[0] && result.content[0].text;
        throw new AppRuntimeError(401, "the server could not renew the session" + (text ? ": " + text : ""));
      }
      return meta;
    });
    return Promise.race([call, timedOut]).finally(() => clearTimeout(timer));
  }

  /** Tells the host the document's size now and whenever it changes
   * (ui/notifications/size-changed), so it can size the frame. */
  reportSize() {
    const send = () => {
      const el = document.documentElement;
      this.notify("ui/notifications/size-changed", { width: Math.ceil(el.scrollWidth), height: Math.ceil(el.scrollHeight) });
    };
    send();
    if (typeof ResizeObserver === "function" && !this.#observer) {
      this.#observer = new ResizeObserver(send);
      this.#observer.observe(document.documentElement);
    }
  }

  close() {
    if (this.#observer) this.#observer.disconnect();
  }
}

/** One mounted artifact: its init values, its session and the bridge.
 * @template {OpMap} [Ops=AnyOps]
 */
export class AppRuntime {
  /** @type {Window} */
  #host;
  /** @type {Settings} */
  #opts;
  /** @type {string} */
  #token = "";
  #expiresAt = 0; // ms since the epoch
  /** @type {ReturnType<typeof setTimeout> | number} */
  #renewTimer = 0;
  /** @type {Promise<Date> | null} */
  #renewing = null; // the pending renewal's promise
  /** @type {((m: SessionMessage) => void) | null} */
  #waitingForSession = null; // settles the pending renewal with the host's answer
  #hostRenews = true; // false once the host left a renewal unanswered (an older host)
  /** @type {Map<string, Set<(message: any) => void>>} */
  #listeners = new Map(); // type → Set of handlers
  /** @type {(event: MessageEvent) => void} */
  #onMessage;
  /** @type {Map<number, (m: ReasonMessage) => void>} */
  #askingForReason = new Map(); // request_reason id → what settles it
  #reasonID = 0;
  /** @type {MCPBridge | null} */
  #bridge; // set under an MCP Apps host
  /** @type {string | null} */
  #sessionId; // under an MCP Apps host: the session a renewal replaces

  /**
   * @param {InitMessage} init
   * @param {Window} host
   * @param {Settings} opts
   * @param {MCPBridge} [bridge] the MCP Apps bridge, when an MCP Apps host mounted the bundle
   */
  constructor(init, host, opts, bridge) {
    this.#host = host;
    this.#opts = opts;
    this.#bridge = bridge || null;
    /** Which host mounted the bundle. @type {HostKind} */
    this.hostKind = bridge ? "mcp-apps" : "appruntime";
    /** The init message as the host sent it. */
    this.init = init;
    /** The step's params. @type {Record<string, unknown>} */
    this.params = init.params || {};
    /** The tool's action_schema, or null. @type {unknown} */
    this.schema = init.schema || null;
    /** @type {Record<string, unknown>} */
    this.theme = init.theme || {};
    /** @type {RuntimeInfo} */
    this.runtime = init.runtime || {};
    if (bridge) {
      // An MCP Apps host performs none of our bridge capabilities.
      this.runtime = Object.assign({}, this.runtime, { host_capabilities: [] });
    }
    /** The artifact's step (under an MCP Apps host: the step its tool call added). @type {string | null} */
    this.stepId = /** @type {any} */ (init).step_id || null;
    this.#sessionId = /** @type {any} */ (init).session_id || null;
    /** The step's await, for action(op, payload, {awaitId}); null when the step parks nothing. @type {string | null} */
    this.awaitId = init.await_id || null;
    /** The runtime verbs' base URL. */
    this.apiBase = String(init.api_base || this.runtime.api_base || "").replace(/\/+$/, "");
    this.#onMessage = (event) => this.#receive(event);
    window.addEventListener("message", this.#onMessage);
    this.#setSession(init.session_token, init.expires_at);
  }

  /** When the current session token expires. */
  get expiresAt() {
    return new Date(this.#expiresAt);
  }

  /** POST /read: a reads op's rows, or an http_call's reply.
   * @template {keyof Ops["read"] & string} K
   * @param {K} op
   * @param {CallArgs<Ops["read"][K]["payload"], CallOptions>} args the payload, then the options
   * @returns {Promise<Ops["read"][K]["result"]>}
   */
  read(op, ...args) { return this.#call("read", op, args[0], args[1]); }
  /** POST /write: one row into a writes op's table.
   * @template {keyof Ops["write"] & string} K
   * @param {K} op
   * @param {CallArgs<Ops["write"][K]["payload"], CallOptions>} args the payload, then the options
   * @returns {Promise<Ops["write"][K]["result"]>}
   */
  write(op, ...args) { return this.#call("write", op, args[0], args[1]); }
  /** options.awaitId sends the top-level await_id (this artifact's own: app.awaitId);
   * options.reason the reviewer's reason (payload.reason). Without one, an op the binding
   * declares reason_required (runtime.reason_required) asks a host that offers the reason
   * prompt (init.host_prompts has "reason", as the console's review page does) for the
   * reviewer's (request_reason); a cancelled prompt rejects with a 400 AppRuntimeError.
   * @template {keyof Ops["action"] & string} K
   * @param {K} op
   * @param {CallArgs<Ops["action"][K]["payload"], ActionOptions>} args the payload, then the options
   * @returns {Promise<Ops["action"][K]["result"]>}
   */
  action(op, ...args) { return this.#call("action", op, args[0], args[1]); }
  /** POST /run: a tools op on the worker fleet.
   * @template {keyof Ops["run"] & string} K
   * @param {K} op
   * @param {CallArgs<Ops["run"][K]["payload"], CallOptions>} args the payload, then the options
   * @returns {Promise<Ops["run"][K]["result"]>}
   */
  run(op, ...args) { return this.#call("run", op, args[0], args[1]); }
  /** POST /capability: a granted capability the host does not perform.
   * @template {keyof Ops["capability"] & string} K
   * @param {K} op
   * @param {CallArgs<Ops["capability"][K]["payload"], CallOptions>} args the payload, then the options
   * @returns {Promise<Ops["capability"][K]["result"]>}
   */
  capability(op, ...args) { return this.#call("capability", op, args[0], args[1]); }

  /** Whether the binding grants capability name (runtime.capabilities).
   * @param {string} name
   * @returns {boolean} */
  hasCapability(name) {
    return Array.isArray(this.runtime.capabilities) && this.runtime.capabilities.includes(name);
  }

  /** Whether name is performed by the host over the bridge rather than
   * /capability (runtime.host_capabilities; absent on older backends).
   * @param {string} name
   * @returns {boolean} */
  isHostCapability(name) {
    return Array.isArray(this.runtime.host_capabilities) && this.runtime.host_capabilities.includes(name);
  }

  /** Asks the host to capture (or stop capturing) the reviewer's text
   * selection; needs document_selection. The host reports the level it
   * really captures at with host_state.
   * @param {boolean} enabled */
  setSelectionMode(enabled) {
    this.#require("document_selection");
    this.#post({ type: "set_selection_mode", enabled: Boolean(enabled) });
  }

  /** Shows or hides the host's page translation; needs get_translation.
   * @param {boolean} show */
  setTranslation(show) {
    this.#require("get_translation");
    this.#post({ type: "set_translation", show: Boolean(show) });
  }

  /** Asks the host to open the next document awaiting review; needs next_review_task. */
  requestNextReview() {
    this.#require("next_review_task");
    this.#post({ type: "request_next_review" });
  }

  /** Asks the host to put the document back in the queue; needs abort_review_task. */
  abortReviewTask() {
    this.#require("abort_review_task");
    this.#post({ type: "abort_review_task" });
  }

  /** Opens the document at a citation: citation_ids (numbers) or
   * source_page (a page number), an optional label (≤ 200 characters)
   * naming the item of a repeated field, an optional file_name.
   * @param {Citation} citation */
  openCitation(citation) {
    const c = citation || {};
    /** @type {{type: "open_citation"} & Citation} */
    const m = { type: "open_citation" };
    if (c.citation_ids !== undefined) {
      if (!Array.isArray(c.citation_ids) || c.citation_ids.length === 0 ||
          !c.citation_ids.every((id) => typeof id === "number" && Number.isFinite(id))) {
        throw new AppRuntimeError(400, "open_citation: citation_ids is a non-empty array of numbers");
      }
      m.citation_ids = c.citation_ids.slice();
    }
    if (c.source_page !== undefined) {
      if (!Number.isInteger(c.source_page) || c.source_page < 1) {
        throw new AppRuntimeError(400, "open_citation: source_page is a page number from 1");
      }
      m.source_page = c.source_page;
    }
    if (m.citation_ids === undefined && m.source_page === undefined) {
      throw new AppRuntimeError(400, "open_citation: supply citation_ids or source_page");
    }
    if (c.label !== undefined) {
      if (typeof c.label !== "string" || Array.from(c.label).length > MAX_CITATION_LABEL) {
        throw new AppRuntimeError(400, "open_citation: label is a string of at most " + MAX_CITATION_LABEL + " characters");
      }
      m.label = c.label;
    }
    if (c.file_name !== undefined) {
      if (typeof c.file_name !== "string" || c.file_name === "") {
        throw new AppRuntimeError(400, "open_citation: file_name is a non-empty string");
      }
      m.file_name = c.file_name;
    }
    this.#post(m);
  }

  /** Shows a split of a document side by side with its pages in the
   * reviewer's viewer (split_document's parts: {file_id, ranges}); the
   * reviewer may move a boundary between parts, then confirms or cancels.
   * Resolves with the confirmed split (the ranges as confirmed), or null
   * when the reviewer cancelled; needs split_document.
   * @param {Split} split
   * @returns {Promise<Split | null>} */
  openSplit(split) {
    this.#require("split_document");
    const s = split || /** @type {Split} */ ({});
    if (typeof s.file_id !== "string" || s.file_id === "") {
      throw new AppRuntimeError(400, "open_split: file_id is the split document's file_id");
    }
    if (!Array.isArray(s.ranges) || s.ranges.length === 0 || s.ranges.length > MAX_SPLIT_RANGES ||
        !s.ranges.every((r) => r && Number.isInteger(r.from) && Number.isInteger(r.to) && r.from >= 1 && r.from <= r.to)) {
      throw new AppRuntimeError(400, "open_split: ranges is 1 to " + MAX_SPLIT_RANGES + " {from, to} page ranges from 1, from <= to");
    }
    const fileID = s.file_id;
    return new Promise((resolve) => {
      /** @type {Array<() => boolean>} */
      const offs = [];
      const done = (/** @type {Split | null} */ value) => { offs.forEach((off) => off()); resolve(value); };
      offs.push(this.on("split_confirmed", (m) => { if (m.file_id === fileID) done({ file_id: m.file_id, ranges: m.ranges }); }));
      offs.push(this.on("split_cancelled", (m) => { if (m.file_id === fileID) done(null); }));
      this.#post({ type: "open_split", file_id: fileID, ranges: s.ranges.map((r) => ({ from: r.from, to: r.to })) });
    });
  }

  /** Calls handler(message) for each host message of type:
   * "document_selection" ({text, page, label?}), "host_state"
   * ({selectionMode}), "session" (after a renewal: {expires_at}),
   * "citation_error" ({citation_ids, message}: openCitation named an id the
   * task does not hold), "split_confirmed" / "split_cancelled". Returns a
   * function that removes the handler.
   * @template {keyof HostEvents} T
   * @param {T} type
   * @param {(message: HostEvents[T]) => void} handler
   * @returns {() => boolean} */
  on(type, handler) {
    if (!this.#listeners.has(type)) this.#listeners.set(type, new Set());
    /** @type {Set<(message: any) => void>} */ (this.#listeners.get(type)).add(handler);
    return () => /** @type {Set<(message: any) => void>} */ (this.#listeners.get(type)).delete(handler);
  }

  /** Asks the host for a fresh session now; resolves once it has one. Calls
   * made meanwhile wait for it. Done automatically before expires_at.
   * @returns {Promise<Date>} */
  renewSession() {
    if (this.#renewing) return this.#renewing;
    const bridge = this.#bridge;
    if (bridge) {
      if (!this.stepId) return Promise.reject(new AppRuntimeError(401, "the session names no step to renew"));
      this.#renewing = bridge.renew(this.stepId, this.#sessionId, this.#opts.renewTimeout).then((meta) => {
        const m = /** @type {SessionMessage} */ (meta);
        this.#sessionId = /** @type {any} */ (meta).session_id || null;
        this.#setSession(/** @type {string} */ (m.session_token), m.expires_at);
        this.#emit("session", { expires_at: m.expires_at });
        return this.expiresAt;
      }).finally(() => { this.#renewing = null; });
      return this.#renewing;
    }
    this.#renewing = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waitingForSession = null;
        this.#hostRenews = false;
        reject(new AppRuntimeError(401, "the host did not renew the session"));
      }, this.#opts.renewTimeout);
      this.#waitingForSession = (m) => {
        clearTimeout(timer);
        this.#hostRenews = true;
        this.#waitingForSession = null;
        if (m.error || typeof m.session_token !== "string" || m.session_token === "") {
          reject(new AppRuntimeError(401, "the host could not renew the session" + (m.error ? ": " + m.error : "")));
          return;
        }
        this.#setSession(m.session_token, m.expires_at);
        resolve(this.expiresAt);
      };
      this.#post({ type: "renew_session" });
    }).finally(() => { this.#renewing = null; });
    return this.#renewing;
  }

  /** Stops listening to the host and renewing the session. */
  close() {
    clearTimeout(this.#renewTimer);
    if (this.#bridge) this.#bridge.close();
    window.removeEventListener("message", this.#onMessage);
    this.#listeners.clear();
  }

  /**
   * @param {string} token
   * @param {string | undefined} expiresAt
   */
  #setSession(token, expiresAt) {
    this.#token = token;
    const at = Date.parse(/** @type {string} */ (expiresAt));
    this.#expiresAt = Number.isNaN(at) ? 0 : at;
    clearTimeout(this.#renewTimer);
    if (!this.#expiresAt) return;
    const lifetime = this.#expiresAt - Date.now();
    const margin = Math.min(MAX_RENEW_MARGIN, Math.max(0, lifetime) / 4);
    this.#renewTimer = setTimeout(() => {
      // A failed renewal is not fatal yet: the token works until it expires,
      // and a call answered 401 asks again.
      this.renewSession().catch(() => {});
    }, Math.max(0, lifetime - margin));
  }

  /** @param {MessageEvent} event */
  #receive(event) {
    /** @type {HostMessage} */
    const m = event.data;
    if (event.source !== this.#host || !m) return;
    if (this.#bridge && /** @type {any} */ (m).jsonrpc === "2.0") {
      this.#bridge.receive(/** @type {any} */ (m));
      return;
    }
    if (typeof m.type !== "string") return;
    if (m.type === "reason") {
      const settle = this.#askingForReason.get(m.id);
      if (settle) settle(m);
      return;
    }
    if (m.type === "session") {
      if (this.#waitingForSession) this.#waitingForSession(m);
      else if (!m.error && m.session_token) this.#setSession(m.session_token, m.expires_at); // a host may push one
      if (!m.error) this.#emit("session", { expires_at: m.expires_at });
      return;
    }
    this.#emit(m.type, m);
  }

  /**
   * @param {string} type
   * @param {unknown} message
   */
  #emit(type, message) {
    for (const handler of this.#listeners.get(type) || []) {
      try { handler(message); } catch (err) { setTimeout(() => { throw err; }); }
    }
  }

  /** @param {BundleMessage} message */
  #post(message) {
    if (this.#bridge) return; // an MCP Apps host has none of our bridge messages
    this.#host.postMessage(message, "*");
  }

  /** @param {string} capability */
  #require(capability) {
    if (Array.isArray(this.runtime.capabilities) && !this.hasCapability(capability)) {
      throw new AppRuntimeError(403, "the binding does not grant " + capability);
    }
  }

  /** Whether an action of op sent without a reason asks the host for one:
   * the binding requires one (runtime.reason_required) and the host offers
   * the reason prompt (init.host_prompts).
   * @param {string} op */
  #asksForReason(op) {
    const required = this.runtime.reason_required;
    const prompts = this.init.host_prompts;
    return Array.isArray(required) && required.includes(op) && Array.isArray(prompts) && prompts.includes("reason");
  }

  /** Asks the host for the reviewer's reason for op (request_reason) and
   * resolves with it; a cancelled prompt (or signal) rejects. No timeout:
   * the reviewer takes the time they need.
   * @param {string} op
   * @param {AbortSignal | undefined} signal
   * @returns {Promise<string>} */
  #askReason(op, signal) {
    const id = ++this.#reasonID;
    return new Promise((resolve, reject) => {
      const done = () => {
        this.#askingForReason.delete(id);
        if (signal) signal.removeEventListener("abort", onAbort);
      };
      const onAbort = () => { done(); reject(signal && signal.reason); };
      if (signal && signal.aborted) { reject(signal.reason); return; }
      if (signal) signal.addEventListener("abort", onAbort, { once: true });
      this.#askingForReason.set(id, (m) => {
        done();
        if (typeof m.reason === "string" && m.reason.trim() !== "") resolve(m.reason);
        else reject(new AppRuntimeError(400, "the reviewer gave no reason for " + op, { verb: "action", op }));
      });
      this.#post({ type: "request_reason", id, op });
    });
  }

  /**
   * @param {Verb} verb
   * @param {string} op
   * @param {unknown} payload
   * @param {ActionOptions} [options]
   * @returns {Promise<any>}
   */
  async #call(verb, op, payload, options) {
    /** @type {ActionOptions} */
    let o = options || {};
    if (verb === "action" && o.reason === undefined && this.#asksForReason(op)) {
      o = Object.assign({}, o, { reason: await this.#askReason(op, o.signal) });
    }
    /** @type {{op: string, payload: unknown, await_id?: string}} */
    const body = { op: op, payload: payload === undefined ? {} : payload };
    if (verb === "action" && o.awaitId) body.await_id = o.awaitId;
    if (verb === "action" && o.reason !== undefined) body.payload = Object.assign({}, body.payload, { reason: o.reason });
    const text = JSON.stringify(body);
    let renewed = false;
    for (let attempt = 0; ; attempt++) {
      if (this.#renewing) await this.#renewing.catch(() => {});
      const res = await this.#send(verb, op, text, o.signal);
      const reply = await readEnvelope(res);
      if (reply && reply.ok === true) return reply.result;
      const status = (reply && reply.error && reply.error.status) || res.status;
      const message = (reply && reply.error && reply.error.message) || res.statusText || "HTTP " + res.status;
      const retryAfter = parseRetryAfter(res.headers.get("Retry-After"));
      if (status === 401 && !renewed && this.#hostRenews) {
        // An expired token (a sleeping laptop missed the timer): renew once.
        renewed = true;
        try { await this.renewSession(); } catch (err) { throw new AppRuntimeError(401, message, { verb, op }); }
        attempt--;
        continue;
      }
      if (RETRYABLE.has(status) && attempt < this.#opts.maxRetries) {
        const delay = retryAfter !== undefined ? retryAfter * 1000 : backoff(attempt);
        if (delay <= this.#opts.maxRetryDelay) {
          await sleep(delay, o.signal);
          continue;
        }
      }
      // The host may show it (appruntime bundle dev does, beside the frame).
      this.#post({ type: "runtime_error", verb, op, status, message });
      throw new AppRuntimeError(status, message, { verb, op, retryAfter });
    }
  }

  /**
   * @param {Verb} verb
   * @param {string} op
   * @param {string} text
   * @param {AbortSignal | undefined} signal
   * @returns {Promise<Response>}
   */
  async #send(verb, op, text, signal) {
    try {
      return await fetch(this.apiBase + "/" + verb, {
        method: "POST",
        credentials: "omit",
        headers: {
          "Authorization": "Bearer " + this.#token,
          "Content-Type": "application/json",
          "X-Nanonets-App-Runtime": "v2",
        },
        body: text,
        signal: signal,
      });
    } catch (/** @type {any} */ err) {
      if (err && err.name === "AbortError") throw err;
      throw new AppRuntimeError(0, "the runtime could not be reached: " + (err && err.message), { verb, op });
    }
  }
}

/** The reply's v2 envelope, or null when the body is not one.
 * @param {Response} res
 * @returns {Promise<Envelope | null>} */
async function readEnvelope(res) {
  try {
    const body = await res.json();
    return body && typeof body === "object" && typeof body.ok === "boolean" ? body : null;
  } catch (err) {
    return null;
  }
}

/** Retry-After in seconds (delta-seconds or an HTTP date), or undefined.
 * @param {string | null} value
 * @returns {number | undefined} */
function parseRetryAfter(value) {
  if (value === null || value === "") return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Exponential backoff with jitter when the runtime named no delay: 0.5 s, 1 s, 2 s…
 * @param {number} attempt
 * @returns {number} */
function backoff(attempt) {
  const base = 500 * 2 ** attempt;
  return base + Math.random() * base / 2;
}

/**
 * @param {number} ms
 * @param {AbortSignal | undefined} signal
 * @returns {Promise<void>}
 */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) { reject(signal.reason); return; }
    const timer = setTimeout(resolve, ms);
    if (signal) signal.addEventListener("abort", () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
}
