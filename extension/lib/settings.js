/**
 * Where the relay URL, token and browser name come from.
 *
 * Three sources, in order of precedence: `dev-config.json` beside the manifest
 * (the test hook), what the user saved on the options page, and the token's
 * `connection_url` claim when no URL was given at all.
 *
 * The pure helpers come first so Node can test them; the functions at the end
 * touch `chrome.*` and `fetch` only when called.
 */

import { connectionUrlClaim } from './jwt.js';

/** chrome.storage.local keys written by the options page and the popup. */
export const SettingsKey = Object.freeze({
  RELAY_URL: 'relayUrl',
  TOKEN: 'token',
  NAME: 'name',
  /** The popup's connect/disconnect switch. Absent means on. */
  ENABLED: 'enabled',
  /** Generated once; lets the relay give this browser the same extension id after reconnects. */
  CLIENT_ID: 'clientId',
});

/** chrome.storage.session key the service worker publishes its state under, for the popup and options page. */
export const STATE_KEY = 'relayState';

const EXTENSION_PATH = '/extension';
const MCP_PATH = '/mcp';

/**
 * @typedef {object} Settings
 * @property {string} relayUrl as typed by the user or found in dev-config (may be empty)
 * @property {string} token
 * @property {string} name
 * @property {boolean} enabled
 * @property {boolean} fromDevConfig
 */

/**
 * The relay serves extensions on `/extension`. Users paste the relay's base URL,
 * and the token's `connection_url` claim is written for MCP clients (it may end
 * in `/mcp`), so: no `/extension` at the end → append it, `/mcp` at the end →
 * swap it. `http(s)` becomes `ws(s)` for people who paste the relay's web address.
 *
 * @param {string} url
 * @returns {string} the normalised URL
 * @throws {Error} when the URL is not a ws(s)/http(s) URL
 */
export function normalizeRelayUrl(url) {
  let parsed;
  try {
    parsed = new URL(url.trim());
  } catch {
    throw new Error(`Relay URL "${url}" is not a valid URL; expected something like ws://127.0.0.1:8080/extension`);
  }
  if (parsed.protocol === 'http:')
    parsed.protocol = 'ws:';
  else if (parsed.protocol === 'https:')
    parsed.protocol = 'wss:';
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:')
    throw new Error(`Relay URL "${url}" must start with ws:// or wss://`);
  const path = parsed.pathname.replace(/\/+$/, '');
  if (path.endsWith(EXTENSION_PATH))
    parsed.pathname = path;
  else if (path.endsWith(MCP_PATH))
    parsed.pathname = path.slice(0, -MCP_PATH.length) + EXTENSION_PATH;
  else
    parsed.pathname = path + EXTENSION_PATH;
  return parsed.toString();
}

/**
 * The URL to dial: the configured one, else the token's `connection_url`.
 *
 * @param {{relayUrl?: string, token?: string}} settings
 * @returns {string | null} null when neither source gives a URL
 */
export function resolveRelayUrl({ relayUrl, token }) {
  const configured = relayUrl?.trim();
  if (configured)
    return normalizeRelayUrl(configured);
  const claimed = token ? connectionUrlClaim(token) : null;
  return claimed ? normalizeRelayUrl(claimed) : null;
}

/**
 * @param {Record<string, unknown>} stored chrome.storage.local contents
 * @param {Record<string, unknown> | null} devConfig parsed dev-config.json, if any
 * @param {string} defaultName used when nobody named the browser
 * @returns {Settings}
 */
export function mergeSettings(stored, devConfig, defaultName) {
  const pick = key => {
    const fromDev = devConfig?.[key];
    if (typeof fromDev === 'string' && fromDev.trim())
      return fromDev.trim();
    const fromStore = stored[key];
    return typeof fromStore === 'string' ? fromStore.trim() : '';
  };
  return {
    relayUrl: pick(SettingsKey.RELAY_URL),
    token: pick(SettingsKey.TOKEN),
    name: pick(SettingsKey.NAME) || defaultName,
    enabled: stored[SettingsKey.ENABLED] !== false,
    fromDevConfig: !!devConfig,
  };
}

/**
 * Reads `dev-config.json` from the extension folder. A missing file is the
 * normal case (404, or a network error for a file that is not there).
 *
 * @returns {Promise<Record<string, unknown> | null>}
 */
export async function loadDevConfig() {
  let response;
  try {
    response = await fetch(chrome.runtime.getURL('dev-config.json'));
  } catch {
    return null;
  }
  if (!response.ok)
    return null;
  try {
    const config = await response.json();
    return config && typeof config === 'object' ? config : null;
  } catch (error) {
    console.warn('[mcp-relay] dev-config.json is not valid JSON; ignoring it:', error);
    return null;
  }
}

/** @returns {Promise<Settings>} */
export async function loadSettings(devConfig) {
  const stored = await chrome.storage.local.get([
    SettingsKey.RELAY_URL, SettingsKey.TOKEN, SettingsKey.NAME, SettingsKey.ENABLED,
  ]);
  return mergeSettings(stored, devConfig, defaultBrowserName());
}

/**
 * The stable client id the relay keys this browser's extension id on.
 * Generated on first use and kept in chrome.storage.local, which survives
 * service-worker restarts and browser restarts.
 *
 * @returns {Promise<string>}
 */
export async function loadClientId() {
  const { [SettingsKey.CLIENT_ID]: existing } = await chrome.storage.local.get(SettingsKey.CLIENT_ID);
  if (typeof existing === 'string' && existing)
    return existing;
  const clientId = crypto.randomUUID();
  await chrome.storage.local.set({ [SettingsKey.CLIENT_ID]: clientId });
  return clientId;
}

/** "Chrome 141" style name from the user agent, so an unnamed browser is still recognisable in list_extensions. */
export function defaultBrowserName(userAgent = globalThis.navigator?.userAgent ?? '') {
  // Edge also says "Chrome/…", so look for its own token first.
  const edge = /Edg\/(\d+)/.exec(userAgent);
  if (edge)
    return `Edge ${edge[1]}`;
  const chrome = /(Chromium|Chrome)\/(\d+)/.exec(userAgent);
  return chrome ? `${chrome[1]} ${chrome[2]}` : 'Chrome';
}
