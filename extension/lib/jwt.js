/**
 * Reads the claims of a JWT without verifying it.
 *
 * The extension only needs the `connection_url` claim to pre-fill the relay
 * URL; the relay is the one that verifies the signature, so checking it here
 * would add a key to distribute and protect nothing.
 *
 * Pure: uses only `atob` and `TextDecoder`, present in service workers and Node.
 */

/**
 * @param {string} token a compact JWT (`header.payload.signature`)
 * @returns {Record<string, unknown> | null} the payload, or null if the token is not a readable JWT
 */
export function decodeJwtClaims(token) {
  if (typeof token !== 'string')
    return null;
  const parts = token.trim().split('.');
  if (parts.length !== 3 || !parts[1])
    return null;
  try {
    const claims = JSON.parse(base64UrlDecode(parts[1]));
    return claims && typeof claims === 'object' && !Array.isArray(claims) ? claims : null;
  } catch {
    return null;
  }
}

/**
 * @param {string} token
 * @returns {string | null} the `connection_url` claim if it is a non-empty string
 */
export function connectionUrlClaim(token) {
  const url = decodeJwtClaims(token)?.connection_url;
  return typeof url === 'string' && url.trim() ? url.trim() : null;
}

/** @param {string} text base64url, padding optional */
function base64UrlDecode(text) {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const padded = base64 + '='.repeat((4 - (base64.length % 4)) % 4);
  const binary = atob(padded);
  const bytes = Uint8Array.from(binary, c => c.charCodeAt(0));
  // Claims may hold non-ASCII (user names); atob alone would mangle UTF-8.
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}
