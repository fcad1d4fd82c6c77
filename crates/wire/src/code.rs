//! JSON-RPC error codes the relay itself produces. The `-32000..-32099` band is ours; the values
//! are documented in `docs/PROTOCOL.md` and must not change meaning once published, because
//! clients (the bridge among them) act on them.

/// Not JSON at all.
pub const PARSE_ERROR: i64 = -32700;
/// JSON, but not a request, notification or response (or a reserved id).
pub const INVALID_REQUEST: i64 = -32600;
/// A method the receiver does not implement.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Missing or mistyped parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// The extension answered with neither `result` nor `error`.
pub const INTERNAL_ERROR: i64 = -32603;
/// Authentication, routing and other relay errors (the spec's catch-all).
pub const SERVER_ERROR: i64 = -32000;
/// `connect` while this MCP socket already has a connection.
pub const ALREADY_CONNECTED: i64 = -32001;
/// The per-connection rate limit rejected a forwarded request.
pub const RATE_LIMITED: i64 = -32002;
/// The extension did not answer within `--request-timeout`.
pub const REQUEST_TIMEOUT: i64 = -32003;
/// The extension went away (or the connection was closed) before answering.
pub const EXTENSION_GONE: i64 = -32004;
/// The relay is shutting down.
pub const SHUTTING_DOWN: i64 = -32005;
/// A per-user or global capacity limit was reached.
pub const LIMIT_REACHED: i64 = -32006;
/// Sent by an extension, not the relay: the browser's owner has not allowed this assistant
/// yet (or denied it). The relay forwards it unchanged; the bridge waits a little for the
/// owner's decision and otherwise tells the model to ask the person.
pub const OWNER_APPROVAL_REQUIRED: i64 = -32010;
/// `connect` to a browser that is still pending approval (`serve --require-approval`): its
/// owner or an operator approves it out of band (admin API, `mcp-relay admin approve ID`).
pub const BROWSER_NOT_APPROVED: i64 = -32011;
/// A forwarded request on an MCP socket with no connection to a browser (never connected,
/// disconnected, or the connection ended). A client that connects again may resend it: the
/// request never reached a browser. Its own code because clients act on it (the bridge
/// reconnects and retries once); before 0.1 it was `-32000` with the same message.
pub const NOT_CONNECTED: i64 = -32012;

/// Every code the relay itself answers with, for counting (`/metrics`) and for tests that
/// each is documented.
pub const RELAY_CODES: [i64; 15] = [
    PARSE_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    INVALID_PARAMS,
    INTERNAL_ERROR,
    SERVER_ERROR,
    ALREADY_CONNECTED,
    RATE_LIMITED,
    REQUEST_TIMEOUT,
    EXTENSION_GONE,
    SHUTTING_DOWN,
    LIMIT_REACHED,
    OWNER_APPROVAL_REQUIRED,
    BROWSER_NOT_APPROVED,
    NOT_CONNECTED,
];
