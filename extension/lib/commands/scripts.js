/**
 * Scripts and raw CDP: an expression evaluated in the page as the person's click would allow,
 * and any CDP command sent to the tab's debugger session as is.
 */

import { readableValue } from '../page-scripts.js';
import { serverError } from '../rpc.js';
import { exceptionText, messageOf, targetTab } from './shared.js';

/** The object group an expression's value is held in until it has been read. */
const EVALUATED = 'mcp-relay-evaluated';

/** @typedef {import('../commands.js').CommandContext} CommandContext */

/** @param {CommandContext} ctx */
export async function evaluate(ctx, { expression, tabId }) {
  const id = await targetTab(ctx, tabId);
  const { result, exceptionDetails } = await ctx.debuggers.send(id, 'Runtime.evaluate', {
    expression,
    awaitPromise: true,
    // Lets the expression do what a click would allow (open popups, play media).
    userGesture: true,
    objectGroup: EVALUATED,
  });
  if (exceptionDetails)
    throw serverError(`The expression threw: ${exceptionText(exceptionDetails)}`);
  // JSON has no undefined, NaN or Infinity: report null plus what it was.
  if (result.unserializableValue !== undefined)
    return { value: null, type: result.type, unserializableValue: result.unserializableValue };
  if (result.objectId === undefined)
    return { value: result.value ?? null, type: result.type };
  // An object is read in the page as a person would read it (page-scripts.js readableValue):
  // by value, CDP refuses a cycle or a BigInt inside and reads an element as `{}`. The
  // expression ran once; only its value is read again.
  try {
    const read = await ctx.debuggers.send(id, 'Runtime.callFunctionOn', {
      objectId: result.objectId,
      functionDeclaration: readableValue.toString(),
      arguments: [{ objectId: result.objectId }],
      returnByValue: true,
    });
    return { value: read.result?.value ?? null, type: result.type };
  } finally {
    ctx.debuggers.send(id, 'Runtime.releaseObjectGroup', { objectGroup: EVALUATED }).catch(() => {});
  }
}

/** @param {CommandContext} ctx */
export async function forwardCDPCommand(ctx, { method, params = {}, sessionId, tabId }) {
  const id = await targetTab(ctx, tabId);
  try {
    return await ctx.debuggers.send(id, method, params, { sessionId });
  } catch (error) {
    throw serverError(`CDP ${method} failed on tab ${id}: ${messageOf(error)}`);
  }
}
