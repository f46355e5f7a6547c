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
export function connect<Ops extends OpMap = AnyOps>(options?: ConnectOptions): Promise<AppRuntime<Ops>>;
/** The runtime API version this SDK speaks (the OpenAPI document's info.version). */
export const VERSION: "1";
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
    constructor(status: number, message: string, details?: ErrorDetails);
    /** The HTTP status; 0 when no reply came. */
    status: number;
    /** The verb of the failed call. @type {Verb | undefined} */
    verb: Verb | undefined;
    /** The op of the failed call. @type {string | undefined} */
    op: string | undefined;
    /** Seconds the runtime asked to wait (Retry-After), when it said. @type {number | undefined} */
    retryAfter: number | undefined;
}
/** The MCP Apps protocol version the SDK asks for in ui/initialize. */
export const MCP_APPS_PROTOCOL_VERSION: "2026-01-26";
/** The app tool result's _meta key holding the session (the init message), and the
 * app-only tool that renews it, under an MCP Apps host. */
export const MCP_SESSION_META_KEY: "appruntime/session";
export const MCP_RENEW_TOOL: "appruntime_renew_session";
/** One mounted artifact: its init values, its session and the bridge.
 * @template {OpMap} [Ops=AnyOps]
 */
export class AppRuntime<Ops extends OpMap = AnyOps> {
    /**
     * @param {InitMessage} init
     * @param {Window} host
     * @param {Settings} opts
     * @param {MCPBridge} [bridge] the MCP Apps bridge, when an MCP Apps host mounted the bundle
     */
    constructor(init: InitMessage, host: Window, opts: Settings, bridge?: MCPBridge);
    /** Which host mounted the bundle. @type {HostKind} */
    hostKind: HostKind;
    /** The init message as the host sent it. */
    init: InitMessage;
    /** The step's params. @type {Record<string, unknown>} */
    params: Record<string, unknown>;
    /** The tool's action_schema, or null. @type {unknown} */
    schema: unknown;
    /** @type {Record<string, unknown>} */
    theme: Record<string, unknown>;
    /** @type {RuntimeInfo} */
    runtime: RuntimeInfo;
    /** The artifact's step (under an MCP Apps host: the step its tool call added). @type {string | null} */
    stepId: string | null;
    /** The step's await, for action(op, payload, {awaitId}); null when the step parks nothing. @type {string | null} */
    awaitId: string | null;
    /** The runtime verbs' base URL. */
    apiBase: string;
    /** When the current session token expires. */
    get expiresAt(): Date;
    /** POST /read: a reads op's rows, or an http_call's reply.
     * @template {keyof Ops["read"] & string} K
     * @param {K} op
     * @param {CallArgs<Ops["read"][K]["payload"], CallOptions>} args the payload, then the options
     * @returns {Promise<Ops["read"][K]["result"]>}
     */
    read<K extends keyof Ops["read"] & string>(op: K, ...args: CallArgs<Ops["read"][K]["payload"], CallOptions>): Promise<Ops["read"][K]["result"]>;
    /** POST /write: one row into a writes op's table.
     * @template {keyof Ops["write"] & string} K
     * @param {K} op
     * @param {CallArgs<Ops["write"][K]["payload"], CallOptions>} args the payload, then the options
     * @returns {Promise<Ops["write"][K]["result"]>}
     */
    write<K extends keyof Ops["write"] & string>(op: K, ...args: CallArgs<Ops["write"][K]["payload"], CallOptions>): Promise<Ops["write"][K]["result"]>;
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
    action<K extends keyof Ops["action"] & string>(op: K, ...args: CallArgs<Ops["action"][K]["payload"], ActionOptions>): Promise<Ops["action"][K]["result"]>;
    /** POST /run: a tools op on the worker fleet.
     * @template {keyof Ops["run"] & string} K
     * @param {K} op
     * @param {CallArgs<Ops["run"][K]["payload"], CallOptions>} args the payload, then the options
     * @returns {Promise<Ops["run"][K]["result"]>}
     */
    run<K extends keyof Ops["run"] & string>(op: K, ...args: CallArgs<Ops["run"][K]["payload"], CallOptions>): Promise<Ops["run"][K]["result"]>;
    /** POST /capability: a granted capability the host does not perform.
     * @template {keyof Ops["capability"] & string} K
     * @param {K} op
     * @param {CallArgs<Ops["capability"][K]["payload"], CallOptions>} args the payload, then the options
     * @returns {Promise<Ops["capability"][K]["result"]>}
     */
    capability<K extends keyof Ops["capability"] & string>(op: K, ...args: CallArgs<Ops["capability"][K]["payload"], CallOptions>): Promise<Ops["capability"][K]["result"]>;
    /** Whether the binding grants capability name (runtime.capabilities).
     * @param {string} name
     * @returns {boolean} */
    hasCapability(name: string): boolean;
    /** Whether name is performed by the host over the bridge rather than
     * /capability (runtime.host_capabilities; absent on older backends).
     * @param {string} name
     * @returns {boolean} */
    isHostCapability(name: string): boolean;
    /** Asks the host to capture (or stop capturing) the reviewer's text
     * selection; needs document_selection. The host reports the level it
     * really captures at with host_state.
     * @param {boolean} enabled */
    setSelectionMode(enabled: boolean): void;
    /** Shows or hides the host's page translation; needs get_translation.
     * @param {boolean} show */
    setTranslation(show: boolean): void;
    /** Asks the host to open the next document awaiting review; needs next_review_task. */
    requestNextReview(): void;
    /** Asks the host to put the document back in the queue; needs abort_review_task. */
    abortReviewTask(): void;
    /** Opens the document at a citation: citation_ids (numbers) or
     * source_page (a page number), an optional label (≤ 200 characters)
     * naming the item of a repeated field, an optional file_name.
     * @param {Citation} citation */
    openCitation(citation: Citation): void;
    /** Shows a split of a document side by side with its pages in the
     * reviewer's viewer (split_document's parts: {file_id, ranges}); the
     * reviewer may move a boundary between parts, then confirms or cancels.
     * Resolves with the confirmed split (the ranges as confirmed), or null
     * when the reviewer cancelled; needs split_document.
     * @param {Split} split
     * @returns {Promise<Split | null>} */
    openSplit(split: Split): Promise<Split | null>;
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
    on<T extends keyof HostEvents>(type: T, handler: (message: HostEvents[T]) => void): () => boolean;
    /** Asks the host for a fresh session now; resolves once it has one. Calls
     * made meanwhile wait for it. Done automatically before expires_at.
     * @returns {Promise<Date>} */
    renewSession(): Promise<Date>;
    /** Stops listening to the host and renewing the session. */
    close(): void;
    #private;
}
/**
 * A value of a column: what a row cell, a filter or a written value holds.
 */
export type Scalar = string | number | boolean | null;
/**
 * Any JSON value: what a written column (a json one too) or a placeholder takes.
 */
export type JSONValue = Scalar | unknown[] | {
    [key: string]: unknown;
};
/**
 * A comparison filter: {op, value}; is_null takes no value.
 */
export type FilterComparison = {
    op: "eq" | "ne" | "lt" | "lte" | "gt" | "gte" | "like" | "ilike" | "in" | "is_null";
    value?: Scalar | Scalar[];
};
/**
 * A filter on one column: a scalar is `=`, an array `IN`, null `IS NULL`.
 */
export type Filter = Scalar | Scalar[] | FilterComparison;
/**
 * The payload of a `reads` op: Col are its selectable columns, Filt its filterable ones.
 */
export type ReadPayload<Col extends string = string, Filt extends string = string> = {
    columns?: Col[];
    filters?: { [F in Filt]?: Filter; };
    cursor?: string;
    limit?: number;
};
/**
 * A read's result (kind "rows"): rows are arrays of cells in the order of columns.
 */
export type RowsResult<Col extends string = string> = {
    kind: "rows";
    columns: Col[];
    rows: Scalar[][];
    row_count: number;
    next_cursor: string | null;
};
/**
 * An http_call's reply, whatever the upstream's status: body when it answered JSON, text otherwise.
 */
export type HTTPResponse = {
    status: number;
    body?: unknown;
    text?: string;
};
/**
 * An http_call read's result (kind "http").
 */
export type HTTPResult = {
    kind: "http";
} & HTTPResponse;
/**
 * A `writes` op's payload: one row of its key and writable columns.
 */
export type WritePayload<Row extends Record<string, JSONValue> = Record<string, JSONValue>> = {
    row: Row;
};
/**
 * A write's result (kind "write").
 */
export type WriteResult = {
    rows_affected: number;
};
/**
 * An action's payload: a row per write op and the placeholder values of its http_calls.
 */
export type ActionPayload<Rows extends Record<string, Record<string, JSONValue>> = Record<string, Record<string, JSONValue>>, Values extends Record<string, JSONValue> = Record<string, JSONValue>> = {
    rows?: Rows;
    values?: Values;
};
/**
 * An action's result (kind "action"): rows affected per write op, status per
 * http op and await_resolved; each http op's reply in responses.
 */
export type ActionResult = {
    results: {
        await_resolved?: boolean;
        [op: string]: unknown;
    };
    responses: {
        [op: string]: HTTPResponse;
    };
};
/**
 * A /run result (kind "run"): HTTP 200 also when the tool reported an error.
 */
export type RunResult = {
    kind: "run";
    status: "ok" | "error";
    output: unknown;
    error: string | null;
};
/**
 * A file of the task as the file capabilities return it.
 */
export type FileInfo = {
    file_id: string;
    name: string;
    content_type: string;
    pages: number;
    size: number;
    created_at: string;
    url: string;
    url_expires_at: string;
};
/**
 * The capabilities /capability serves, with their payloads and results.
 */
export type Capabilities = {
    list_files: {
        payload: Record<string, never>;
        result: {
            files: FileInfo[];
        };
    };
    file_preview: {
        payload: {
            file_id: string;
            page?: number;
        };
        result: FileInfo & {
            page: number;
            text: string;
            truncated: boolean;
            ocr: boolean;
            words?: (PageBox & {
                text: string;
            })[];
        };
    };
    split_document: {
        payload: {
            file_id: string;
            ranges: {
                from: number;
                to: number;
            }[];
        };
        result: {
            files: (FileInfo & {
                from: number;
                to: number;
            })[];
        };
    };
    get_translation: {
        payload: {
            file_id: string;
            page?: number;
            target_language: string;
            granularity?: "page" | "paragraph" | "sentence";
        };
        result: {
            file_id: string;
            page: number;
            target_language: string;
            granularity: string;
            segments: {
                text: string;
                translated: string;
            }[];
        };
    };
    list_citations: {
        payload: {
            file_name?: string;
        };
        result: {
            citations: StoredCitation[];
        };
    };
};
/**
 * The shape of one op: what its payload is and what its call resolves with.
 */
export type OpShape = {
    payload: unknown;
    result: unknown;
};
/**
 * The ops of a binding, by verb. `appruntime bundle types --binding ID`
 * writes the one of a binding (docs/bundle-authors.md#types-for-a-bindings-ops).
 */
export type OpMap = {
    read: {
        [op: string]: OpShape;
    };
    write: {
        [op: string]: OpShape;
    };
    action: {
        [op: string]: OpShape;
    };
    run: {
        [op: string]: OpShape;
    };
    capability: {
        [op: string]: OpShape;
    };
};
/**
 * The ops of a binding the SDK was not told about: any op name, the verbs' general shapes.
 */
export type AnyOps = {
    read: {
        [op: string]: {
            payload: ReadPayload | Record<string, unknown>;
            result: RowsResult | HTTPResult;
        };
    };
    write: {
        [op: string]: {
            payload: WritePayload;
            result: WriteResult;
        };
    };
    action: {
        [op: string]: {
            payload: ActionPayload;
            result: ActionResult;
        };
    };
    run: {
        [op: string]: {
            payload: Record<string, unknown>;
            result: RunResult;
        };
    };
    capability: Capabilities & {
        [op: string]: OpShape;
    };
};
/**
 * A call's arguments after its op: the payload (optional only when every key of it is, so a
 * no-payload call of an op with required keys fails to type-check) and the options.
 */
export type CallArgs<P, O> = {} extends P ? [payload?: P, options?: O] : [payload: P, options?: O];
/**
 * The verbs of the runtime API.
 */
export type Verb = "read" | "write" | "action" | "run" | "capability";
/**
 * The v2 envelope of a success.
 */
export type SuccessEnvelope<R = unknown> = {
    ok: true;
    kind: string;
    result: R;
};
/**
 * The v2 envelope of a failure.
 */
export type ErrorEnvelope = {
    ok: false;
    error: {
        status: number;
        message: string;
    };
};
/**
 * What every verb answers with X-Nanonets-App-Runtime: v2.
 */
export type Envelope<R = unknown> = SuccessEnvelope<R> | ErrorEnvelope;
/**
 * Options of one call.
 */
export type CallOptions = {
    signal?: AbortSignal;
};
/**
 * Options of an action: awaitId sends the top-level await_id (the artifact's own: app.awaitId);
 * reason is the reviewer's reason, sent as payload.reason (required by an action the binding
 * declares reason_required, at most 2000 characters; the agent's task.resumed event carries it).
 */
export type ActionOptions = CallOptions & {
    awaitId?: string | null;
    reason?: string;
};
/**
 * What the mint offers the bundle (init.runtime).
 */
export type RuntimeInfo = {
    api_base?: string;
    verbs?: Verb[];
    versions?: string[];
    capabilities?: string[];
    host_capabilities?: string[];
    tools?: string[];
    reason_required?: string[];
    params?: unknown;
};
/**
 * The host's init message, the answer to ready.
 */
export type InitMessage = {
    type: "init";
    session_token: string;
    expires_at: string;
    api_base?: string;
    params?: Record<string, unknown> | null;
    schema?: unknown;
    theme?: Record<string, unknown> | null;
    runtime?: RuntimeInfo;
    await_id?: string | null;
    host_prompts?: string[];
};
/**
 * Which host mounted the bundle: ours (the App Tool bridge) or an MCP Apps host (SEP-1865).
 */
export type HostKind = "appruntime" | "mcp-apps";
/**
 * A JSON-RPC 2.0 message of the MCP Apps bridge.
 */
export type JSONRPCMessage = {
    jsonrpc: "2.0";
    id?: number | string;
    method?: string;
    params?: any;
    result?: any;
    error?: {
        code: number;
        message: string;
    };
};
/**
 * The host's answer to renew_session (or a session it pushes): a fresh token, or an error.
 */
export type SessionMessage = {
    type: "session";
    session_token?: string;
    expires_at?: string;
    error?: string;
};
/**
 * A box on a page, as fractions of its width and height from its top left.
 */
export type PageBox = {
    x: number;
    y: number;
    w: number;
    h: number;
};
/**
 * The reviewer's text selection, reported by the host (document_selection);
 * box is where it lies on the page's image, when selected there.
 */
export type DocumentSelectionMessage = {
    type: "document_selection";
    text: string;
    page: number;
    label?: string;
    box?: PageBox;
};
/**
 * The selection level the host really captures at.
 */
export type HostStateMessage = {
    type: "host_state";
    selectionMode: unknown;
};
/**
 * The host's answer to request_reason: the reason the reviewer typed, or cancelled.
 */
export type ReasonMessage = {
    type: "reason";
    id: number;
    reason?: string;
    cancelled?: boolean;
};
/**
 * A citation stored on the task from a tool result; id is what openCitation's citation_ids takes.
 */
export type StoredCitation = {
    id: number;
    file: string;
    page: number;
    quote: string;
    box?: PageBox;
    created_at: string;
};
/**
 * The host could not open citation_ids (an id the task does not hold).
 */
export type CitationErrorMessage = {
    type: "citation_error";
    citation_ids: number[];
    message: string;
};
/**
 * A split of a document: its file_id and the parts' page ranges (1-based, inclusive).
 */
export type Split = {
    file_id: string;
    ranges: {
        from: number;
        to: number;
    }[];
};
/**
 * The reviewer confirmed a split shown side by side (boundaries maybe moved), or cancelled it.
 */
export type SplitConfirmedMessage = {
    type: "split_confirmed";
} & Split;
/**
 * The reviewer confirmed a split shown side by side (boundaries maybe moved), or cancelled it.
 */
export type SplitCancelledMessage = {
    type: "split_cancelled";
    file_id: string;
};
/**
 * Every message a host posts to the bundle.
 */
export type HostMessage = InitMessage | SessionMessage | DocumentSelectionMessage | HostStateMessage | ReasonMessage | CitationErrorMessage | SplitConfirmedMessage | SplitCancelledMessage;
/**
 * Where a citation points: citation_ids or source_page, a label (≤ 200 characters) and a file_name.
 */
export type Citation = {
    citation_ids?: number[];
    source_page?: number;
    label?: string;
    file_name?: string;
};
/**
 * Every message the bundle posts to its host.
 */
export type BundleMessage = {
    type: "ready";
} | {
    type: "renew_session";
} | {
    type: "set_selection_mode";
    enabled: boolean;
} | {
    type: "set_translation";
    show: boolean;
} | {
    type: "request_next_review";
} | {
    type: "abort_review_task";
} | {
    type: "request_reason";
    id: number;
    op: string;
} | {
    type: "runtime_error";
    verb: Verb;
    op: string;
    status: number;
    message: string;
} | ({
    type: "open_citation";
} & Citation) | ({
    type: "open_split";
} & Split);
/**
 * The events app.on listens to, with what the handler receives.
 */
export type HostEvents = {
    document_selection: DocumentSelectionMessage;
    host_state: HostStateMessage;
    session: {
        expires_at: string | undefined;
    };
    citation_error: CitationErrorMessage;
    split_confirmed: SplitConfirmedMessage;
    split_cancelled: SplitCancelledMessage;
};
/**
 * Options of connect.
 */
export type ConnectOptions = {
    maxRetries?: number;
    maxRetryDelay?: number;
    renewTimeout?: number;
    initTimeout?: number;
    host?: Window;
};
export type Settings = {
    maxRetries: number;
    maxRetryDelay: number;
    renewTimeout: number;
    initTimeout: number;
    host?: Window;
};
/**
 * Where an AppRuntimeError came from.
 */
export type ErrorDetails = {
    verb?: Verb;
    op?: string;
    retryAfter?: number;
};
/** The app side of the MCP Apps bridge (SEP-1865) over postMessage:
 * JSON-RPC requests with their pending answers, notifications, and
 * answers to the host's own requests. */
declare class MCPBridge {
    /** @param {Window} host */
    constructor(host: Window);
    /**
     * @param {string} method
     * @param {unknown} params
     * @returns {Promise<any>}
     */
    request(method: string, params: unknown): Promise<any>;
    /**
     * @param {string} method
     * @param {unknown} params
     */
    notify(method: string, params: unknown): void;
    /** Settles an answer to one of our requests, and answers the host's
     * requests (ping, ui/resource-teardown) with an empty result.
     * @param {JSONRPCMessage} m */
    receive(m: JSONRPCMessage): void;
    /** Asks the server, through the host, for a fresh session on stepId
     * (the app-only tool MCP_RENEW_TOOL); resolves with its _meta session.
     * @param {string} stepId
     * @param {string | null} replaces the session it renews (revoked with the mint)
     * @param {number} timeout
     * @returns {Promise<unknown>} */
    renew(stepId: string, replaces: string | null, timeout: number): Promise<unknown>;
    /** Tells the host the document's size now and whenever it changes
     * (ui/notifications/size-changed), so it can size the frame. */
    reportSize(): void;
    close(): void;
    #private;
}
export {};
