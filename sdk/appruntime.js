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

export const VERSION = "1";

/** The error every failed call throws: status is the HTTP status (0 when no
 * reply came), message the runtime's own message. */
export class AppRuntimeError extends Error {
  constructor(status, message, details) {
    super(message);
    this.name = "AppRuntimeError";
    this.status = status;
    const d = details || {};
    this.verb = d.verb;
    this.op = d.op;
    this.retryAfter = d.retryAfter; // seconds, when the runtime said
  }
}

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
 * to talk to; the parent frame by default). */
export function connect(options) {
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

/** One mounted artifact: its init values, its session and the bridge. */
export class AppRuntime {
  #host;
  #opts;
  #token;
  #expiresAt = 0; // ms since the epoch
  #renewTimer = 0;
  #renewing = null; // the pending renewal's promise
  #waitingForSession = null; // settles the pending renewal with the host's answer
  #hostRenews = true; // false once the host left a renewal unanswered (an older host)
  #listeners = new Map(); // type → Set of handlers
  #onMessage;

  constructor(init, host, opts) {
    this.#host = host;
    this.#opts = opts;
    /** The init message as the host sent it. */
    this.init = init;
    this.params = init.params || {};
    this.schema = init.schema || null;
    this.theme = init.theme || {};
    this.runtime = init.runtime || {};
    this.awaitId = init.await_id || null;
    this.apiBase = String(init.api_base || this.runtime.api_base || "").replace(/\/+$/, "");
    this.#onMessage = (event) => this.#receive(event);
    window.addEventListener("message", this.#onMessage);
    this.#setSession(init.session_token, init.expires_at);
  }

  /** When the current session token expires. */
  get expiresAt() {
    return new Date(this.#expiresAt);
  }

  read(op, payload, options) { return this.#call("read", op, payload, options); }
  write(op, payload, options) { return this.#call("write", op, payload, options); }
  /** options.awaitId sends the top-level await_id (this artifact's own: app.awaitId). */
  action(op, payload, options) { return this.#call("action", op, payload, options); }
  run(op, payload, options) { return this.#call("run", op, payload, options); }
  capability(op, payload, options) { return this.#call("capability", op, payload, options); }

  /** Whether the binding grants capability name (runtime.capabilities). */
  hasCapability(name) {
    return Array.isArray(this.runtime.capabilities) && this.runtime.capabilities.includes(name);
  }

  /** Whether name is performed by the host over the bridge rather than
   * /capability (runtime.host_capabilities; absent on older backends). */
  isHostCapability(name) {
    return Array.isArray(this.runtime.host_capabilities) && this.runtime.host_capabilities.includes(name);
  }

  /** Asks the host to capture (or stop capturing) the reviewer's text
   * selection; needs document_selection. The host reports the level it
   * really captures at with host_state. */
  setSelectionMode(enabled) {
    this.#require("document_selection");
    this.#post({ type: "set_selection_mode", enabled: Boolean(enabled) });
  }

  /** Shows or hides the host's page translation; needs get_translation. */
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
   * naming the item of a repeated field, an optional file_name. */
  openCitation(citation) {
    const c = citation || {};
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
   * function that removes the handler. */
  on(type, handler) {
    if (!this.#listeners.has(type)) this.#listeners.set(type, new Set());
    this.#listeners.get(type).add(handler);
    return () => this.#listeners.get(type).delete(handler);
  }

  /** Asks the host for a fresh session now; resolves once it has one. Calls
   * made meanwhile wait for it. Done automatically before expires_at. */
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

  #setSession(token, expiresAt) {
    this.#token = token;
    const at = Date.parse(expiresAt);
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

  #receive(event) {
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

  #emit(type, message) {
    for (const handler of this.#listeners.get(type) || []) {
      try { handler(message); } catch (err) { setTimeout(() => { throw err; }); }
    }
  }

  #post(message) {
    this.#host.postMessage(message, "*");
  }

  #require(capability) {
    if (Array.isArray(this.runtime.capabilities) && !this.hasCapability(capability)) {
      throw new AppRuntimeError(403, "the binding does not grant " + capability);
    }
  }

  async #call(verb, op, payload, options) {
    const o = options || {};
    const body = { op: op, payload: payload === undefined ? {} : payload };
    if (verb === "action" && o.awaitId) body.await_id = o.awaitId;
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
    } catch (err) {
      if (err && err.name === "AbortError") throw err;
      throw new AppRuntimeError(0, "the runtime could not be reached: " + (err && err.message), { verb, op });
    }
  }
}

/** The reply's v2 envelope, or null when the body is not one. */
async function readEnvelope(res) {
  try {
    const body = await res.json();
    return body && typeof body === "object" && typeof body.ok === "boolean" ? body : null;
  } catch (err) {
    return null;
  }
}

/** Retry-After in seconds (delta-seconds or an HTTP date), or undefined. */
function parseRetryAfter(value) {
  if (value === null || value === "") return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Exponential backoff with jitter when the runtime named no delay: 0.5 s, 1 s, 2 s… */
function backoff(attempt) {
  const base = 500 * 2 ** attempt;
  return base + Math.random() * base / 2;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) { reject(signal.reason); return; }
    const timer = setTimeout(resolve, ms);
    if (signal) signal.addEventListener("abort", () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
}
