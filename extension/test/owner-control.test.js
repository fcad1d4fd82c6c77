// OwnerControl with chrome.* faked in memory: a forwarded request is refused with -32010 until the
// owner allows the assistant, off-limits sites are refused before anything runs, and a tab dragged
// out of the assistant's group is taken back with a clear error on the next call.
import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { TabOwnership } from '../lib/tabs.js';

let stored;
let tabs;
/** How often the popup's state was written and what the badge was set to. */
let calls;
function installFakeChrome() {
  stored = { local: {}, session: {} };
  tabs = new Map([[5, { id: 5, windowId: 1, groupId: -1, url: 'https://ok.test/' }]]);
  const area = name => ({
    get: async keys => Object.fromEntries([keys].flat().filter(k => k in stored[name]).map(k => [k, structuredClone(stored[name][k])])),
    set: async values => { Object.assign(stored[name], structuredClone(values)); },
  });
  let nextGroup = 100;
  calls = { sessionWrites: 0, badgeTexts: [] };
  const session = area('session');
  globalThis.chrome = {
    storage: { local: area('local'), session: { ...session, set: async values => { calls.sessionWrites += 1; await session.set(values); } } },
    action: { setBadgeText: async ({ text }) => { calls.badgeTexts.push(text); }, setBadgeBackgroundColor: async () => {} },
    runtime: { getURL: path => path },
    notifications: { create: async () => {}, clear: async () => {} },
    tabs: {
      get: async id => { if (!tabs.has(id)) throw new Error('no tab'); return tabs.get(id); },
      group: async ({ tabIds, groupId }) => { const id = groupId ?? nextGroup++; tabs.get(tabIds).groupId = id; return id; },
      ungroup: async id => { tabs.get(id).groupId = -1; },
    },
    tabGroups: { update: async () => {} },
  };
}

const { ACTIONS_PUBLISH_MS, OwnerControl } = await import('../lib/owner-control.js');

/** Past the delay within which a command's entry among recent actions is written. */
const published = () => new Promise(resolve => setTimeout(resolve, ACTIONS_PUBLISH_MS + 20));

function setUp(devConfig = null) {
  const closed = [];
  const owner = new OwnerControl({ devConfig: Promise.resolve(devConfig), closeConnection: async (id, reason) => closed.push({ id, reason }) });
  const connections = { tabs: new TabOwnership(), debuggers: { detach: async () => {} } };
  owner.attach(connections);
  owner.relayStateChanged({ state: 'authenticated', userId: 'alice' });
  const ctx = { connectionId: 'conn-1', tabs: connections.tabs };
  const select = async c => { c.tabs.select(c.connectionId, 5); return { tabId: 5, url: tabs.get(5).url }; };
  return { owner, ctx, closed, connections, select };
}

beforeEach(installFakeChrome);

test('a new assistant is refused with -32010 until allowed once, and Deny asks the relay to close it', async () => {
  const { owner, ctx, closed } = setUp();
  await owner.connectionOpened({ connection_id: 'conn-1', client_id: 'c1', client_name: 'Claude Desktop' });
  let ran = 0;
  const run = async () => { ran += 1; return {}; };
  await assert.rejects(owner.run(ctx, 'getTabs', {}, run), { code: -32010, message: /"Claude Desktop"/ });
  assert.equal(ran, 0);
  await owner.decide('conn-1', 'once');
  await owner.run(ctx, 'getTabs', {}, run);
  assert.equal(ran, 1);
  await owner.decide('conn-1', 'deny');
  assert.deepEqual(closed, [{ id: 'conn-1', reason: "the browser's owner denied this assistant" }]);
});

test('"Deny" is remembered: the same assistant is later refused without a notification until allowed once, which forgets the denial', async () => {
  const { owner, ctx, closed } = setUp({ autoAllow: true });
  await owner.connectionOpened({ connection_id: 'conn-1', client_id: 'c1', client_name: 'Claude Desktop' });
  await owner.decide('conn-1', 'deny');
  assert.equal(closed.length, 1);
  owner.connectionClosed('conn-1');
  let notified = 0;
  chrome.notifications.create = async () => { notified += 1; };
  await owner.connectionOpened({ connection_id: 'conn-2', client_id: 'c1', client_name: 'Claude Desktop' });
  const later = { ...ctx, connectionId: 'conn-2' };
  await assert.rejects(owner.run(later, 'getTabs', {}, async () => assert.fail('ran')),
    error => error.code === -32010 && error.data?.decision === 'denied' && /denied "Claude Desktop"/.test(error.message));
  assert.equal(notified, 0);
  assert.equal(stored.session.assistants[0].denied, true);
  await owner.decide('conn-2', 'once');
  await owner.run(later, 'getTabs', {}, async () => ({}));
  assert.deepEqual(stored.local.deniedAssistants, {});
});

test('"Always allow" is stored and lets the same assistant in on its next connection, until revoked', async () => {
  const { owner, ctx } = setUp();
  await owner.connectionOpened({ connection_id: 'conn-1', client_id: 'c1', client_name: 'Claude Desktop' });
  await owner.decide('conn-1', 'always');
  owner.connectionClosed('conn-1');
  await owner.connectionOpened({ connection_id: 'conn-2', client_id: 'c1', client_name: 'Claude Desktop' });
  await owner.run({ ...ctx, connectionId: 'conn-2' }, 'getTabs', {}, async () => ({}));
  const [key] = Object.keys(stored.local.allowedAssistants);
  await owner.revoke(key);
  await assert.rejects(owner.run({ ...ctx, connectionId: 'conn-2' }, 'getTabs', {}, async () => ({})), { code: -32010 });
});

test('an off-limits URL is refused before the command runs, and a tab showing one is taken back', async () => {
  const { owner, ctx, select } = setUp({ autoAllow: true, blockedSites: ['*.mybank.com'] });
  await assert.rejects(owner.run(ctx, 'browser_navigate', { url: 'https://www.mybank.com/' }, async () => assert.fail('ran')),
    /www\.mybank\.com is off limits/);
  await owner.run(ctx, 'selectTab', { tabId: 5 }, select);
  tabs.get(5).url = 'https://mybank.com/login';
  await assert.rejects(owner.run(ctx, 'snapshot', {}, async () => assert.fail('ran')), /tab 5\) is off limits/);
  assert.equal(ctx.tabs.ownerOf(5), undefined);
});

test('the assistant\'s tabs are grouped; a tab dragged out is refused to it with a clear error, dragged back in is its own again', async () => {
  const { owner, ctx, select } = setUp({ autoAllow: true });
  await owner.connectionOpened({ connection_id: 'conn-1', client_name: 'Claude Desktop' });
  await owner.run(ctx, 'selectTab', { tabId: 5 }, select);
  const groupId = tabs.get(5).groupId;
  assert.ok(groupId >= 100);
  await owner.tabUpdated(5, { groupId: -1 });
  assert.equal(ctx.tabs.ownerOf(5), undefined);
  await assert.rejects(owner.run(ctx, 'click', { tabId: 5 }, async () => assert.fail('ran')), /tab 5 was taken back by the browser's owner/);
  const noCurrent = async () => { throw new Error('This MCP connection has no current tab; call createTab'); };
  await assert.rejects(owner.run(ctx, 'snapshot', {}, noCurrent), /tab 5 was taken back/);
  await owner.tabUpdated(5, { groupId });
  assert.equal(ctx.tabs.ownerOf(5), 'conn-1');
});

test('a tab that leaves its group because it closes is gone, not "taken back"', async () => {
  const { owner, ctx, select } = setUp({ autoAllow: true });
  await owner.connectionOpened({ connection_id: 'conn-1', client_name: 'Claude Desktop' });
  await owner.run(ctx, 'selectTab', { tabId: 5 }, select);
  await owner.tabUpdated(5, { groupId: -1 });
  owner.tabRemoved(5);
  const noCurrent = async () => { throw new Error('This MCP connection has no current tab; call createTab'); };
  await assert.rejects(owner.run(ctx, 'snapshot', {}, noCurrent), /no current tab/);
});

test('the popup gets name, tabs and the last five actions, methods only', async () => {
  const { owner, ctx, select } = setUp({ autoAllow: true });
  await owner.connectionOpened({ connection_id: 'conn-1', client_name: 'Claude Desktop' });
  await owner.run(ctx, 'selectTab', { tabId: 5 }, select);
  for (let i = 0; i < 6; i += 1)
    await owner.run(ctx, 'evaluate', { expression: 'secret()' }, async () => ({}));
  await published();
  const [shown] = stored.session.assistants;
  assert.equal(shown.name, 'Claude Desktop');
  assert.deepEqual(shown.tabs, [5]);
  assert.equal(shown.actions.length, 5);
  assert.ok(shown.actions.every(action => action.method === 'evaluate' && Object.keys(action).length === 2));
});

test('a run of quick commands writes the popup\'s state once, not before and after each, and leaves the badge alone', async () => {
  const { owner, ctx, select } = setUp({ autoAllow: true });
  await owner.connectionOpened({ connection_id: 'conn-1', client_name: 'Claude Desktop' });
  await owner.run(ctx, 'selectTab', { tabId: 5 }, select);
  await published();
  const [writesBefore, badgesBefore] = [calls.sessionWrites, calls.badgeTexts.length];
  assert.deepEqual(calls.badgeTexts.at(-1), '1', 'one allowed assistant');
  for (let i = 0; i < 10; i += 1)
    await owner.run(ctx, 'snapshot', {}, async () => ({}));
  assert.equal(calls.sessionWrites, writesBefore, 'nothing written while the commands ran');
  await published();
  assert.equal(calls.sessionWrites, writesBefore + 1, 'then once');
  assert.equal(stored.session.assistants[0].actions.at(-1).method, 'snapshot');
  assert.equal(calls.badgeTexts.length, badgesBefore, 'the badge did not change, so it was not set again');
  // A decision is written at once: the person sees the assistant go.
  await owner.decide('conn-1', 'deny');
  assert.equal(calls.sessionWrites, writesBefore + 2);
  assert.equal(calls.badgeTexts.at(-1), 'ON');
});

test('a command reuses the read of its tab the owner\'s checks just made, and reads it again once that is stale', async () => {
  const { SEEN_TAB_FRESH_MS, tabInfo, targetTab } = await import('../lib/commands/shared.js');
  const { owner, ctx, select } = setUp({ autoAllow: true });
  await owner.connectionOpened({ connection_id: 'conn-1', client_name: 'Claude Desktop' });
  await owner.run(ctx, 'selectTab', { tabId: 5 }, select);
  let reads = 0;
  const get = chrome.tabs.get;
  chrome.tabs.get = async id => { reads += 1; return get(id); };
  let seen;
  const readsBefore = await owner.run(ctx, 'networkRequests', {}, async c => {
    const before = reads;
    seen = c.seenTab;
    assert.equal(await targetTab(c, undefined), 5);
    assert.equal((await tabInfo(c, 5)).url, 'https://ok.test/');
    return { before };
  });
  assert.equal(readsBefore.before, 1, 'the owner read the tab once, for its off-limits check');
  assert.equal(reads, 1, 'the command read it no more');
  assert.equal(seen.tab.id, 5);
  // A read as old as the freshness bound is made again; so is one of another tab.
  const stale = { ...ctx, seenTab: { tab: seen.tab, at: performance.now() - SEEN_TAB_FRESH_MS } };
  await tabInfo(stale, 5);
  assert.equal(reads, 2);
  await assert.rejects(tabInfo({ ...ctx, seenTab: { tab: seen.tab, at: performance.now() } }, 6), /tab 6 does not exist/);
  assert.equal(reads, 3);
});
