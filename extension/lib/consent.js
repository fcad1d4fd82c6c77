/**
 * Whether the browser's owner lets an assistant act in this browser.
 *
 * The relay hands any MCP client of the same user to this extension; a token
 * alone must not be enough to start driving someone's logged-in browser. So
 * the first time an assistant connects, its requests are refused with
 * {@link CONSENT_REQUIRED} until the person decides in the popup or the
 * notification. "Always allow" and "Deny" are remembered per assistant
 * identity; "Allow once" lasts as long as that one MCP connection. A denied
 * assistant is refused without asking again (its client would otherwise
 * reconnect and raise a notification every time) until the person allows it
 * in the popup or forgets the denial on the options page.
 *
 * Pure: no `chrome.*`, so Node's test runner can import it.
 */

import { RpcError } from './rpc.js';

/** JSON-RPC code for "the browser's owner has not allowed this assistant (yet)"; the relay forwards it unchanged. */
export const CONSENT_REQUIRED = -32010;

/** chrome.storage.local keys the popup and options page write. */
export const ConsentKey = Object.freeze({
  /** `{[assistantKey]: {name, allowedAt}}`: the "Always allow" decisions. */
  ALWAYS_ALLOWED: 'allowedAssistants',
  /** The options page's "allow every assistant" switch; off unless set. */
  ALLOW_ALL: 'allowAllAssistants',
  /** `{[assistantKey]: {name, deniedAt}}`: the "Deny" decisions. */
  DENIED: 'deniedAssistants',
});

/**
 * @typedef {object} AssistantIdentity what `connection_opened` says about an MCP client
 * @property {string} [client_id] stable per installation of the MCP client (the bridge sends one)
 * @property {string} [client_name] the MCP host's own name, e.g. "Claude Desktop"
 */

/**
 * The key a remembered decision is stored under: user + client_id, else user
 * + client name. Without either there is nothing stable to remember, and only
 * "Allow once" makes sense.
 *
 * @param {string | null | undefined} userId
 * @param {AssistantIdentity} identity
 * @returns {string | null}
 */
export function assistantKey(userId, identity) {
  const user = userId ?? '';
  if (nonEmpty(identity?.client_id))
    return `${user}\u0000id:${identity.client_id}`;
  if (nonEmpty(identity?.client_name))
    return `${user}\u0000name:${identity.client_name}`;
  return null;
}

/**
 * What the person reads in the popup and the notification.
 *
 * @param {AssistantIdentity} identity
 */
export function assistantName(identity) {
  if (nonEmpty(identity?.client_name))
    return identity.client_name.trim();
  if (nonEmpty(identity?.client_id))
    return `Assistant ${identity.client_id.slice(0, 8)}`;
  return 'Unnamed assistant';
}

/**
 * @typedef {object} ConsentPolicy everything a decision depends on
 * @property {boolean} allowAll the options page's switch
 * @property {boolean} autoAllow dev-config.json `autoAllow`, for automated set-ups
 * @property {string[]} allowedClients dev-config.json `allowedClients`: client ids or names
 * @property {Record<string, unknown>} alwaysAllowed stored "Always allow" decisions by key
 * @property {Record<string, unknown>} denied stored "Deny" decisions by key
 */

/**
 * Denied by the person earlier: refused without asking. A denial outranks the
 * allow-all switch and dev-config (the person said no to this one), but not an
 * "Allow once" given to this very connection afterwards.
 *
 * @param {ConsentPolicy} policy
 * @param {{key: string | null, allowedOnce: boolean}} assistant
 */
export function isDenied(policy, { key, allowedOnce }) {
  return !allowedOnce && key !== null && Object.hasOwn(policy.denied, key);
}

/**
 * @param {ConsentPolicy} policy
 * @param {{key: string | null, identity: AssistantIdentity, allowedOnce: boolean}} assistant
 * @returns {boolean}
 */
export function isAllowed(policy, { key, identity, allowedOnce }) {
  if (isDenied(policy, { key, allowedOnce }))
    return false;
  if (policy.allowAll || policy.autoAllow || allowedOnce)
    return true;
  const named = [identity?.client_id, identity?.client_name].filter(nonEmpty);
  if (named.some(name => policy.allowedClients.includes(name)))
    return true;
  return key !== null && Object.hasOwn(policy.alwaysAllowed, key);
}

/**
 * The policy from stored settings and dev-config.json, tolerating junk in either.
 *
 * @param {Record<string, unknown>} stored
 * @param {Record<string, unknown> | null} devConfig
 * @returns {ConsentPolicy}
 */
export function consentPolicy(stored, devConfig) {
  const always = stored[ConsentKey.ALWAYS_ALLOWED];
  const denied = stored[ConsentKey.DENIED];
  const clients = devConfig?.allowedClients;
  return {
    allowAll: stored[ConsentKey.ALLOW_ALL] === true,
    autoAllow: devConfig?.autoAllow === true,
    allowedClients: Array.isArray(clients) ? clients.filter(nonEmpty) : [],
    alwaysAllowed: isRecord(always) ? always : {},
    denied: isRecord(denied) ? denied : {},
  };
}

/**
 * The refusal a not-yet-allowed assistant gets for every forwarded request.
 * The bridge shows it to the model, which should tell the person what to do.
 *
 * @param {string} name
 */
export function consentRequiredError(name) {
  return new RpcError(CONSENT_REQUIRED,
    `The browser's owner has not allowed "${name}" to use this browser yet: ask them to click Allow ` +
    'in the mcp-relay extension (its toolbar button or the notification), then try again');
}

/**
 * The refusal a denied assistant gets: the same code, so clients that only know
 * -32010 still stop, with `data.decision` telling a program not to wait for a click.
 *
 * @param {string} name
 */
export function consentDeniedError(name) {
  return new RpcError(CONSENT_REQUIRED,
    `The browser's owner has denied "${name}" the use of this browser; only they can undo that ` +
    '(on the mcp-relay extension\'s options page)', { decision: 'denied' });
}

/** @param {unknown} value @returns {value is Record<string, unknown>} */
function isRecord(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** @param {unknown} value @returns {value is string} */
function nonEmpty(value) {
  return typeof value === 'string' && value.trim() !== '';
}
