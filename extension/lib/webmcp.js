/**
 * WebMCP (issue 26): the tools a page registers itself (`navigator.modelContext.registerTool`,
 * or a `<form toolname=…>`), listed and called for the agent that owns the tab.
 *
 * What Chromium 148 offers, checked in the real browser:
 * - the page API `navigator.modelContext.registerTool({name, description, inputSchema,
 *   execute}, {signal})` (feature `WebMCP`); a tool goes away when its signal aborts;
 * - `navigator.modelContextTesting.listTools()` / `.executeTool(name, inputJson)` (feature
 *   `WebMCPTesting`, chrome://flags "WebMCP for testing"): the only way to call a tool from
 *   outside the page; there is no CDP command that invokes one;
 * - the CDP domain `WebMCP` (feature `DevToolsWebMCPSupport`): `WebMCP.enable`, then
 *   `toolsAdded`/`toolsRemoved` as tools come and go (main frame only), `toolInvoked` and
 *   `toolResponded` (with the page's exception when a tool threw). A DevTools client on the
 *   remote debugging port gets it; chrome.debugger (an extension) is answered "'WebMCP.enable'
 *   wasn't found" in Chromium 148, so it is enabled on attach in case a later Chrome allows it.
 *
 * So the tools are listed through the page API, in the main frame and every same-origin frame
 * below it. {@link WEBMCP_SCRIPT}, run in every agent document, reports changes of the set
 * (`toolchange`) through the binding {@link WEBMCP_BINDING} (its `Runtime.bindingCalled`
 * events reach the client like any CDP event), and keeps the message of the exception a tool
 * threw, which `executeTool` does not pass on.
 */

import { askPersonFirst } from './commands/ask-before.js';
import { targetTab } from './commands/shared.js';
import { invalidParams, serverError } from './rpc.js';

export { WebMcpTools } from './webmcp-store.js';
export { WEBMCP_BINDING, WEBMCP_SCRIPT } from './webmcp-script.js';

/** A page tool's call may take this long before the agent is told it timed out. */
export const PAGE_TOOL_TIMEOUT_MS = 30_000;
/** What the browser must be started with for the tools to be listed and called. */
export const WEBMCP_FEATURES = 'WebMCP,WebMCPTesting,DevToolsWebMCPSupport';
const FLAGS_HINT = `start Chrome with --enable-features=${WEBMCP_FEATURES} (or turn on chrome://flags "WebMCP for testing")`;
/**
 * Runs in the page: the tools of this frame and of every same-origin frame below it, through
 * `navigator.modelContextTesting`. Cross-origin frames are skipped (their tools are another
 * site's). `frame` is the path of `frames` indexes from the top ("" for the main frame).
 */
export function listPageTools() {
  const out = { api: typeof navigator.modelContext === 'object', testing: typeof navigator.modelContextTesting === 'object', tools: [] };
  const walk = (win, path) => {
    let doc;
    try {
      doc = win.document;
      if (win.location.origin !== location.origin)
        return;
    } catch {
      return;
    }
    const testing = win.navigator.modelContextTesting;
    if (testing && typeof testing.listTools === 'function') {
      for (const tool of testing.listTools()) {
        let form = null;
        try {
          form = doc.querySelector(`form[toolname="${CSS.escape(tool.name)}"]`);
        } catch {
          // Not a selector-safe name: then it is no form's tool either.
        }
        out.tools.push({
          name: tool.name,
          description: tool.description ?? '',
          inputSchema: tool.inputSchema ?? '',
          frame: path,
          form: !!form,
          autosubmit: !!form && form.hasAttribute('toolautosubmit'),
        });
      }
    }
    for (let i = 0; i < win.frames.length; i++)
      walk(win.frames[i], path === '' ? String(i) : `${path}.${i}`);
  };
  walk(window, '');
  return out;
}

/**
 * Runs in the page: calls one tool through `navigator.modelContextTesting.executeTool` in the
 * frame at `framePath`, bounded by `timeoutMs`.
 *
 * With `askPerson`, a tool that calls `requestUserInteraction` is held there: the answer is
 * `{error: 'needs-person'}` at once, and {@link continuePageTool} goes on once the person has
 * answered.
 *
 * @param {string} framePath
 * @param {string} name
 * @param {string} input JSON
 * @param {number} timeoutMs
 * @param {boolean} [askPerson]
 */
export function executePageTool(framePath, name, input, timeoutMs, askPerson = false) {
  let win = window;
  for (const index of framePath === '' ? [] : framePath.split('.')) {
    win = win.frames[Number(index)];
    if (!win)
      return { error: 'frame-gone' };
  }
  const testing = win.navigator.modelContextTesting;
  if (!testing)
    return { error: 'no-testing-api' };
  const state = win[Symbol.for('mcp-relay.webmcp')];
  if (state) {
    delete state.errors[name];
    state.askPerson = askPerson;
    state.interaction = null;
  }
  let timer;
  let watch;
  const timeout = new Promise(resolve => {
    timer = setTimeout(() => resolve({ error: 'timeout' }), timeoutMs);
  });
  const call = Promise.resolve()
      .then(() => testing.executeTool(name, input))
      .then(result => ({ ok: true, result: result ?? null }), error => ({ error: 'threw', message: String(error?.message ?? error), pageError: state?.errors[name] }));
  if (state)
    state.pendingCall = call;
  const asks = new Promise(resolve => {
    if (!askPerson || !state)
      return;
    watch = setInterval(() => {
      if (state.interaction)
        resolve({ error: 'needs-person' });
    }, 50);
  });
  return Promise.race([call, timeout, asks]).finally(() => {
    clearTimeout(timer);
    clearInterval(watch);
  });
}

/**
 * Runs in the page: goes on with the call {@link executePageTool} held at
 * `requestUserInteraction`: with `allowed`, the page's callback runs and the call's answer is
 * awaited (bounded by `timeoutMs`); without, `requestUserInteraction` rejects with `message`
 * and the call is left to end as the page handles that.
 *
 * @param {string} framePath
 * @param {boolean} allowed
 * @param {string} message
 * @param {number} timeoutMs
 */
export function continuePageTool(framePath, allowed, message, timeoutMs) {
  let win = window;
  for (const index of framePath === '' ? [] : framePath.split('.')) {
    win = win.frames[Number(index)];
    if (!win)
      return { error: 'frame-gone' };
  }
  const state = win[Symbol.for('mcp-relay.webmcp')];
  const interaction = state?.interaction;
  if (!interaction)
    return { error: 'frame-gone' };
  state.interaction = null;
  state.askPerson = false;
  if (!allowed) {
    interaction.refuse(message);
    return { refused: true };
  }
  interaction.grant();
  let timer;
  const timeout = new Promise(resolve => {
    timer = setTimeout(() => resolve({ error: 'timeout' }), timeoutMs);
  });
  return Promise.race([state.pendingCall, timeout]).finally(() => clearTimeout(timer));
}

/**
 * One tool as `pageTools` answers it: the page's words, with the schema parsed.
 *
 * @param {{name: string, description: string, inputSchema: string, frame: string, form: boolean, autosubmit: boolean}} listed
 * @param {CdpTool | undefined} reported
 */
export function describeTool(listed, reported) {
  let inputSchema = reported?.inputSchema;
  if (inputSchema === undefined && listed.inputSchema) {
    try {
      inputSchema = JSON.parse(listed.inputSchema);
    } catch {
      inputSchema = undefined;
    }
  }
  const annotations = { ...(reported?.annotations ?? {}) };
  if (listed.form)
    annotations.autosubmit = listed.autosubmit;
  return {
    name: listed.name,
    description: listed.description,
    inputSchema: inputSchema ?? { type: 'object', properties: {} },
    annotations,
    frameId: reported?.frameId ?? null,
    frame: listed.frame,
    needsUserInteraction: listed.form && !listed.autosubmit,
  };
}

/**
 * The error of a call the page rejected, worded for the agent, with the page's own exception
 * when the CDP events reported it.
 *
 * @param {string} name
 * @param {number} tabId
 * @param {{message: string, pageError?: string}} answer what executeTool rejected with, and
 *   the tool's own exception when WEBMCP_SCRIPT saw it
 * @param {any} response `WebMCP.toolResponded` params, if any
 */
export function pageToolError(name, tabId, answer, response) {
  const pageSays = answer.pageError || response?.exception?.description?.split('\n')[0] || response?.errorText || answer.message;
  if (/reading 'requestUserInteraction'/.test(pageSays))
    return serverError(`Page tool "${name}" in tab ${tabId} asked for the person's interaction (requestUserInteraction); ` +
        'it was not answered for them. Ask the person to use the page themselves.');
  if (/^Tool not found/i.test(pageSays) || /^Tool not found/i.test(answer.message))
    return serverError(`Tab ${tabId} has no page tool "${name}" any more: the page unregistered it or navigated; call pageTools for the current ones`);
  return serverError(`Page tool "${name}" in tab ${tabId} failed; the page says: ${pageSays}`);
}

/**
 * The commands table, added to commands.js's. A hoisted function, not a constant: commands.js
 * and this module import each other, and whichever loads first must find it ready.
 */
export function webmcpCommands() {
  return {
    pageTools: { params: { tabId: { type: 'integer', min: 0 } }, run: pageTools },
    callPageTool: {
      params: {
        name: { type: 'string', required: true, nonEmpty: true },
        arguments: { type: 'object' },
        frame: { type: 'string' },
        tabId: { type: 'integer', min: 0 },
      },
      run: callPageTool,
    },
  };
}

/**
 * @param {import('./commands.js').CommandContext} ctx
 * @param {number} tabId
 */
async function listed(ctx, tabId) {
  const { result, exceptionDetails } = await ctx.debuggers.send(tabId, 'Runtime.evaluate', {
    expression: `(${listPageTools.toString()})()`, returnByValue: true,
  });
  if (exceptionDetails)
    throw serverError(`Could not list the page tools of tab ${tabId}: ${exceptionDetails.exception?.description?.split('\n')[0] ?? exceptionDetails.text}`);
  const { url } = await chrome.tabs.get(tabId);
  return { url, ...result.value };
}

/** @param {import('./commands.js').CommandContext} ctx */
async function pageTools(ctx, { tabId }) {
  const id = await targetTab(ctx, tabId);
  const page = await listed(ctx, id);
  if (!page.testing && !page.api)
    throw serverError(`This browser does not offer WebMCP to the page in tab ${id}; ${FLAGS_HINT}`);
  const store = ctx.debuggers.webmcp;
  const tools = page.tools.map(tool => describeTool(tool, tool.frame === '' ? store?.find(id, tool.name) : undefined));
  const answer = { tabId: id, url: page.url, tools };
  if (!page.testing)
    answer.note = `The page can register tools, but this browser cannot list or call them from outside; ${FLAGS_HINT}`;
  return answer;
}

/** @param {import('./commands.js').CommandContext} ctx */
async function callPageTool(ctx, { name, arguments: args = {}, frame, tabId }) {
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    throw invalidParams('"arguments" must be an object');
  const id = await targetTab(ctx, tabId);
  const before = await listed(ctx, id);
  if (!before.testing)
    throw serverError(`This browser cannot call the page's tools from outside (no navigator.modelContextTesting); ${FLAGS_HINT}`);
  const candidates = before.tools.filter(tool => tool.name === name && (frame === undefined || tool.frame === frame));
  const tool = candidates.find(candidate => candidate.frame === '') ?? candidates[0];
  if (!tool) {
    const names = before.tools.map(t => t.name);
    throw serverError(`Tab ${id} (${before.url}) has no page tool "${name}"${frame === undefined ? '' : ` in frame "${frame}"`}; ` +
        (names.length ? `it has: ${names.join(', ')}` : 'it registers none now (the page may have unregistered it or navigated)'));
  }
  if (tool.form && !tool.autosubmit)
    throw serverError(`Page tool "${name}" in tab ${id} is a form the page wants the person to submit themselves ` +
        '(no toolautosubmit); it was not submitted for them. Ask the person to review and submit it in the tab.');
  const { frameId: startFrame } = await mainFrame(ctx, id);
  // Where the person asked to approve consequential steps, a tool asking for them waits for Allow.
  const askPerson = Boolean(ctx.person && ctx.askBefore && (ctx.askBefore.forms || ctx.askBefore.purchases));
  const inPage = async expression => {
    let evaluated;
    try {
      evaluated = await ctx.debuggers.send(id, 'Runtime.evaluate', {
        expression, returnByValue: true, awaitPromise: true, userGesture: true,
      }, { timeoutMs: PAGE_TOOL_TIMEOUT_MS + 5_000 });
    } catch (error) {
      if (/context was destroyed|navigated or closed|Cannot find context/i.test(String(error?.message)))
        throw await navigatedError(ctx, id, name);
      throw error;
    }
    const { result, exceptionDetails } = evaluated;
    if (exceptionDetails)
      throw serverError(`Could not call page tool "${name}" in tab ${id}: ${exceptionDetails.exception?.description?.split('\n')[0] ?? exceptionDetails.text}`);
    return result.value ?? {};
  };
  let answer = await inPage(`(${executePageTool.toString()})(${JSON.stringify(tool.frame)}, ${JSON.stringify(name)}, ${JSON.stringify(JSON.stringify(args))}, ${PAGE_TOOL_TIMEOUT_MS}, ${askPerson})`);
  if (answer.error === 'needs-person') {
    const go = (allowed, message = '') =>
      inPage(`(${continuePageTool.toString()})(${JSON.stringify(tool.frame)}, ${allowed}, ${JSON.stringify(message)}, ${PAGE_TOOL_TIMEOUT_MS})`);
    try {
      await askPersonFirst(ctx, {
        tabId: id, method: 'callPageTool', verb: 'run the page\'s tool', words: `“${name}”, which asks for you in the tab`,
        reasons: ['the page wants your interaction'],
        deniedNote: 'the page\'s tool was told the person declined',
      });
    } catch (error) {
      // The page's tool hears why it got no interaction: a Deny, or no answer yet.
      const why = /denied this step/.test(String(error?.message))
        ? 'The person declined the interaction this tool asked for'
        : 'The person has not answered yet; the interaction this tool asked for did not happen';
      await go(false, why).catch(() => {});
      throw error;
    }
    answer = await go(true);
  }
  const { frameId: nowFrame, url } = await mainFrame(ctx, id);
  if (answer.error === 'timeout')
    throw serverError(`Page tool "${name}" in tab ${id} did not answer within ${PAGE_TOOL_TIMEOUT_MS / 1000} s`);
  if (answer.error === 'frame-gone')
    throw serverError(`The frame of page tool "${name}" in tab ${id} is gone; call pageTools for the current tools`);
  if (answer.error === 'no-testing-api')
    throw serverError(`This browser cannot call the page's tools from outside; ${FLAGS_HINT}`);
  if (answer.error === 'threw') {
    if (startFrame !== nowFrame)
      throw await navigatedError(ctx, id, name);
    throw pageToolError(name, id, answer, ctx.debuggers.webmcp?.lastResponse(id, name));
  }
  return { tabId: id, url, name, result: answer.result, ...(startFrame !== nowFrame ? { navigated: true } : {}) };
}

/** The main frame's loader (changes on every new document) and the tab's URL. */
async function mainFrame(ctx, tabId) {
  const { frameTree } = await ctx.debuggers.send(tabId, 'Page.getFrameTree', {}).catch(() => ({ frameTree: undefined }));
  return { frameId: frameTree?.frame?.loaderId, url: frameTree?.frame?.url };
}

async function navigatedError(ctx, tabId, name) {
  // The document the tab now shows, as DevTools knows it: chrome.tabs may still report the old URL.
  const { url: now } = await mainFrame(ctx, tabId);
  const tab = now ? undefined : await chrome.tabs.get(tabId).catch(() => undefined);
  const url = now || tab?.pendingUrl || tab?.url;
  return serverError(`Tab ${tabId} navigated${url ? ` to ${url}` : ''} while page tool "${name}" ran; ` +
      'its answer is lost and the old page\'s tools are gone; call pageTools for the new page\'s tools');
}
