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
 * @typedef {{api_base?: string, verbs?: Verb[], versions?: string[], capabilities?: string[], host_capabilities?: string[], tools?: string[], params?: unknown}} RuntimeInfo */

/** The host's init message, the answer to ready.
 * @typedef {{type: "init", session_token: string, expires_at: string, api_base?: string, params?: Record<string, unknown> | null, schema?: unknown, theme?: Record<string, unknown> | null, runtime?: RuntimeInfo, await_id?: string | null}} InitMessage */

/** The host's answer to renew_session (or a session it pushes): a fresh token, or an error.
 * @typedef {{type: "session", session_token?: string, expires_at?: string, error?: string}} SessionMessage */

/** A box on a page, as fractions of its width and height from its top left.
 * @typedef {{x: number, y: number, w: number, h: number}} PageBox */

/** The reviewer's text selection, reported by the host (document_selection);
 * box is where it lies on the page's image, when selected there.
 * @typedef {{type: "document_selection", text: string, page: number, label?: string, box?: PageBox}} DocumentSelectionMessage */

/** The selection level the host really captures at.
 * @typedef {{type: "host_state", selectionMode: unknown}} HostStateMessage */

/** Every message a host posts to the bundle.
 * @typedef {InitMessage | SessionMessage | DocumentSelectionMessage | HostStateMessage} HostMessage */

/** Where a citation points: citation_ids or source_page, a label (≤ 200 characters) and a file_name.
 * @typedef {{citation_ids?: number[], source_page?: number, label?: string, file_name?: string}} Citation */

/** Every message the bundle posts to its host.
 * @typedef {{type: "ready"} | {type: "renew_session"} | {type: "set_selection_mode", enabled: boolean} | {type: "set_translation", show: boolean} | {type: "request_next_review"} | {type: "abort_review_task"} | ({type: "open_citation"} & Citation)} BundleMessage */

/** The events app.on listens to, with what the handler receives.
 * @typedef {{document_selection: DocumentSelectionMessage, host_state: HostStateMessage, session: {expires_at: string | undefined}}} HostEvents */

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
const MAX_RENEW_MARGIN = 60000; // renew a minute before expiry, or at 3/4 of a shorter lifetime

/** Posts {type:"ready"} to the host page and resolves with an AppRuntime once
 * the host answers with its init message. Options: maxRetries,
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
    const timer = setTimeout(() => {
      window.removeEventListener("message", onMessage);
      reject(new AppRuntimeError(0, "the host did not answer ready with init"));
    }, opts.initTimeout);
    /** @param {MessageEvent} event */
    function onMessage(event) {
      const m = event.data;
      if (event.source !== host || !m || m.type !== "init") return;
      clearTimeout(timer);
      window.removeEventListener("message", onMessage);
      resolve(new AppRuntime(m, host, opts));
    }
    window.addEventListener("message", onMessage);
    host.postMessage({ type: "ready" }, "*");
  });
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

  /**
   * @param {InitMessage} init
   * @param {Window} host
   * @param {Settings} opts
   */
  constructor(init, host, opts) {
    this.#host = host;
    this.#opts = opts;
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
   * @param {Ops["read"][K]["payload"]} [payload]
   * @param {CallOptions} [options]
   * @returns {Promise<Ops["read"][K]["result"]>}
   */
  read(op, payload, options) { return this.#call("read", op, payload, options); }
  /** POST /write: one row into a writes op's table.
   * @template {keyof Ops["write"] & string} K
   * @param {K} op
   * @param {Ops["write"][K]["payload"]} [payload]
   * @param {CallOptions} [options]
   * @returns {Promise<Ops["write"][K]["result"]>}
   */
  write(op, payload, options) { return this.#call("write", op, payload, options); }
  /** options.awaitId sends the top-level await_id (this artifact's own: app.awaitId);
   * options.reason the reviewer's reason (payload.reason).
   * @template {keyof Ops["action"] & string} K
   * @param {K} op
   * @param {Ops["action"][K]["payload"]} [payload]
   * @param {ActionOptions} [options]
   * @returns {Promise<Ops["action"][K]["result"]>}
   */
  action(op, payload, options) { return this.#call("action", op, payload, options); }
  /** POST /run: a tools op on the worker fleet.
   * @template {keyof Ops["run"] & string} K
   * @param {K} op
   * @param {Ops["run"][K]["payload"]} [payload]
   * @param {CallOptions} [options]
   * @returns {Promise<Ops["run"][K]["result"]>}
   */
  run(op, payload, options) { return this.#call("run", op, payload, options); }
  /** POST /capability: a granted capability the host does not perform.
   * @template {keyof Ops["capability"] & string} K
   * @param {K} op
   * @param {Ops["capability"][K]["payload"]} [payload]
   * @param {CallOptions} [options]
   * @returns {Promise<Ops["capability"][K]["result"]>}
   */
  capability(op, payload, options) { return this.#call("capability", op, payload, options); }

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

  /** Calls handler(message) for each host message of type:
   * "document_selection" ({text, page, label?}), "host_state"
   * ({selectionMode}), "session" (after a renewal: {expires_at}). Returns a
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
    if (event.source !== this.#host || !m || typeof m.type !== "string") return;
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
    this.#host.postMessage(message, "*");
  }

  /** @param {string} capability */
  #require(capability) {
    if (Array.isArray(this.runtime.capabilities) && !this.hasCapability(capability)) {
      throw new AppRuntimeError(403, "the binding does not grant " + capability);
    }
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
    const o = options || {};
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
