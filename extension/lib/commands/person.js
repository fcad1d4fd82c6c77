/**
 * Handing a step to the person (issue 29): `requestHuman` opens a hand-off on the assistant's
 * tab (OwnerControl shows it: badge, notification, popup), `awaitHuman` waits a bounded while
 * for the person's "Done" or "Cancel" and answers with what changed, `cancelHuman` withdraws
 * it (the MCP host cancelled the call), and `answerHuman` records the person's Done or Cancel
 * given in the MCP host instead of the popup (a host of MCP 2026-07-28 asked them there too; the
 * popup's card then goes). While a hand-off waits, the assistant's other calls on that tab are
 * refused ({@link assertNotHandedOff}): the person is using it.
 */

import { AWAIT_MAX_MS, HAND_OFF_DEFAULT_SECONDS, HAND_OFF_MAX_SECONDS } from '../person-requests.js';
import { serverError } from '../rpc.js';
import { getTab, targetTab } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */
/** @typedef {import('../person-requests.js').PersonRequest} PersonRequest */

/** One `awaitHuman` waits this long unless it names less. */
const AWAIT_DEFAULT_MS = 20_000;

/** Calls that may name a handed-off tab: the hand-off's own, and those that do not act on a tab. */
const ALLOWED_WHILE_HANDED_OFF = new Set(['requestHuman', 'awaitHuman', 'cancelHuman', 'answerHuman', 'getTabs', 'createTab']);

export const PERSON_COMMANDS = {
  requestHuman: {
    params: {
      reason: { type: 'string', required: true, nonEmpty: true },
      timeoutSeconds: { type: 'integer', min: 1, max: HAND_OFF_MAX_SECONDS },
      tabId: { type: 'integer', min: 0 },
    },
    run: requestHuman,
  },
  awaitHuman: {
    params: {
      handoffId: { type: 'string', required: true, nonEmpty: true },
      waitMs: { type: 'integer', min: 0, max: AWAIT_MAX_MS },
    },
    run: awaitHuman,
  },
  cancelHuman: {
    params: { handoffId: { type: 'string', required: true, nonEmpty: true } },
    run: cancelHuman,
  },
  answerHuman: {
    params: {
      handoffId: { type: 'string', required: true, nonEmpty: true },
      answer: { type: 'string', required: true, oneOf: ['done', 'cancelled'] },
    },
    run: answerHuman,
  },
};

/**
 * @param {CommandContext} ctx
 * @param {{reason: string, timeoutSeconds?: number, tabId?: number}} params
 */
async function requestHuman(ctx, { reason, timeoutSeconds = HAND_OFF_DEFAULT_SECONDS, tabId }) {
  const book = personBook(ctx);
  const id = await targetTab(ctx, tabId);
  const pending = book.handOffOn(id);
  if (pending)
    throw serverError(`tab ${id} is already handed to the person (hand-off ${pending.id}: "${pending.reason}"); wait for its answer with awaitHuman`);
  const tab = await getTab(id);
  const page = { url: tab.url || tab.pendingUrl || '', title: tab.title || '' };
  const request = book.open({
    kind: 'hand-off',
    connectionId: ctx.connectionId,
    assistant: ctx.assistantName ?? 'An assistant',
    tabId: id,
    reason: reason.trim(),
    page,
    timeoutMs: timeoutSeconds * 1000,
  });
  return { handoffId: request.id, status: request.status, tabId: id, ...page, timeoutSeconds, deadline: new Date(request.deadline).toISOString() };
}

/**
 * @param {CommandContext} ctx
 * @param {{handoffId: string, waitMs?: number}} params
 */
async function awaitHuman(ctx, { handoffId, waitMs = AWAIT_DEFAULT_MS }) {
  const request = await personBook(ctx).wait(handoffId, waitMs);
  if (!request || request.kind !== 'hand-off')
    throw serverError(`no hand-off ${handoffId} (it ended more than 10 minutes ago, or the browser restarted); ask again with requestHuman`);
  return handOffAnswer(request);
}

/**
 * @param {CommandContext} ctx
 * @param {{handoffId: string}} params
 */
async function cancelHuman(ctx, { handoffId }) {
  const request = personBook(ctx).answer(handoffId, 'withdrawn');
  if (!request)
    throw serverError(`no hand-off ${handoffId}`);
  return handOffAnswer(request);
}

/**
 * The person's Done or Cancel as they gave it in the MCP host, not in the popup. Only a waiting
 * hand-off takes it: if the person already answered in the popup, that answer stands and is
 * what comes back. The receipt and the note say where the answer came from, since only the
 * popup is the browser's own.
 *
 * @param {CommandContext} ctx
 * @param {{handoffId: string, answer: 'done'|'cancelled'}} params
 */
async function answerHuman(ctx, { handoffId, answer }) {
  const book = personBook(ctx);
  const request = book.get(handoffId);
  if (!request || request.kind !== 'hand-off')
    throw serverError(`no hand-off ${handoffId} (it ended more than 10 minutes ago, or the browser restarted); ask again with requestHuman`);
  return handOffAnswer(book.answer(handoffId, answer, { via: 'host' }));
}

/**
 * What the assistant reads: still waiting, or how it ended and what the page became (URL and
 * title only: what the person typed or saw is theirs).
 *
 * @param {PersonRequest} request
 */
async function handOffAnswer(request) {
  const base = {
    handoffId: request.id,
    status: request.status,
    tabId: request.tabId,
    reason: request.reason,
    waitedSeconds: Math.round(((request.answeredAt ?? Date.now()) - request.openedAt) / 100) / 10,
  };
  if (request.status === 'waiting')
    return { ...base, deadline: new Date(request.deadline).toISOString() };
  const tab = await chrome.tabs.get(request.tabId).catch(() => undefined);
  const after = tab ? { url: tab.url || tab.pendingUrl || '', title: tab.title || '' } : null;
  const changed = after ? [...(after.url !== request.page.url ? ['url'] : []), ...(after.title !== request.page.title ? ['title'] : [])] : [];
  return {
    ...base,
    before: request.page,
    after,
    changed,
    note: outcomeNote(request, after),
  };
}

/** @param {PersonRequest} request @param {{url: string, title: string} | null} after */
function outcomeNote(request, after) {
  const gone = after ? '' : ' The tab was closed meanwhile.';
  const inHost = request.answeredVia === 'host';
  switch (request.status) {
    case 'done':
      return inHost
        ? `The person answered Done in the MCP host (not in the browser's popup): they say the step is done; the tab is yours again. Check the page before relying on it.${gone}`
        : `The person did the step and clicked Done; the tab is yours again.${gone}`;
    case 'cancelled':
      return `The person ${inHost ? 'answered Cancel in the MCP host' : 'clicked Cancel'}: they will not do this step now. Do not ask again at once; tell the user what you needed.${gone}`;
    case 'timed-out':
      return `No answer from the person within the timeout (${Math.round((request.deadline - request.openedAt) / 1000)} s); the tab is yours again, ` +
          `but the step may not be done: check the page.${gone}`;
    case 'withdrawn':
      return 'The hand-off was withdrawn (the call was cancelled or the assistant went away).';
    default:
      return '';
  }
}

/**
 * Refuses a call on a tab the person has been handed, naming the hand-off.
 *
 * @param {CommandContext} ctx
 * @param {string} method
 * @param {{tabId?: number}} params
 */
export function assertNotHandedOff(ctx, method, params) {
  if (!ctx.person || ALLOWED_WHILE_HANDED_OFF.has(method))
    return;
  const tabId = Number.isInteger(params?.tabId) ? params.tabId : ctx.tabs?.currentTab(ctx.connectionId);
  const handOff = ctx.person.handOffOn(tabId);
  if (handOff) {
    throw serverError(`tab ${tabId} is handed to the person (hand-off ${handOff.id}: "${handOff.reason}"), ` +
        `who has not clicked Done or Cancel yet (they have until ${new Date(handOff.deadline).toISOString()}); ` +
        'nothing was done. Wait for browser_request_human to answer before using this tab');
  }
}

/** @param {CommandContext} ctx */
function personBook(ctx) {
  if (!ctx.person)
    throw serverError('this extension has no place to ask the person (no popup): hand-offs are not available here');
  return ctx.person;
}
