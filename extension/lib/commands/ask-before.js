/**
 * Consequential steps wait for the person's word (issue 29): before a click, a key press or
 * typing with `submit` runs on a page where the person asked to be asked (ask-before.js), the
 * page is asked what the step would do; a form submission or a purchase opens an "ask" in the
 * popup (Allow / Deny) and the command waits for it.
 *
 * One call waits at most ASK_WAIT_MS (under the relay's and hosts' 60 s request timeouts). A
 * person who has not answered by then leaves the prompt open; the assistant is told so, and the
 * same action called again waits on the same prompt rather than asking twice. Deny refuses this
 * action, and the same action is refused without asking again while the denial is remembered.
 */

import { HELD_SUBMISSIONS_KEY, holdSubmissions, pageConsequence, peekHeldSubmissions, takeHeldSubmissions } from '../ask-before.js';
import { elementExpression, pageExpression } from '../page-scripts.js';
import { serverError } from '../rpc.js';
import { elementTarget } from '../targets.js';
import { worldOfIframe } from './other-frames.js';
import { evaluateExpression, getTab, targetTab, worldOf } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */
/** @typedef {import('../person-requests.js').PersonRequest} PersonRequest */

/** One call waits this long for Allow or Deny. */
export const ASK_WAIT_MS = 40_000;
/** The prompt stays in the popup this long. */
const ASK_OPEN_MS = 5 * 60_000;

/**
 * Waits for the person's Allow when `method` would submit a form or make a purchase on a page
 * where they asked for that; throws their Deny (or that they have not answered yet).
 *
 * @param {CommandContext} ctx
 * @param {string} method
 * @param {any} params validated
 */
export async function askBeforeActing(ctx, method, params) {
  const asks = ctx.askBefore;
  if (!ctx.person || !asks || (!asks.forms && !asks.purchases))
    return;
  const query = consequenceQuery(method, params);
  if (!query)
    return;
  const tabId = await targetTab(ctx, params.tabId);
  const expression = query.target
    ? elementExpression(pageConsequence, query.target, query.how)
    : pageExpression(pageConsequence, null, query.how);
  // An element of a frame of another origin (a payment form embedded from its provider) is
  // read in that frame's world, where its form is.
  const world = query.target ? await worldOf(ctx, tabId, query.target) : null;
  let found = await evaluateExpression(ctx, tabId, expression, world);
  // A click at a point, or a key press, that lands in a frame of another origin: asked
  // again in that frame's world, at the point in its viewport.
  if (found?.frame) {
    const inFrame = await worldOfIframe(ctx, tabId, `window[Symbol.for('mcp-relay.frameInTheWay')]`);
    found = inFrame ? await evaluateExpression(ctx, tabId, pageExpression(pageConsequence, null, found.frame), inFrame) : null;
  }
  // An element that cannot be found is the command's to report, with its own words.
  if (!found || found.error)
    return;
  const reasons = [
    ...(asks.purchases && found.purchase ? ['it looks like a purchase or payment'] : []),
    ...(asks.forms && found.submits ? ['it submits a form'] : []),
  ];
  if (reasons.length === 0)
    return;
  await askPersonFirst(ctx, { tabId, method, verb: query.verb, words: found.words, reasons });
}

/**
 * Asks the person to Allow or Deny one step (`verb words (reasons)`), or finds their earlier
 * answer to the same step; returns once allowed, throws their Deny (or that they have not
 * answered yet).
 *
 * The wait is `waitMs` (at most ASK_WAIT_MS). A step that can be taken later (a click) leaves
 * an unanswered prompt open, and the same step called again waits on it. With `unanswered:
 * 'withdraw'` (a step that cannot wait: a page tool's held call is cancelled when this call
 * ends) the prompt is withdrawn instead, and the assistant is told not to retry on its own.
 *
 * @param {CommandContext} ctx
 * @param {{tabId: number, method: string, verb: string, words: string, reasons: string[], deniedNote?: string,
 *   waitMs?: number, unanswered?: 'keep'|'withdraw', unansweredNote?: string}} step
 */
export async function askPersonFirst(ctx, { tabId, method, verb, words, reasons, deniedNote, waitMs = ASK_WAIT_MS, unanswered = 'keep', unansweredNote }) {
  const action = `${verb} ${words} (${reasons.join('; ')})`;
  const key = `${ctx.connectionId}|${tabId}|${method}|${words}`;
  let request = ctx.person.lastByKey(key);
  if (request?.status === 'denied')
    throw deniedError(request, deniedNote);
  if (request?.status !== 'waiting') {
    const tab = await getTab(tabId);
    request = ctx.person.open({
      kind: 'ask',
      key,
      summary: `${verb} (${reasons.join('; ')})`,
      connectionId: ctx.connectionId,
      assistant: ctx.assistantName ?? 'An assistant',
      tabId,
      reason: action,
      page: { url: tab.url || tab.pendingUrl || '', title: tab.title || '' },
      timeoutMs: ASK_OPEN_MS,
    });
  }
  const wait = Math.min(waitMs, ASK_WAIT_MS);
  let answered = await ctx.person.wait(request.id, wait);
  if (answered?.status === 'waiting' && unanswered === 'withdraw') {
    // The person may answer in the same instant: theirs counts if it came first.
    answered = ctx.person.answer(request.id, 'withdrawn');
    if (answered?.status === 'withdrawn')
      throw serverError(`The browser's owner did not answer within ${Math.round(wait / 1000)} s whether to allow this step: ${action}. ` +
          `The request was withdrawn from their mcp-relay popup; ${unansweredNote ?? 'nothing was done'}. ` +
          'Do not retry it on your own: tell the user it needs their Allow, and call it again only when they ask you to');
  }
  switch (answered?.status) {
    case 'allowed':
      return;
    case 'denied':
      throw deniedError(answered, deniedNote);
    case 'waiting':
      throw serverError(`The browser's owner asked to approve this step first: ${action}. They have not answered yet ` +
          `(the request stays in their mcp-relay popup until ${new Date(answered.deadline).toISOString()}); ${deniedNote ?? 'nothing was done'}. ` +
          'Tell the user you are waiting for their Allow, then call the same action again: it waits for the same answer');
    default:
      throw serverError(`The browser's owner did not allow this step (${action}) in time; ${deniedNote ?? 'nothing was done'}. ` +
          'Ask the user before trying again');
  }
}

/**
 * Runs `fill` (a `fillForm`'s filling of its fields) where the person asked to approve form
 * submissions or purchases: a submission the page starts while the fields are filled (a
 * `change` handler that submits, a checkbox whose click does) is held back, the person is
 * asked, and the held form is submitted only on their Allow. On Deny the fields stay filled and
 * nothing is submitted. Elsewhere `fill` simply runs.
 *
 * @template T
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {() => Promise<T>} fill
 * @returns {Promise<{result: T, submitted?: string[]}>}
 */
export async function fillingWithAsking(ctx, tabId, fill) {
  const asks = ctx.askBefore;
  if (!ctx.person || !asks || (!asks.forms && !asks.purchases))
    return { result: await fill() };
  await evaluateExpression(ctx, tabId, pageExpression(holdSubmissions, HELD_SUBMISSIONS_KEY));
  let result;
  try {
    result = await fill();
  } catch (error) {
    await evaluateExpression(ctx, tabId, pageExpression(takeHeldSubmissions, HELD_SUBMISSIONS_KEY, false)).catch(() => {});
    throw error;
  }
  // Which forms the page tried to submit, the hold ended (nothing is sent yet).
  const { forms } = await evaluateExpression(ctx, tabId, pageExpression(peekHeldSubmissions, HELD_SUBMISSIONS_KEY));
  if (forms.length === 0) {
    await evaluateExpression(ctx, tabId, pageExpression(takeHeldSubmissions, HELD_SUBMISSIONS_KEY, false));
    return { result };
  }
  const purchase = forms.some(form => form.purchase);
  const reasons = [
    ...(asks.purchases && purchase ? ['it looks like a purchase or payment'] : []),
    ...(asks.forms ? ['the page submits it as its fields are filled'] : []),
  ];
  if (reasons.length > 0) {
    try {
      await askPersonFirst(ctx, {
        tabId, method: 'fillForm', verb: 'fill in', words: forms.map(form => form.words).join(' and '), reasons,
        deniedNote: 'the fields were filled, but the form was not submitted',
      });
    } catch (error) {
      await evaluateExpression(ctx, tabId, pageExpression(takeHeldSubmissions, HELD_SUBMISSIONS_KEY, false)).catch(() => {});
      throw error;
    }
  }
  const { sent } = await evaluateExpression(ctx, tabId, pageExpression(takeHeldSubmissions, HELD_SUBMISSIONS_KEY, true));
  return { result, submitted: sent > 0 ? forms.map(form => form.words) : [] };
}

/**
 * What to ask the page for each kind of action, or null for an action that cannot submit or pay.
 *
 * @param {string} method
 * @param {any} params
 * @returns {{verb: string, target?: object, how: object} | null}
 */
function consequenceQuery(method, params) {
  switch (method) {
    case 'click':
      if (params.ref !== undefined || params.selector !== undefined)
        return { verb: 'click', target: elementTarget(params), how: {} };
      return typeof params.x === 'number' ? { verb: 'click', how: { x: params.x, y: params.y } } : null;
    case 'type':
      return params.submit ? { verb: 'type into and press Enter in', target: elementTarget(params), how: { enter: true } } : null;
    case 'pressKey':
      // Typed text with a line break presses Enter too.
      if (typeof params.text === 'string')
        return params.text.includes('\n') ? { verb: 'type text with Enter into', how: { focused: true, enter: true } } : null;
      return /(^|\+)Enter$/.test(params.key) ? { verb: `press ${params.key} on`, how: { focused: true, enter: true } } : null;
    default:
      return null;
  }
}

/** @param {PersonRequest} request @param {string} [done] what was done all the same */
function deniedError(request, done) {
  return serverError(`The browser's owner denied this step: ${request.reason}. ${done ? `${done[0].toUpperCase()}${done.slice(1)}.` : 'Nothing was done.'} ` +
      'Do not retry it or work around it (another element, a key press, a script): tell the user it was refused and ask what they want instead');
}
