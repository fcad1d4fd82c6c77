// Issue 26's pure parts: the per-tab record of the CDP WebMCP events, how a listed tool is
// described, how a failed call is worded, and the commands' params.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMANDS } from '../lib/commands.js';
import { validateParams } from '../lib/params.js';
import { ErrorCode } from '../lib/rpc.js';
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

test('a failed call says whether the tool is gone or wanted the person', () => {
  assert.match(pageToolError('gone', 3, { message: 'Tool not found: gone' }, undefined).message,
      /Tab 3 has no page tool "gone" any more.*call pageTools/);
  const asked = pageToolError('ask', 3, { message: 'failed' }, {
    exception: { description: "TypeError: Cannot read properties of undefined (reading 'requestUserInteraction')" },
  });
  assert.match(asked.message, /asked for the person's interaction \(requestUserInteraction\); it was not answered for them/);
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
  const navigator = {
    modelContext: { registerTool(tool) { registered.push(tool); } },
    modelContextTesting: { addEventListener: (type, fn) => listeners.push([type, fn]) },
  };
  window[WEBMCP_BINDING] = what => told.push(what);
  const sandbox = { window, navigator, Symbol, Object, String };
  runInNewContext(WEBMCP_SCRIPT, sandbox);
  runInNewContext(WEBMCP_SCRIPT, sandbox);
  assert.equal(listeners.length, 1, 'installed once per document');
  navigator.modelContext.registerTool({ name: 'ok', execute: async ({ a }) => ({ twice: a * 2 }) });
  navigator.modelContext.registerTool({ name: 'bad', execute: () => { throw new RangeError('too many'); } });
  assert.deepEqual(await registered[0].execute({ a: 2 }), { twice: 4 });
  await assert.rejects(registered[1].execute({}), /too many/);
  const state = window[Symbol.for('mcp-relay.webmcp')];
  assert.equal(state.errors.bad, 'RangeError: too many');
  assert.equal(state.errors.ok, undefined);
  listeners[0][1]();
  assert.deepEqual(told, ['changed']);
});
