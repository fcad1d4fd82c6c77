/**
 * Scripts and raw CDP: an expression evaluated in the page as the person's click would allow,
 * and any CDP command sent to the tab's debugger session as is.
 */

import { serverError } from '../rpc.js';
import { exceptionText, messageOf, targetTab } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */

/** @param {CommandContext} ctx */
export async function evaluate(ctx, { expression, tabId }) {
  const id = await targetTab(ctx, tabId);
  const { result, exceptionDetails } = await ctx.debuggers.send(id, 'Runtime.evaluate', {
    expression,
    returnByValue: true,
    awaitPromise: true,
    // Lets the expression do what a click would allow (open popups, play media).
    userGesture: true,
  });
  if (exceptionDetails)
    throw serverError(`The expression threw: ${exceptionText(exceptionDetails)}`);
  // JSON has no undefined, NaN or Infinity: report null plus what it was.
  if (result.unserializableValue !== undefined)
    return { value: null, type: result.type, unserializableValue: result.unserializableValue };
  return { value: result.value ?? null, type: result.type };
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
