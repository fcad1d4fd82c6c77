/**
 * The element a command acts on, as its caller names it: a `ref` from a
 * snapshot (`e5`, or `f1e3` for frame 1's element 3) or a CSS `selector`.
 *
 * Every element command declares {@link TARGET_PARAMS} and turns its params
 * into a target with {@link elementTarget}; the page side resolves that
 * target in one place (`findElementThen` in page-scripts.js), so a ref whose
 * element is gone is refused the same way by every command, and never
 * resolves to another element.
 *
 * Like the other `lib/` modules, this touches neither `chrome.*` nor the DOM.
 */

import { invalidParams } from './rpc.js';

/**
 * What snapshot refs look like. Checked before anything reaches the page, so
 * a selector passed as `ref` (a common slip) gets a clear answer.
 */
export const REF_PATTERN = /^(?:f[1-9]\d*)?e[1-9]\d*$/;

/**
 * The params-schema fragment of an element command: spread it into the
 * command's `params`. Neither is required by the schema, because either will
 * do; {@link elementTarget} insists on one of them.
 */
export const TARGET_PARAMS = Object.freeze({
  ref: Object.freeze({ type: 'string', nonEmpty: true }),
  selector: Object.freeze({ type: 'string', nonEmpty: true }),
});

/**
 * @typedef {{ref: string} | {selector: string}} ElementTarget what
 *   `elementExpression`, `findElementThen` and `locateElement` accept (they
 *   also still accept a bare selector string)
 */

/**
 * The target named by validated params. A ref wins over a selector when a
 * caller sends both, because Playwright MCP's callers send `ref` and a
 * selector alongside it is usually left over from an older call.
 *
 * @param {{ref?: string, selector?: string}} params
 * @param {string} [prefix] for commands with several elements (e.g. `start`
 *   reads `startRef`/`startSelector`); default none
 * @returns {ElementTarget}
 * @throws {import('./rpc.js').RpcError} invalidParams when neither is given or the ref is malformed
 */
export function elementTarget(params, prefix = '') {
  const refKey = prefix ? `${prefix}Ref` : 'ref';
  const selectorKey = prefix ? `${prefix}Selector` : 'selector';
  const ref = params[refKey];
  const selector = params[selectorKey];
  if (typeof ref === 'string' && ref.trim() !== '') {
    const trimmed = ref.trim();
    if (!REF_PATTERN.test(trimmed)) {
      throw invalidParams(`parameter "${refKey}" must be a ref from a snapshot, such as "e5" or "f1e3", ` +
          `got "${ref}"; for a CSS selector use "${selectorKey}"`);
    }
    return { ref: trimmed };
  }
  if (typeof selector === 'string' && selector.trim() !== '') {
    return { selector };
  }
  throw invalidParams(`give parameter "${refKey}" (an element's ref from a snapshot, e.g. "e5") or "${selectorKey}" (a CSS selector)`);
}

/**
 * How a target reads in an error message: `ref e5` or `selector "#save"`.
 *
 * @param {ElementTarget | string} target
 */
export function describeTarget(target) {
  if (typeof target === 'string') {
    return `selector "${target}"`;
  }
  return 'ref' in target ? `ref ${target.ref}` : `selector "${target.selector}"`;
}
