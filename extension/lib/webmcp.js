/**
 * WebMCP (issue 26): the tools a page registers itself (`document.modelContext.registerTool`,
 * `navigator.modelContext` before Chromium 156, or a `<form toolname=…>`), listed and called for the agent that owns the tab.
 *
 * What Chromium offers, checked in the real browser:
 * - Chromium 156 (feature `WebMCP`): the page API `document.modelContext.registerTool({name,
 *   description, inputSchema, execute}, {signal})`, and `getTools()` (every frame's tools, each
 *   with its `window`) and `executeTool(tool, input, {signal})` on the same object: the way to
 *   call a tool from outside the page; aborting the signal cancels the invocation (the tool's
 *   own `client.signal` aborts and the page gets `toolcancel`). The tool's `client` has only
 *   `signal`: no `requestUserInteraction`.
 * - Chromium 148: `navigator.modelContext.registerTool(…)`, and `navigator.modelContextTesting`
 *   `.listTools()` / `.executeTool(name, inputJson)` (feature `WebMCPTesting`, chrome://flags
 *   "WebMCP for testing"); the tool got no `client` at all.
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

import { ASK_WAIT_MS, askPersonFirst } from './commands/ask-before.js';
import { targetTab } from './commands/shared.js';
import { invalidParams, serverError } from './rpc.js';

export { WebMcpTools } from './webmcp-store.js';
export { WEBMCP_BINDING, WEBMCP_SCRIPT } from './webmcp-script.js';

/** A page tool's call may take this long before the agent is told it timed out. */
export const PAGE_TOOL_TIMEOUT_MS = 30_000;
/**
 * A call that asks the person ends within this long, from its start to the page's answer after
 * their Allow: under the relay's (and hosts') 60 s request timeout, so the assistant hears the
 * outcome rather than a timeout. The person's answer is awaited at most ASK_WAIT_MS of it.
 */
export const PAGE_TOOL_ASKING_BOUND_MS = 55_000;
/** After the person's Allow, the page's callback gets at least this long. */
const AFTER_ALLOW_MIN_MS = 10_000;
/** What the browser must be started with for the tools to be listed and called. */
export const WEBMCP_FEATURES = 'WebMCP,WebMCPTesting,DevToolsWebMCPSupport';
const FLAGS_HINT = `start Chrome with --enable-features=${WEBMCP_FEATURES} (or turn on chrome://flags "WebMCP for testing")`;
/**
 * Runs in the page: the tools of this frame and of every same-origin frame below it.
 * Cross-origin frames are skipped (their tools are another site's). `frame` is the path of
 * `frames` indexes from the top ("" for the main frame). Chromium 156 lists every frame's tools
 * from the top (`document.modelContext.getTools()`, each with its `window`); Chromium 148 lists
 * each frame's own through `navigator.modelContextTesting.listTools()`.
 */
export async function listPageTools() {
  const modern = document.modelContext;
  const out = {
    api: typeof (modern ?? navigator.modelContext) === 'object',
    testing: typeof modern?.executeTool === 'function' || typeof navigator.modelContextTesting === 'object',
    tools: [],
  };
  const frames = [];
  const walk = (win, path) => {
    let doc;
    try {
      doc = win.document;
      if (win.location.origin !== location.origin)
        return;
    } catch {
      return;
    }
    frames.push({ win, doc, path });
    for (let i = 0; i < win.frames.length; i++)
      walk(win.frames[i], path === '' ? String(i) : `${path}.${i}`);
  };
  walk(window, '');
  const add = (tool, { doc, path }) => {
    let form = null;
    try {
      form = doc.querySelector(`form[toolname="${CSS.escape(tool.name)}"]`);
    } catch {
      // Not a selector-safe name: then it is no form's tool either.
    }
    const schema = tool.inputSchema ?? '';
    out.tools.push({
      name: tool.name,
      description: tool.description ?? '',
      inputSchema: typeof schema === 'string' ? schema : JSON.stringify(schema),
      frame: path,
      form: !!form,
      autosubmit: !!form && form.hasAttribute('toolautosubmit'),
    });
  };
  if (typeof modern?.getTools === 'function') {
    for (const tool of await modern.getTools()) {
      const frame = frames.find(f => f.win === tool.window);
      if (frame)
        add(tool, frame);
    }
    return out;
  }
  for (const frame of frames) {
    const testing = frame.win.navigator.modelContextTesting;
    if (testing && typeof testing.listTools === 'function') {
      for (const tool of testing.listTools())
        add(tool, frame);
    }
  }
  return out;
}

/**
 * Runs in the page: calls one tool in the frame at `framePath`, bounded by `timeoutMs`, as the
 * call `callId`: through `document.modelContext.executeTool` (Chromium 156, with a signal that
 * cancels the invocation) or `navigator.modelContextTesting.executeTool` (Chromium 148).
 *
 * A tool that calls `requestUserInteraction` is held there (WEBMCP_SCRIPT gives the extension's
 * calls that client): the answer is `{error: 'needs-person'}` at once, and
 * {@link continuePageTool} goes on once the person has answered.
 *
 * @param {string} framePath
 * @param {string} callId
 * @param {string} name
 * @param {string} input JSON
 * @param {number} timeoutMs
 */
export function executePageTool(framePath, callId, name, input, timeoutMs) {
  let win = window;
  for (const index of framePath === '' ? [] : framePath.split('.')) {
    win = win.frames[Number(index)];
    if (!win)
      return { error: 'frame-gone' };
  }
  const modern = win.document.modelContext;
  const testing = win.navigator.modelContextTesting;
  if (typeof modern?.executeTool !== 'function' && !testing)
    return { error: 'no-testing-api' };
  // The document script's record (one an older extension left in this document has no queue).
  const found = win[Symbol.for('mcp-relay.webmcp')];
  const state = found?.expected ? found : undefined;
  const controller = new AbortController();
  if (state) {
    delete state.errors[name];
    (state.expected[name] ??= []).push(callId);
    state.calls[callId] = { controller };
  }
  let timer;
  let watch;
  const timeout = new Promise(resolve => {
    timer = setTimeout(() => resolve({ error: 'timeout', ms: timeoutMs }), timeoutMs);
  });
  const run = async () => {
    if (typeof modern?.executeTool !== 'function')
      return testing.executeTool(name, input);
    const tool = (await modern.getTools()).find(candidate => candidate.name === name && candidate.window === win);
    if (!tool)
      throw new Error(`Tool not found: ${name}`);
    return modern.executeTool(tool, JSON.parse(input), { signal: controller.signal });
  };
  const call = run()
      .then(result => ({ ok: true, result: result ?? null }), error => ({ error: 'threw', message: String(error?.message ?? error), pageError: state?.errors[name] }))
      .finally(() => {
        // A call that never reached the tool leaves no id for another caller's call to take.
        const queued = state?.expected[name];
        if (queued?.includes(callId))
          queued.splice(queued.indexOf(callId), 1);
      });
  if (state)
    state.calls[callId].call = call;
  const asks = new Promise(resolve => {
    if (!state)
      return;
    watch = setInterval(() => {
      if (state.interactions[callId])
        resolve({ error: 'needs-person' });
    }, 50);
  });
  return Promise.race([call, timeout, asks]).then(answer => {
    // Over time: the page's tool is told its call was cancelled, and the page goes on.
    if (answer.error === 'timeout') {
      controller.abort();
      delete state?.interactions[callId];
    }
    if (answer.error !== 'needs-person' && state)
      delete state.calls[callId];
    return answer;
  }).finally(() => {
    clearTimeout(timer);
    clearInterval(watch);
  });
}

/**
 * Runs in the page: goes on with the call `callId` that {@link executePageTool} held at
 * `requestUserInteraction`. With `allowed`, the page's callback runs and the call's answer is
 * awaited (bounded by `timeoutMs`). Without, `requestUserInteraction` rejects with `message`
 * (the page's tool may catch it and tell its own user), and the invocation is cancelled, so
 * nothing of the call stays pending in the page whatever the tool does with the rejection.
 *
 * @param {string} framePath
 * @param {string} callId
 * @param {boolean} allowed
 * @param {string} message
 * @param {number} timeoutMs
 */
export function continuePageTool(framePath, callId, allowed, message, timeoutMs) {
  let win = window;
  for (const index of framePath === '' ? [] : framePath.split('.')) {
    win = win.frames[Number(index)];
    if (!win)
      return { error: 'frame-gone' };
  }
  const state = win[Symbol.for('mcp-relay.webmcp')];
  const interaction = state?.interactions?.[callId];
  const pending = state?.calls?.[callId];
  if (!interaction || !pending)
    return { error: 'frame-gone' };
  delete state.interactions[callId];
  if (!allowed) {
    interaction.refuse(message);
    pending.controller.abort();
    delete state.calls[callId];
    return { refused: true };
  }
  interaction.grant();
  let timer;
  const timeout = new Promise(resolve => {
    timer = setTimeout(() => resolve({ error: 'timeout', ms: timeoutMs }), timeoutMs);
  });
  return Promise.race([pending.call, timeout]).then(answer => {
    if (answer.error === 'timeout')
      pending.controller.abort();
    delete state.calls[callId];
    return answer;
  }).finally(() => clearTimeout(timer));
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
  // Only a tool the page registered before the extension's script was in the document lacks
  // the client that asks the person (WEBMCP_SCRIPT): Chromium's own has no such method.
  if (/reading 'requestUserInteraction'|requestUserInteraction is not a function/.test(pageSays))
    return serverError(`Page tool "${name}" in tab ${tabId} asked for the person's interaction (requestUserInteraction), but the page ` +
        'registered it before the extension was attached to the tab, so the person could not be asked; nothing was answered for them. ' +
        'Reload the page (browser_navigate to it again) and call the tool again: then the person is asked.');
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
    expression: `(${listPageTools.toString()})()`, returnByValue: true, awaitPromise: true,
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
    throw serverError(`This browser cannot call the page's tools from outside (neither document.modelContext.executeTool nor navigator.modelContextTesting); ${FLAGS_HINT}`);
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
  const started = Date.now();
  const callId = crypto.randomUUID();
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
  // Which frame's call: the first two arguments of both page functions.
  const which = `${JSON.stringify(tool.frame)}, ${JSON.stringify(callId)}`;
  let answer = await inPage(`(${executePageTool.toString()})(${which}, ${JSON.stringify(name)}, ${JSON.stringify(JSON.stringify(args))}, ${PAGE_TOOL_TIMEOUT_MS})`);
  if (answer.error === 'needs-person')
    answer = await askForPageTool(ctx, { tabId: id, name, started, go: (allowed, message, timeoutMs) =>
      inPage(`(${continuePageTool.toString()})(${which}, ${allowed}, ${JSON.stringify(message)}, ${timeoutMs})`) });
  const { frameId: nowFrame, url } = await mainFrame(ctx, id);
  if (answer.error === 'timeout')
    throw serverError(`Page tool "${name}" in tab ${id} did not answer within ${Math.round(answer.ms / 1000)} s; its call was cancelled`);
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

/**
 * A page tool held at `requestUserInteraction`: the person is asked in the popup (Allow /
 * Deny, with the page, the tool and the assistant), whatever their "ask before" rules, since
 * the page asked for them and nobody may answer in their place. Allow runs the page's callback
 * and answers what the tool then answers; Deny, or no answer within the wait, tells the page's
 * tool (its `requestUserInteraction` rejects) and cancels the call, so nothing of it stays
 * pending in the page, and the assistant is refused. An unanswered prompt is withdrawn: the
 * call it was for is over, and a later Allow must not seem to do something.
 *
 * @param {import('./commands.js').CommandContext} ctx
 * @param {{tabId: number, name: string, started: number,
 *   go: (allowed: boolean, message: string, timeoutMs: number) => Promise<any>}} call
 */
async function askForPageTool(ctx, { tabId, name, started, go }) {
  const elapsed = () => Date.now() - started;
  try {
    await askPersonFirst(ctx, {
      tabId, method: 'callPageTool', verb: 'run the page\'s tool', words: `“${name}”, which asks for you in the tab`,
      reasons: ['the page wants your interaction'],
      deniedNote: 'the page\'s tool was told the person declined, and its call was cancelled',
      waitMs: Math.max(5_000, Math.min(ASK_WAIT_MS, PAGE_TOOL_ASKING_BOUND_MS - AFTER_ALLOW_MIN_MS - elapsed())),
      unanswered: 'withdraw',
      unansweredNote: 'the page\'s tool was told, and its call was cancelled',
    });
  } catch (error) {
    const why = /denied this step/.test(String(error?.message))
      ? 'The person declined the interaction this tool asked for'
      : 'The person did not answer in time; the interaction this tool asked for did not happen';
    await go(false, why, 0).catch(() => {});
    throw error;
  }
  return go(true, '', Math.min(PAGE_TOOL_TIMEOUT_MS, Math.max(AFTER_ALLOW_MIN_MS, PAGE_TOOL_ASKING_BOUND_MS - elapsed())));
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
