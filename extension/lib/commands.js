/**
 * The browser commands MCP clients send through the relay: one table mapping
 * a method name to the params it accepts and the handler that runs it, and
 * {@link runCommand}, which validates the params and runs the handler.
 *
 * The handlers live by concern under commands/: tabs and navigation
 * (tabs.js), input (input.js), reading the page (reading.js), scripts and raw
 * CDP (scripts.js), what an action changed (action-reports.js), hand-offs to
 * the person (person.js), and what they
 * all share (shared.js: {@link targetTab}, where the per-connection rules
 * live: no tabId means "my current tab", and a tab owned by another
 * connection is refused). playwright-commands.js, page-tools.js and webmcp.js
 * add their tables here. Only this file imports them all; none imports it,
 * so there is no import cycle (the linter's import/no-cycle checks).
 *
 * Page work goes through CDP (`chrome.debugger`) so it works on background
 * tabs and headless Chrome; tab bookkeeping goes through `chrome.tabs`.
 * `chrome.*` is touched only inside handlers, so Node can import this module
 * to test the param schemas.
 */

import { validateParams } from './params.js';
import { ErrorCode, RpcError, serverError } from './rpc.js';
import { DialogOpenError } from './debugger-sessions.js';
import { PAGE_TOOL_COMMANDS } from './page-tools.js';
import { PLAYWRIGHT_COMMANDS } from './playwright-commands.js';
import { webmcpCommands } from './webmcp.js';
import { settling } from './settle.js';
import { TARGET_PARAMS } from './targets.js';
import { awaitSelectors, lostLocatorElement, resolveLocators } from './commands/by-locator.js';
import { reportingChanges, reportingDownloads } from './commands/action-reports.js';
import { askBeforeActing } from './commands/ask-before.js';
import { click, handleDialog, hover, pressKey, selectOption, type } from './commands/input.js';
import { WAIT_MAX_MS, consoleMessages, screenshot, snapshot, waitFor } from './commands/reading.js';
import { PERSON_COMMANDS, assertNotHandedOff } from './commands/person.js';
import { evaluate, forwardCDPCommand } from './commands/scripts.js';
import { TAB_ID } from './commands/shared.js';
import { activateTab, closeTab, createTab, getTabs, goThroughHistory, navigate, selectTab } from './commands/tabs.js';

export { OUTLINE_MAX_CHARS, WAIT_DEFAULT_MS, WAIT_MAX_MS } from './commands/reading.js';
export { ACTIONABLE_WAIT_MS } from './commands/shared.js';

/**
 * @typedef {object} CommandContext
 * @property {string} connectionId `conn-…` or DIRECT_CONNECTION
 * @property {import('./tabs.js').TabOwnership} tabs
 * @property {import('./debugger-sessions.js').DebuggerSessions} debuggers
 * @property {import('./downloads.js').DownloadBook} [downloads]
 * @property {import('./person-requests.js').PersonRequests} [person] hand-offs and ask-before prompts
 * @property {string} [assistantName] the assistant as the person knows it (OwnerControl sets it)
 * @property {import('./ask-before.js').Asks} [askBefore] what the person asked to approve first on the tab's site (OwnerControl sets it)
 * @property {{tab: chrome.tabs.Tab, at: number}} [seenTab] the command's tab as OwnerControl's checks just read it (`at`: performance.now()), see shared.js `tabInfo`
 */
/** Options of {@link reportingChanges} for actions that wait for the page to settle. */
const SETTLES = Object.freeze({ settle: true });
/** … for navigations, which answer once their load event fired: settled on less evidence. */
const SETTLES_LOADED = Object.freeze({ settle: true, loaded: true });

/**
 * How long a navigation may take to commit and load (commands/tabs.js), for a bridge's
 * `--navigation-timeout`: 1 s to 5 min, 30 s when absent.
 * @type {import('./params.js').ParamSpec}
 */
const NAVIGATION_TIMEOUT = Object.freeze({ type: 'integer', min: 1_000, max: 300_000 });

/**
 * @type {Record<string, {params: Record<string, import('./params.js').ParamSpec>, run: (ctx: CommandContext, params: any) => Promise<object>}>}
 */
export const COMMANDS = {
  getTabs: { params: {}, run: getTabs },
  createTab: { params: { url: { type: 'string' }, active: { type: 'boolean' }, timeoutMs: NAVIGATION_TIMEOUT }, run: createTab },
  selectTab: { params: { tabId: { ...TAB_ID, required: true } }, run: selectTab },
  activateTab: { params: { tabId: TAB_ID }, run: activateTab },
  closeTab: { params: { tabId: TAB_ID }, run: closeTab },
  browser_navigate: {
    params: { url: { type: 'string', required: true, nonEmpty: true }, snapshot: { type: 'boolean' }, tabId: TAB_ID, timeoutMs: NAVIGATION_TIMEOUT },
    run: reportingChanges(navigate, SETTLES_LOADED),
  },
  goBack: { params: { tabId: TAB_ID }, run: (ctx, params) => goThroughHistory(ctx, params, -1) },
  goForward: { params: { tabId: TAB_ID }, run: (ctx, params) => goThroughHistory(ctx, params, +1) },
  click: {
    params: {
      ...TARGET_PARAMS,
      snapshot: { type: 'boolean' },
      x: { type: 'number', min: 0 },
      y: { type: 'number', min: 0 },
      button: { type: 'string', oneOf: ['left', 'middle', 'right'] },
      clickCount: { type: 'integer', min: 1, max: 3 },
      modifiers: { type: 'string[]', maxItems: 5 },
      tabId: TAB_ID,
    },
    run: reportingChanges(click, SETTLES),
  },
  type: {
    params: {
      ...TARGET_PARAMS,
      text: { type: 'string', required: true },
      submit: { type: 'boolean' },
      slowly: { type: 'boolean' },
      snapshot: { type: 'boolean' },
      tabId: TAB_ID,
    },
    run: reportingChanges(type, SETTLES),
  },
  // A hover settles too: what it shows (a tooltip, a menu) often comes after a delay (MUI's
  // tooltip, 100 ms), and the answer says it.
  hover: { params: { ...TARGET_PARAMS, snapshot: { type: 'boolean' }, tabId: TAB_ID }, run: reportingChanges(hover, SETTLES) },
  selectOption: {
    params: {
      ...TARGET_PARAMS,
      values: { type: 'string[]', required: true, nonEmpty: true, maxItems: 1_000 },
      snapshot: { type: 'boolean' },
      tabId: TAB_ID,
    },
    run: reportingChanges(selectOption, SETTLES),
  },
  // `key`, or `text`: each of its characters pressed in turn (a script's keyboard.type).
  pressKey: { params: { key: { type: 'string' }, text: { type: 'string' }, snapshot: { type: 'boolean' }, tabId: TAB_ID }, run: reportingChanges(pressKey, SETTLES) },
  waitFor: {
    params: {
      text: { type: 'string', nonEmpty: true },
      textGone: { type: 'string', nonEmpty: true },
      time: { type: 'number', min: 0, max: WAIT_MAX_MS / 1000 },
      timeout: { type: 'number', min: 0.1, max: WAIT_MAX_MS / 1000 },
      tabId: TAB_ID,
    },
    run: waitFor,
  },
  handleDialog: {
    params: { accept: { type: 'boolean', required: true }, promptText: { type: 'string' }, tabId: TAB_ID },
    run: handleDialog,
  },
  consoleMessages: { params: { onlyErrors: { type: 'boolean' }, sincePage: { type: 'boolean' }, tabId: TAB_ID }, run: consoleMessages },
  screenshot: {
    params: {
      format: { type: 'string', oneOf: ['png', 'jpeg', 'webp'] },
      quality: { type: 'integer', min: 0, max: 100 },
      fullPage: { type: 'boolean' },
      maxDimension: { type: 'integer', min: 16, max: 16_384 },
      tabId: TAB_ID,
    },
    run: screenshot,
  },
  evaluate: { params: { expression: { type: 'string', required: true, nonEmpty: true }, tabId: TAB_ID }, run: evaluate },
  snapshot: {
    params: {
      ...TARGET_PARAMS,
      format: { type: 'string', oneOf: ['elements', 'outline'] },
      depth: { type: 'integer', min: 1, max: 1_000 },
      interactive: { type: 'boolean' },
      boxes: { type: 'boolean' },
      tabId: TAB_ID,
    },
    run: snapshot,
  },
  forwardCDPCommand: {
    params: {
      method: { type: 'string', required: true, nonEmpty: true },
      params: { type: 'object' },
      sessionId: { type: 'string' },
      tabId: TAB_ID,
    },
    run: forwardCDPCommand,
  },
};

/** The protocol spec's own example says `navigate`; accept it as a synonym. */
COMMANDS.navigate = COMMANDS.browser_navigate;
Object.assign(COMMANDS, PLAYWRIGHT_COMMANDS, PAGE_TOOL_COMMANDS, webmcpCommands(), PERSON_COMMANDS);
// The rest of Playwright MCP's actions say what changed too, once the page has settled.
for (const name of ['fillForm', 'drag', 'drop'])
  COMMANDS[name] = { ...COMMANDS[name], run: reportingChanges(COMMANDS[name].run, SETTLES) };
// Scripts can start downloads too; they report them, without waiting for the page to settle.
for (const name of ['evaluate', 'evaluateFunction'])
  COMMANDS[name] = { ...COMMANDS[name], run: reportingDownloads(COMMANDS[name].run) };
// History moves answer with the page they reached, once it has settled (settle.js).
for (const name of ['goBack', 'goForward'])
  COMMANDS[name] = settling(COMMANDS[name], { loaded: true });

/**
 * @param {CommandContext} ctx
 * @param {string} method
 * @param {unknown} params
 * @returns {Promise<object>} the `result` of the reply
 * @throws {RpcError|Error} becomes the `error` of the reply
 */
export async function runCommand(ctx, method, params) {
  if (!Object.hasOwn(COMMANDS, method))
    throw new RpcError(ErrorCode.METHOD_NOT_FOUND, `Method not found: "${method}"; this extension handles ${Object.keys(COMMANDS).join(', ')}`);
  const command = COMMANDS[method];
  const checked = validateParams(command.params, params);
  // The person has this tab (a hand-off): nothing else runs on it until they answer.
  assertNotHandedOff(ctx, method, checked);
  // Playwright's locators (getByRole(…), role=…) become the one element's ref.
  let valid = await resolveLocators(ctx, checked);
  // A CSS selector waits for its element as a locator does.
  await awaitSelectors(ctx, valid);
  // A step the person asked to approve first (a form sent, a purchase) waits for their Allow.
  await askBeforeActing(ctx, method, valid);
  const dialogsBefore = ctx.debuggers?.events?.openDialogs() ?? new Map();
  for (let found = 1; ; found++) {
    try {
      return await runSayingDialogs(ctx, command, valid, dialogsBefore);
    } catch (error) {
      // A locator's element replaced between its finding and the action (a grid drawing its
      // rows again after a sort): nothing was done, and the locator is found again, as
      // Playwright's are, up to LOCATOR_FINDS times.
      if (found < LOCATOR_FINDS && valid !== checked && lostLocatorElement(error, checked, valid)) {
        valid = await resolveLocators(ctx, checked);
        continue;
      }
      throw error;
    }
  }
}

/** How many times one command finds its locators' elements, when they were replaced meanwhile. */
const LOCATOR_FINDS = 3;

/**
 * Runs the command; a dialog it made the page open is its answer, not a failure.
 *
 * @param {CommandContext} ctx
 * @param {{run: (ctx: CommandContext, params: any) => Promise<object>}} command
 * @param {any} valid its params
 * @param {Map<number, unknown>} dialogsBefore the dialogs open before it ran, by tab
 */
async function runSayingDialogs(ctx, command, valid, dialogsBefore) {
  try {
    return await command.run(ctx, valid);
  } catch (error) {
    // The command made the page open a dialog (a click on a button that calls confirm(), a
    // page that alerts while it loads): it did its work, and the page now waits for an
    // answer. Say so rather than fail.
    if (error instanceof DialogOpenError && (error.openedDuring || dialogsBefore.get(error.tabId) !== error.dialog))
      return { tabId: error.tabId, dialog: error.dialog, note: dialogNote(error.dialog) };
    if (error instanceof DialogOpenError)
      throw serverError(error.message);
    throw error;
  }
}

/** @param {import('./page-events.js').OpenDialog} dialog */
function dialogNote(dialog) {
  return `The page opened a JavaScript ${dialog.type} dialog and waits for an answer; answer it with handleDialog ` +
      '(in mcp-relay bridge: browser_handle_dialog with accept true or false, and promptText for a prompt).';
}
