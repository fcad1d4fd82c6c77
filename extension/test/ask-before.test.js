// "Ask me before" (issue 29): the person's per-site rules, and a key press that would submit a
// form waiting for their Allow or Deny, against a fake tab whose page answers what the step
// would do.
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { askRules, asksAnything, asksFor } from '../lib/ask-before.js';
import { runCommand } from '../lib/commands.js';
import { askPersonFirst } from '../lib/commands/ask-before.js';
import { PersonRequests } from '../lib/person-requests.js';
import { TabOwnership } from '../lib/tabs.js';

test('a rule of "*" asks on every site; a pattern only on its site; dev-config adds its own', () => {
  const rules = askRules({ forms: ['*'], purchases: ['*.shop.test'] }, { askBefore: { purchases: ['pay.test'] } });
  assert.deepEqual(asksFor(rules, 'https://news.test/a'), { forms: true, purchases: false });
  assert.deepEqual(asksFor(rules, 'https://www.shop.test/cart'), { forms: true, purchases: true });
  assert.deepEqual(asksFor(rules, 'https://pay.test/'), { forms: true, purchases: true });
  assert.equal(asksAnything(askRules(undefined)), false, 'nothing asked until the person says so');
  assert.equal(asksAnything(askRules({ forms: [], purchases: ['garbage*host'] })), false);
});

let sent;
beforeEach(() => {
  sent = [];
  globalThis.chrome = { tabs: { get: async id => ({ id, windowId: 1, url: 'https://shop.test/checkout', title: 'Checkout' }) } };
});
afterEach(() => {
  delete globalThis.chrome;
});

/** A connection on tab 7 whose page says Enter there would submit the checkout form. */
function context() {
  const tabs = new TabOwnership();
  tabs.select('conn-1', 7);
  const debuggers = {
    send: async (tabId, method, params) => {
      const asksPage = method === 'Runtime.evaluate' && params.expression.includes('pageConsequence');
      sent.push(asksPage ? 'consequence' : method);
      if (asksPage)
        return { result: { value: { submits: true, purchase: false, words: 'the field “Card number” in the form “Checkout”' } } };
      return {};
    },
  };
  return {
    connectionId: 'conn-1', tabs, debuggers, person: new PersonRequests(), assistantName: 'Claude',
    askBefore: { forms: true, purchases: false },
  };
}

test('Enter that would submit a form waits for Allow, then presses', async () => {
  const ctx = context();
  const pressing = runCommand(ctx, 'pressKey', { key: 'Enter' });
  await new Promise(resolve => setTimeout(resolve, 20));
  const [ask] = ctx.person.waiting();
  assert.equal(ask.kind, 'ask');
  assert.equal(ask.assistant, 'Claude');
  assert.match(ask.reason, /press Enter on the field “Card number” in the form “Checkout” \(it submits a form\)/);
  assert.ok(!sent.includes('Input.dispatchKeyEvent'), 'nothing pressed before the answer');
  ctx.person.answer(ask.id, 'allowed');
  const result = await pressing;
  assert.equal(result.pressed, 'Enter');
  assert.ok(sent.includes('Input.dispatchKeyEvent'));
});

test('Deny refuses with words the assistant must not retry, and a retry is refused without asking again', async () => {
  const ctx = context();
  const pressing = runCommand(ctx, 'pressKey', { key: 'Enter' });
  await new Promise(resolve => setTimeout(resolve, 20));
  ctx.person.answer(ctx.person.waiting()[0].id, 'denied');
  await assert.rejects(pressing, /denied this step.*Nothing was done. Do not retry it/s);
  await assert.rejects(runCommand(ctx, 'pressKey', { key: 'Enter' }), /denied this step/);
  assert.deepEqual(ctx.person.waiting(), [], 'no second prompt');
  assert.ok(!sent.includes('Input.dispatchKeyEvent'));
});

test('typed text with a line break asks as Enter does; without one it is not checked', async () => {
  const ctx = context();
  await runCommand(ctx, 'pressKey', { text: 'no break' });
  assert.deepEqual(ctx.person.waiting(), []);
  const typing = runCommand(ctx, 'pressKey', { text: '4242\n' });
  await new Promise(resolve => setTimeout(resolve, 20));
  const [ask] = ctx.person.waiting();
  assert.match(ask.reason, /type text with Enter into the field “Card number” in the form “Checkout”/);
  ctx.person.answer(ask.id, 'allowed');
  assert.equal((await typing).typed, '4242\n');
});

test('keys that cannot submit, and pages the person did not ask about, are not checked', async () => {
  const ctx = context();
  await runCommand(ctx, 'pressKey', { key: 'Tab' });
  await runCommand({ ...ctx, askBefore: { forms: false, purchases: false } }, 'pressKey', { key: 'Enter' });
  assert.ok(!sent.includes('consequence'), 'the page was not even asked');
  assert.deepEqual(ctx.person.waiting(), []);
});

test('a step that cannot wait withdraws its unanswered prompt and tells the assistant not to retry on its own', async () => {
  const ctx = context();
  const step = {
    tabId: 7, method: 'callPageTool', verb: 'run the page\'s tool', words: '“buy”', reasons: ['the page wants your interaction'],
    waitMs: 30, unanswered: 'withdraw', unansweredNote: 'the page\'s tool was told',
  };
  const withdrawn = [];
  ctx.person.listen((request, change) => change === 'answered' && withdrawn.push(request.status));
  await assert.rejects(askPersonFirst(ctx, step),
      /did not answer within 0 s whether to allow this step: run the page's tool “buy” .*withdrawn from their mcp-relay popup; the page's tool was told\. Do not retry it on your own/s);
  assert.deepEqual(ctx.person.waiting(), [], 'nothing left in the popup');
  assert.deepEqual(withdrawn, ['withdrawn'], 'the receipt says so');
  // Asked again later, the person is asked again.
  const again = askPersonFirst(ctx, { ...step, waitMs: 5_000 });
  await new Promise(resolve => setTimeout(resolve, 20));
  ctx.person.answer(ctx.person.waiting()[0].id, 'allowed');
  await again;
});

test('a click asked about keeps its unanswered prompt for the same click called again', async () => {
  const ctx = context();
  const step = { tabId: 7, method: 'click', verb: 'click', words: 'the button “Pay”', reasons: ['it looks like a purchase or payment'], waitMs: 30 };
  await assert.rejects(askPersonFirst(ctx, step), /They have not answered yet .*call the same action again/s);
  const [open] = ctx.person.waiting();
  const again = askPersonFirst(ctx, { ...step, waitMs: 5_000 });
  await new Promise(resolve => setTimeout(resolve, 20));
  assert.deepEqual(ctx.person.waiting().map(r => r.id), [open.id], 'the same prompt, not a second one');
  ctx.person.answer(open.id, 'allowed');
  await again;
});
