/**
 * Sites the browser's owner has put off limits for every assistant
 * (`*.mybank.com`, `mail.example.com/*`). The list stays in this browser: it
 * is never sent to the relay, so nobody on the other side learns which sites
 * the person guards.
 *
 * Pure: no `chrome.*`, so Node's test runner can import it.
 */

import { RpcError, ErrorCode } from './rpc.js';

/**
 * @typedef {object} SitePattern
 * @property {string} source what the person typed
 * @property {string} host lower-case host, without port
 * @property {boolean} subdomains `*.` in front: the host itself and every subdomain
 * @property {RegExp | null} path null matches every path
 */

/**
 * Reads one pattern. A scheme and a port are ignored (a bank is off limits
 * over http as over https); `*` in the path matches anything.
 *
 * @param {string} text
 * @returns {SitePattern | null} null for blank lines and patterns without a host
 */
export function parseSitePattern(text) {
  const source = String(text ?? '').trim();
  const withoutScheme = source.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  if (!withoutScheme || withoutScheme.startsWith('#'))
    return null;
  const slash = withoutScheme.indexOf('/');
  let host = (slash < 0 ? withoutScheme : withoutScheme.slice(0, slash)).toLowerCase().replace(/:\d+$/, '');
  const pathText = slash < 0 ? '' : withoutScheme.slice(slash);
  const subdomains = host.startsWith('*.');
  if (subdomains)
    host = host.slice(2);
  if (!host || host.includes('*'))
    return null;
  const anyPath = pathText === '' || pathText === '/' || pathText === '/*';
  const path = anyPath ? null : new RegExp(`^${pathText.split('*').map(escapeRegExp).join('.*')}$`);
  return { source, host, subdomains, path };
}

/**
 * @param {string[]} list as stored or as written in dev-config.json
 * @returns {SitePattern[]}
 */
export function parseSitePatterns(list) {
  return (Array.isArray(list) ? list : []).map(parseSitePattern).filter(pattern => pattern !== null);
}

/**
 * The pattern that puts `url` off limits, if any. URLs without a host
 * (about:blank, data:, chrome://newtab/ has one but no patterns name it) pass.
 *
 * @param {SitePattern[]} patterns
 * @param {string | undefined} url
 * @returns {SitePattern | undefined}
 */
export function blockingPattern(patterns, url) {
  if (!url || patterns.length === 0)
    return undefined;
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
  if (!host)
    return undefined;
  const pathAndQuery = parsed.pathname + parsed.search;
  return patterns.find(pattern => {
    const hostMatches = host === pattern.host || (pattern.subdomains && host.endsWith(`.${pattern.host}`));
    return hostMatches && (pattern.path === null || pattern.path.test(pathAndQuery) || pattern.path.test(parsed.pathname));
  });
}

/**
 * What an assistant hears when it reaches for a blocked site. It names the
 * site, not the pattern, so the list itself stays private.
 *
 * @param {string} url
 * @param {number} [tabId]
 */
export function blockedSiteError(url, tabId) {
  let site = url;
  try {
    site = new URL(url).hostname;
  } catch { /* keep the text */ }
  const where = tabId === undefined ? '' : ` (tab ${tabId})`;
  return new RpcError(ErrorCode.SERVER_ERROR,
    `${site}${where} is off limits: the browser's owner does not let assistants open, read, screenshot or act on this site`);
}

/** @param {string} text */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
