// Issue 26's pure parts: the per-tab record of the CDP WebMCP events, how a listed tool is
// described, how a failed call is worded, the commands' params, the agent documents' script,
// and a page tool asking for the person against a fake page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMANDS, runCommand } from '../lib/commands.js';
import { validateParams } from '../lib/params.js';
import { PersonRequests } from '../lib/person-requests.js';
import { ErrorCode } from '../lib/rpc.js';
import { TabOwnership } from '../lib/tabs.js';
import { WebMcpTools, describeTool, pageToolError } from '../lib/webmcp.js';

const tool = (name, frameId = 'main', extra = {}) => ({ name, description: `${name} does it`, frameId, ...extra });

test('tools come and go per tab, and a new document in the main frame forgets them all', () => {
  const store = new WebMcpTools();
  store.handle({ tabId: 1 }, 'Page.frameNavigated', { frame: { id: 'main', url: 'http://a/' } });
  store.handle({ tabId: 1 }, 'WebMCP.toolsAdded', { tools: [tool('add'), tool('sub'), tool('add', 'child')] });
  store.handle({ tabId: 2 }, 'WebMCP.toolsAdded', { tools: [tool('other')] });
  assert.deepEqual(store.tools(1).map(t => `${t.frameId}:${t.name}`), ['main:add', 'main:sub', 'child:add']);
  assert.equal(store.find(1, 'add').frameId, 'main', 'the main frame\'s tool first');
  store.handle({ tabId: 1 }, 'WebMCP.toolsRemoved', { tools: [tool('sub')] });
  assert.deepEqual(store.tools(1).map(t => t.name), ['add', 'add']);
  // A child frame's new document forgets only that frame's tools.
  store.handle({ tabId: 1 }, 'Page.frameNavigated', { frame: { id: 'child', parentId: 'main', url: 'http://a/f' } });
  assert.deepEqual(store.tools(1).map(t => t.frameId), ['main']);
  store.handle({ tabId: 1 }, 'Page.frameNavigated', { frame: { id: 'main', url: 'http://b/' } });
  assert.deepEqual(store.tools(1), []);
  assert.deepEqual(store.tools(2).map(t => t.name), ['other'], 'another tab is untouched');
  // Events of a child session (an OOPIF) or without a tab are not this record's.
  store.handle({ tabId: 2, sessionId: 's' }, 'WebMCP.toolsAdded', { tools: [tool('oopif')] });
  store.handle({}, 'WebMCP.toolsAdded', { tools: [tool('nowhere')] });
  assert.deepEqual(store.tools(2).map(t => t.name), ['other']);
  store.forget(2);
  assert.deepEqual(store.tools(2), []);
});

test('the page\'s answer to the latest call of a tool is kept for its error', () => {
  const store = new WebMcpTools();
  store.handle({ tabId: 1 }, 'WebMCP.toolInvoked', { toolName: 'boom', frameId: 'main', invocationId: 'i1', input: '{}' });
  store.handle({ tabId: 1 }, 'WebMCP.toolResponded', {
    invocationId: 'i1', status: 'Error', errorText: '', exception: { description: 'Error: kaboom\n    at execute (http://a/:6:98)' },
  });
  const error = pageToolError('boom', 1, { message: 'Tool was executed but the invocation failed.' }, store.lastResponse(1, 'boom'));
  assert.equal(error.code, ErrorCode.SERVER_ERROR);
  assert.match(error.message, /Page tool "boom" in tab 1 failed; the page says: Error: kaboom$/);
  assert.equal(store.lastResponse(1, 'other'), undefined);
  for (let i = 0; i < 50; i++)
    store.handle({ tabId: 1 }, 'WebMCP.toolResponded', { invocationId: `x${i}`, status: 'Success' });
  assert.equal(store.lastResponse(1, 'boom'), undefined, 'only recent answers are kept');
});

test('a failed call says whether the tool is gone, or asked for the person before the extension could ask them', () => {
  assert.match(pageToolError('gone', 3, { message: 'Tool not found: gone' }, undefined).message,
      /Tab 3 has no page tool "gone" any more.*call pageTools/);
  // Chromium 148 gave the tool no client; 156 gives one without requestUserInteraction.
  for (const description of ["TypeError: Cannot read properties of undefined (reading 'requestUserInteraction')",
    'TypeError: client.requestUserInteraction is not a function']) {
    const asked = pageToolError('ask', 3, { message: 'failed' }, { exception: { description } });
    assert.match(asked.message, /asked for the person's interaction \(requestUserInteraction\), but the page registered it before the extension/);
    assert.match(asked.message, /Reload the page .* then the person is asked/);
  }
});

test('a listed tool is described with its schema parsed, and a form without autosubmit needs the person', () => {
  const listed = { name: 'add', description: 'Adds', inputSchema: '{"type":"object","properties":{"a":{"type":"number"}}}', frame: '', form: false, autosubmit: false };
  assert.deepEqual(describeTool(listed, undefined), {
    name: 'add', description: 'Adds', inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
    annotations: {}, frameId: null, frame: '', needsUserInteraction: false,
  });
  const reported = tool('add', 'F1', { annotations: { readOnly: true } });
  assert.deepEqual(describeTool(listed, reported).frameId, 'F1');
  assert.deepEqual(describeTool(listed, reported).annotations, { readOnly: true });
  const noSchema = describeTool({ ...listed, inputSchema: '' }, undefined);
  assert.deepEqual(noSchema.inputSchema, { type: 'object', properties: {} });
  const broken = describeTool({ ...listed, inputSchema: '{not json' }, undefined);
  assert.deepEqual(broken.inputSchema, { type: 'object', properties: {} });
  const form = describeTool({ ...listed, form: true, autosubmit: false }, undefined);
  assert.equal(form.needsUserInteraction, true);
  assert.deepEqual(form.annotations, { autosubmit: false });
  assert.equal(describeTool({ ...listed, form: true, autosubmit: true }, undefined).needsUserInteraction, false);
});

test('pageTools and callPageTool take a tab, a tool name and object arguments', () => {
  assert.doesNotThrow(() => validateParams(COMMANDS.pageTools.params, { tabId: 4 }));
  assert.doesNotThrow(() => validateParams(COMMANDS.callPageTool.params, { name: 'add', arguments: { a: 1 } }));
  assert.throws(() => validateParams(COMMANDS.callPageTool.params, { arguments: {} }),
      error => error.code === ErrorCode.INVALID_PARAMS);
  assert.throws(() => validateParams(COMMANDS.callPageTool.params, { name: '' }),
      error => error.code === ErrorCode.INVALID_PARAMS);
  assert.throws(() => validateParams(COMMANDS.callPageTool.params, { name: 'add', arguments: 'a=1' }),
      error => error.code === ErrorCode.INVALID_PARAMS);
});

test('the agent documents\' script keeps a tool\'s exception, passes results through, and reports changes once installed', async () => {
  const { runInNewContext } = await import('node:vm');
  const { WEBMCP_BINDING, WEBMCP_SCRIPT } = await import('../lib/webmcp.js');
  const registered = [];
  const listeners = [];
  const told = [];
  const window = {};
  const document = {
    modelContext: { registerTool(tool) { registered.push(tool); }, addEventListener: (type, fn) => listeners.push([type, fn]) },
  };
  window[WEBMCP_BINDING] = what => told.push(what);
  const sandbox = { window, document, navigator: {}, Symbol, Object, String, Promise, Error };
  runInNewContext(WEBMCP_SCRIPT, sandbox);
  runInNewContext(WEBMCP_SCRIPT, sandbox);
  assert.equal(listeners.length, 1, 'installed once per document');
  assert.equal(listeners[0][0], 'toolchange');
  document.modelContext.registerTool({ name: 'ok', execute: async ({ a }) => ({ twice: a * 2 }) });
  document.modelContext.registerTool({ name: 'bad', execute: () => { throw new RangeError('too many'); } });
  assert.deepEqual(await registered[0].execute({ a: 2 }), { twice: 4 });
  await assert.rejects(registered[1].execute({}), /too many/);
  const state = window[Symbol.for('mcp-relay.webmcp')];
  assert.equal(state.errors.bad, 'RangeError: too many');
  assert.equal(state.errors.ok, undefined);
  listeners[0][1]();
  assert.deepEqual(told, ['changed']);
});

test('a call the extension made is held at requestUserInteraction until the person answers; anyone else\'s keeps its own client', async () => {
  const { runInNewContext } = await import('node:vm');
  const { WEBMCP_SCRIPT } = await import('../lib/webmcp.js');
  const registered = [];
  const window = {};
  const document = { modelContext: { registerTool(tool) { registered.push(tool); } } };
  runInNewContext(WEBMCP_SCRIPT, { window, document, navigator: {}, Symbol, Object, String, Promise, Error });
  const ran = [];
  document.modelContext.registerTool({
    name: 'buy',
    execute: async (input, client) => client.requestUserInteraction(() => { ran.push('callback'); return 'bought'; }),
  });
  const [buy] = registered;
  const state = window[Symbol.for('mcp-relay.webmcp')];
  const signal = new AbortController().signal;

  // The extension's call: held, with the signal Chromium gave kept beside the new method.
  state.expected.buy = ['c1'];
  const allowed = buy.execute({}, { signal });
  await new Promise(resolve => setTimeout(resolve, 0));
  assert.deepEqual(ran, [], 'nothing runs before the person answers');
  assert.equal(state.interactions.c1.tool, 'buy');
  state.interactions.c1.grant();
  assert.equal(await allowed, 'bought');
  assert.deepEqual(ran, ['callback']);

  state.expected.buy = ['c2'];
  const refused = buy.execute({}, { signal });
  await new Promise(resolve => setTimeout(resolve, 0));
  state.interactions.c2.refuse('The person declined the interaction this tool asked for');
  await assert.rejects(refused, /The person declined/);
  assert.deepEqual(ran, ['callback'], 'a refused call never runs the page\'s callback');

  // Another caller (no call of the extension's expected): the client Chromium gave, as it is.
  await assert.rejects(buy.execute({}, { signal }), /requestUserInteraction is not a function/);
  assert.deepEqual(Object.keys(state.interactions), ['c1', 'c2'], 'the other caller\'s call held nothing');
});

/**
 * A connection on tab 7, whose page has the tool `buy`, which asks for the person: the page
 * functions are not run here; the fake answers what the page would, and records what the
 * extension told it.
 */
function askingPage() {
  const told = [];
  const debuggers = {
    send: async (tabId, method, params) => {
      if (method === 'Page.getFrameTree')
        return { frameTree: { frame: { loaderId: 'L1', url: 'https://shop.test/' } } };
      const expression = params?.expression ?? '';
      if (expression.startsWith('(async function listPageTools'))
        return { result: { value: { api: true, testing: true, tools: [{ name: 'buy', description: 'Buys', inputSchema: '', frame: '', form: false, autosubmit: false }] } } };
      if (expression.startsWith('(function executePageTool'))
        return { result: { value: { error: 'needs-person' } } };
      if (expression.startsWith('(function continuePageTool')) {
        const allowed = /, (true|false), /.exec(expression)[1] === 'true';
        told.push(allowed ? 'allowed' : JSON.parse(/, false, ("[^"]*"), /.exec(expression)[1]));
        return { result: { value: allowed ? { ok: true, result: 'bought' } : { refused: true } } };
      }
      throw new Error(`unexpected ${method}`);
    },
  };
  const tabs = new TabOwnership();
  tabs.select('conn-1', 7);
  // No "ask before" rule anywhere: the page's asking is enough.
  const ctx = { connectionId: 'conn-1', tabs, debuggers, person: new PersonRequests(), assistantName: 'Claude', askBefore: { forms: false, purchases: false } };
  return { ctx, told };
}

test('a page tool asking for the person asks them without any rule: Allow answers the page\'s result', async () => {
  globalThis.chrome = { tabs: { get: async id => ({ id, url: 'https://shop.test/', title: 'Shop' }) } };
  try {
    const { ctx, told } = askingPage();
    const calling = runCommand(ctx, 'callPageTool', { name: 'buy' });
    await new Promise(resolve => setTimeout(resolve, 20));
    const [ask] = ctx.person.waiting();
    assert.equal(ask.kind, 'ask');
    assert.equal(ask.assistant, 'Claude');
    assert.deepEqual(ask.page, { url: 'https://shop.test/', title: 'Shop' });
    assert.match(ask.reason, /^run the page's tool “buy”, which asks for you in the tab \(the page wants your interaction\)$/);
    assert.deepEqual(told, [], 'the page waits for the answer');
    ctx.person.answer(ask.id, 'allowed');
    assert.equal((await calling).result, 'bought');
    assert.deepEqual(told, ['allowed']);
  } finally {
    delete globalThis.chrome;
  }
});

test('Deny tells the page\'s tool and refuses the assistant with words it must not retry', async () => {
  globalThis.chrome = { tabs: { get: async id => ({ id, url: 'https://shop.test/', title: 'Shop' }) } };
  try {
    const { ctx, told } = askingPage();
    const calling = runCommand(ctx, 'callPageTool', { name: 'buy' });
    await new Promise(resolve => setTimeout(resolve, 20));
    ctx.person.answer(ctx.person.waiting()[0].id, 'denied');
    await assert.rejects(calling, /denied this step.*The page's tool was told the person declined, and its call was cancelled\. Do not retry it/s);
    assert.deepEqual(told, ['The person declined the interaction this tool asked for']);
  } finally {
    delete globalThis.chrome;
  }
});
