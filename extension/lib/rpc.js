/**
 * JSON-RPC 2.0 vocabulary shared by the relay connection and the command
 * handlers: error codes, the error type handlers throw, and reply builders.
 *
 * Pure: no `chrome.*`, so Node's test runner can import it.
 */

/** Error codes from the JSON-RPC 2.0 spec plus the application range the relay protocol uses. */
export const ErrorCode = Object.freeze({
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** Anything that went wrong in the browser: the message must tell a person what to do. */
  SERVER_ERROR: -32000,
});

/** An error that carries the JSON-RPC code it must be reported with. */
export class RpcError extends Error {
  /**
   * @param {number} code
   * @param {string} message
   * @param {unknown} [data] JSON-RPC's optional `data` member, for what a program should read
   */
  constructor(code, message, data) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
  }
}

/** @param {string} message */
export function invalidParams(message) {
  return new RpcError(ErrorCode.INVALID_PARAMS, message);
}

/** @param {string} message */
export function serverError(message) {
  return new RpcError(ErrorCode.SERVER_ERROR, message);
}

/**
 * Turns anything a handler threw into the `error` member of a reply. Errors
 * that do not carry a code are browser failures (-32000): their message is
 * what Chrome or our own checks said, which is the most useful text we have.
 *
 * @param {unknown} error
 * @returns {{code: number, message: string, data?: unknown}}
 */
export function toRpcError(error) {
  if (error instanceof RpcError)
    return error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data };
  const message = cdpMessage(error instanceof Error ? error.message : String(error));
  return { code: ErrorCode.SERVER_ERROR, message: message || 'Unknown error in the extension' };
}

/**
 * chrome.debugger rejects with the DevTools protocol's own error as JSON text
 * (`{"code":-32000,"message":"Inspected target navigated or closed"}`); the
 * person reading the reply wants the sentence, not JSON inside a string.
 *
 * @param {string} message
 */
function cdpMessage(message) {
  if (!message.startsWith('{'))
    return message;
  try {
    const inner = JSON.parse(message);
    return typeof inner?.message === 'string' && inner.message ? inner.message : message;
  } catch {
    return message;
  }
}

/**
 * A successful reply. The relay protocol forbids a reply with neither
 * `result` nor `error`, so an empty or undefined result becomes `{}`.
 *
 * @param {string|number|null} id
 * @param {unknown} result
 */
export function resultReply(id, result) {
  return { jsonrpc: '2.0', id, result: result ?? {} };
}

/**
 * @param {string|number|null} id
 * @param {unknown} error
 */
export function errorReply(id, error) {
  return { jsonrpc: '2.0', id, error: toRpcError(error) };
}

/**
 * @param {string} method
 * @param {object} params
 */
export function notification(method, params) {
  return { jsonrpc: '2.0', method, params };
}
/** @param {any} details CDP Runtime.ExceptionDetails */
export function exceptionText(details) {
  return details.exception?.description?.split('\n')[0] ?? details.text ?? 'unknown exception';
}
