/**
 * Request id parsing.
 *
 * The relay forwards an MCP client's request with its id rewritten to
 * `conn-<uuid>:<client id>`; everything before the first `:` names the MCP
 * connection. The extension never rewrites ids (it answers with the id it
 * received); it only reads the prefix to know whose tabs a command may touch.
 *
 * Pure: no `chrome.*`.
 */

/**
 * Pseudo-connection for requests whose id carries no `conn-` prefix: a client
 * talking to the extension without a relay, or a relay that does not map ids.
 * It is never listed in `status`, so it is never pruned by one.
 */
export const DIRECT_CONNECTION = 'direct';

const CONNECTION_PREFIX = 'conn-';

/**
 * @param {unknown} id the `id` member of an incoming request
 * @returns {string} the connection id (`conn-…`) or {@link DIRECT_CONNECTION}
 */
export function connectionIdOf(id) {
  if (typeof id !== 'string' || !id.startsWith(CONNECTION_PREFIX))
    return DIRECT_CONNECTION;
  const colon = id.indexOf(':');
  // `conn-` alone, or a colon right after it, names no connection.
  if (colon <= CONNECTION_PREFIX.length)
    return DIRECT_CONNECTION;
  return id.slice(0, colon);
}

/**
 * True for the ids the relay uses for its own requests (`proxy:<random>`), which are
 * answered but never belong to an MCP connection.
 *
 * @param {unknown} id
 */
export function isRelayControlId(id) {
  return typeof id === 'string' && id.startsWith('proxy:');
}
