import assert from 'node:assert/strict';
import test from 'node:test';

import { LocatorError, applySteps, isLocator, parseLocator, theOne } from '../lib/locators.js';

/** A page as the snapshot's tree reads it. */
const TREE = [
  {
    role: 'navigation', name: 'Table of contents', ref: 'e1', children: [
      { role: 'link', name: 'Ownership', ref: 'e2', url: 'ch04.html' },
      { role: 'link', name: 'The Stack and the Heap', ref: 'e3', url: '#stack' },
    ],
  },
  {
    role: 'main', ref: 'e4', children: [
      { role: 'heading', name: 'The Stack and the Heap', ref: 'e5', states: ['level=2'] },
      { role: 'paragraph', ref: 'e6', children: [{ text: 'Both are parts of memory.' }] },
      { role: 'textbox', name: 'Email', ref: 'e7', placeholder: 'you@example.com' },
      { role: 'checkbox', name: 'Remember me', ref: 'e11', states: ['checked'] },
      { role: 'checkbox', name: 'Newsletter', ref: 'e12' },
      { role: 'button', name: 'Save', ref: 'e8' },
      { role: 'button', name: 'Save draft', ref: 'e9' },
      { role: 'img', name: 'A stack of plates', ref: 'e10' },
      // A logo link: its name is its picture's, which the outline prints on the picture.
      { role: 'link', altName: 'Home', ref: 'e13', url: '/', children: [{ role: 'img', name: 'Home', ref: 'e14' }] },
      // A date picker's day, and an icon button, each named by its aria-label.
      { role: 'generic', name: 'November 15, 2026', labelled: true, ref: 'e15', children: [{ text: '15' }] },
      { role: 'button', name: 'Close dialog', labelled: true, ref: 'e16' },
      // Icon buttons with no name, told by their icons.
      { role: 'button', icon: 'pencil', ref: 'e17', states: ['icon=pencil'] },
      { role: 'button', icon: 'delete', ref: 'e18', states: ['icon=delete'] },
      { role: 'button', icon: 'delete', ref: 'e19', states: ['icon=delete'] },
    ],
  },
];

const resolve = selector => {
  const parsed = parseLocator(selector);
  return theOne(applySteps(TREE, parsed.steps), selector).ref;
};

test('CSS is never taken for a locator', () => {
  for (const css of ['#save', 'button.primary', 'a[href="x"]', 'main > p', 'input[name=q]', 'div:has(> a)'])
    assert.equal(isLocator(css), false, css);
  for (const locator of ["getByRole('button')", "page.getByText('x')", 'role=button', 'internal:role=link[name="x"i]',
    'text=Save', "locator('#a')", 'css=#a', 'nav >> role=link'])
    assert.equal(isLocator(locator), true, locator);
});

test('getByRole names an element by its role and name, as the outline shows them', () => {
  assert.equal(resolve("getByRole('heading', { name: 'The Stack and the Heap' })"), 'e5');
  assert.equal(resolve("getByRole('textbox', { name: 'email' })"), 'e7');
  assert.equal(resolve("getByRole('button', { name: 'Save', exact: true })"), 'e8');
  assert.equal(resolve("getByRole('heading', { level: 2 })"), 'e5');
  assert.equal(resolve('getByRole("img", { name: /plates$/ })'), 'e10');
  // Chained as Playwright MCP prints them: within the element the step before found.
  assert.equal(resolve("page.getByRole('navigation', { name: 'Table of contents' }).getByRole('link', { name: 'The Stack and the Heap' })"), 'e3');
  assert.equal(resolve("getByRole('button', { name: 'Save' }).last()"), 'e9');
  assert.equal(resolve("getByRole('link').nth(1)"), 'e3');
  // The states the outline shows.
  assert.equal(resolve("getByRole('checkbox', { checked: true })"), 'e11');
  assert.equal(resolve("getByRole('checkbox', { checked: false })"), 'e12');
  // A name only its pictures give, as Playwright's accessible names read it.
  assert.equal(resolve("getByRole('link', { name: 'Home' })"), 'e13');
});

test('an outline line copied into a target names its element', () => {
  assert.equal(isLocator('button "Save"'), true);
  assert.equal(resolve('button "Save"'), 'e8');
  assert.equal(resolve('- heading "The Stack and the Heap"'), 'e5');
  assert.equal(resolve('generic "November 15, 2026"'), 'e15');
  // Exactly the name printed: "Save" is not "Save draft".
  assert.equal(resolve('button "Save draft"'), 'e9');
  assert.throws(() => resolve('button "Sav"'), /No element matches/);
  // A nameless control told by its icon, as the outline tells it.
  assert.equal(isLocator('button [icon=delete]'), true);
  assert.equal(resolve('button [icon=pencil]'), 'e17');
  assert.equal(resolve('button [icon=delete] >> nth=1'), 'e19');
  assert.throws(() => resolve('button [icon=delete]'), /e18.*e19|2 elements/s);
  // Chained as any step is.
  assert.equal(resolve('role=main >> button "Save"'), 'e8');
  assert.equal(resolve('navigation "Table of contents" >> role=link >> nth=1'), 'e3');
});

test('the selector engines read the same', () => {
  assert.equal(resolve('role=button[name="Save"s]'), 'e8');
  assert.equal(resolve('internal:role=link[name="ownership"i]'), 'e2');
  assert.equal(resolve('role=navigation >> role=link >> nth=1'), 'e3');
  assert.equal(resolve("getByLabel('Email')"), 'e7');
  // Any element a label its author gave names, as Playwright's getByLabel finds it; an element
  // named by its own text is not found by it.
  assert.equal(resolve("getByLabel(/ 15,/)"), 'e15');
  assert.equal(resolve("getByLabel('Close')"), 'e16');
  assert.throws(() => resolve("getByLabel('Save draft')"), /No element matches/);
  // The placeholder, as Playwright's getByPlaceholder reads it: not the label.
  assert.equal(resolve("getByPlaceholder('you@')"), 'e7');
  assert.throws(() => resolve("getByPlaceholder('Email')"), /No element matches/);
  assert.equal(resolve("getByAltText('stack of plates')"), 'e10');
  assert.deepEqual(parseLocator("locator('#save')"), { css: '#save' });
  assert.deepEqual(parseLocator("getByTestId('save')"), { css: '[data-testid="save"]' });
  assert.deepEqual(parseLocator('css=main p'), { css: 'main p' });
  assert.deepEqual(parseLocator("getByText('Both are', { exact: true })").steps, [{ kind: 'text', text: { exact: true, text: 'Both are' } }]);
  assert.deepEqual(parseLocator('text="Save"').steps, [{ kind: 'text', text: { exact: true, text: 'Save' } }]);
});

test('none, or several, is refused as Playwright refuses them, the several with their refs', () => {
  assert.throws(() => resolve("getByRole('button', { name: 'Delete' })"), (error) =>
    error instanceof LocatorError && /^No element matches getByRole\('button', \{ name: 'Delete' \}\)/.test(error.message));
  assert.throws(() => resolve("getByRole('button', { name: 'Save' })"), (error) =>
    error instanceof LocatorError &&
    error.message.includes('matches 2 elements') &&
    error.message.includes('- button "Save" [ref=e8]\n- button "Save draft" [ref=e9]'));
});

test('what cannot be read says where', () => {
  assert.throws(() => parseLocator("getByRole('button', { name: 'Save' )"), LocatorError);
  assert.throws(() => parseLocator("getByRole('button').click()"), /click\(…\) is not supported here/);
  assert.throws(() => parseLocator("getByRole('button', { name: 'Save })"), /not closed/);
  assert.throws(() => parseLocator('nth=0'), /needs a locator before it/);
  assert.throws(() => parseLocator("locator('nav').first().getByRole('link')"), /only that pick is understood here/);
  assert.throws(() => parseLocator('nav >> text=Docs'), /cannot be chained with >> here, but for a pick/);
});

test('getBy… after locator(css) is found inside what the selector names', () => {
  assert.deepEqual(parseLocator("locator('iframe#pay').getByRole('button', { name: 'Pay' })"),
      { within: 'iframe#pay', steps: [{ kind: 'role', role: 'button', name: { exact: false, text: 'Pay' } }] });
  const tree = [
    { role: 'button', name: 'Pay', ref: 'e1' },
    { role: 'iframe', ref: 'e2', children: [{ role: 'button', name: 'Pay', ref: 'f1e1' }] },
  ];
  const inside = applySteps(tree, parseLocator("locator('iframe').getByRole('button')").steps, new Set(['f1e1']));
  assert.deepEqual(inside.map(node => node.ref), ['f1e1']);
  assert.deepEqual(applySteps(tree, parseLocator("getByRole('button')").steps).map(node => node.ref), ['e1', 'f1e1']);
  // getByText inside is found on the page, within the selector's elements (textMatches).
  assert.deepEqual(parseLocator("locator('iframe').getByText('Pay')"),
      { within: 'iframe', steps: [{ kind: 'text', text: { exact: false, text: 'Pay' } }] });
});

test('a frame is gone into by frameLocator(css) or locator(css).contentFrame()', () => {
  const role = { kind: 'role', role: 'button', name: { exact: false, text: 'Pay' } };
  assert.ok(isLocator("frameLocator('iframe#pay').locator('#card')"));
  // CSS in the frame's document, with a pick after it.
  assert.deepEqual(parseLocator("frameLocator('iframe#pay').locator('#card')"), { frame: 'iframe#pay', css: '#card' });
  assert.deepEqual(parseLocator("page.locator('iframe').contentFrame().locator('button').nth(1)"),
      { frame: 'iframe', css: 'button', pick: { kind: 'pick', which: 1 } });
  // getBy… inside the frame, as locator(css).getBy… finds it.
  assert.deepEqual(parseLocator("frameLocator('iframe#pay').getByRole('button', { name: 'Pay' })"), { within: 'iframe#pay', steps: [role] });
  assert.deepEqual(parseLocator("locator('iframe#pay').contentFrame().getByRole('button', { name: 'Pay' })"), { within: 'iframe#pay', steps: [role] });
  // What is not understood says so.
  assert.throws(() => parseLocator("frameLocator('iframe')"), /names a frame, not an element in it/);
  assert.throws(() => parseLocator("getByRole('button').contentFrame()"), /goes into a frame only as/);
  assert.throws(() => parseLocator("frameLocator('a').frameLocator('b').locator('c')"), /goes into a frame only as/);
  assert.throws(() => parseLocator("frameLocator('iframe').locator('form').getByRole('button')"), /can be followed by .first\(\), .last\(\) or .nth\(\) only/);
});

test('filter keeps the elements whose text, or whose elements, a locator asks for', () => {
  // A shop's list, as Playwright's documentation filters one: by an item's text, then a
  // button inside it.
  const shop = [
    {
      role: 'list', ref: 'e1', children: [
        { role: 'listitem', ref: 'e2', children: [{ role: 'heading', name: 'Product 1', ref: 'e3' }, { role: 'button', name: 'Add to cart', ref: 'e4' }] },
        { role: 'listitem', ref: 'e5', children: [{ role: 'heading', name: 'Product 2', ref: 'e6' }, { role: 'button', name: 'Add to cart', ref: 'e7' }] },
        { role: 'listitem', ref: 'e8', children: [{ text: 'Sold out: Product 3' }] },
      ],
    },
  ];
  const one = selector => theOne(applySteps(shop, parseLocator(selector).steps), selector).ref;
  assert.equal(one("getByRole('listitem').filter({ hasText: 'Product 2' }).getByRole('button', { name: 'Add to cart' })"), 'e7');
  assert.equal(one("page.getByRole('listitem').filter({ hasText: /sold out/i })"), 'e8');
  assert.equal(one("getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'Product 1' }) })"), 'e2');
  assert.equal(one("getByRole('listitem').filter({ hasNot: getByRole('button') })"), 'e8');
  assert.equal(one("getByRole('listitem').filter({ hasNotText: 'Product 1' }).filter({ has: getByRole('button') })"), 'e5');
  assert.throws(() => one("getByRole('listitem').filter({ hasText: 'Product' })"), /matches 3 elements/);
  // locator(css).filter(…) filters the selector's matches themselves (read on the page).
  const parsed = parseLocator("locator('li.item').filter({ hasText: 'Product 2' }).getByRole('button')");
  assert.equal(parsed.css, 'li.item');
  assert.equal(parsed.frame, null);
  const found = applySteps([], parsed.steps, undefined, shop[0].children);
  assert.deepEqual(found.map(node => node.ref), ['e7']);
  // What is not understood says so.
  assert.throws(() => parseLocator("getByRole('listitem').filter({ hasText: 3 })"), /takes a text or a regular expression/);
  assert.throws(() => parseLocator("getByRole('listitem').filter({ has: 'x' })"), /takes a locator/);
  assert.throws(() => parseLocator("getByRole('listitem').filter({ near: 'x' })"), /not near/);
  assert.throws(() => parseLocator("getByRole('listitem').filter({ has: getByText('x') })"), /not getByText/);
});

test('CSS with a pick names one of its matches by its place', () => {
  assert.deepEqual(parseLocator("locator('li').nth(2)"), { frame: null, css: 'li', pick: { kind: 'pick', which: 2 } });
  assert.deepEqual(parseLocator("page.locator('#products a').first()"), { frame: null, css: '#products a', pick: { kind: 'pick', which: 'first' } });
  assert.deepEqual(parseLocator('li >> nth=-1'), { frame: null, css: 'li', pick: { kind: 'pick', which: 'last' } });
  assert.deepEqual(parseLocator('css=li >> nth=0'), { frame: null, css: 'li', pick: { kind: 'pick', which: 0 } });
  assert.deepEqual(parseLocator("locator('li')"), { css: 'li' });
});

test('a command whose locator\'s element was replaced meanwhile is told apart from one given a stale ref', async () => {
  const { lostLocatorElement } = await import('../lib/commands/by-locator.js');
  const { staleRefMessage } = await import('../lib/commands/shared.js');
  const given = { selector: "getByRole('row').nth(1)" };
  const resolved = { ...given, ref: 'e23' };
  assert.equal(lostLocatorElement(new Error(staleRefMessage({ ref: 'e23' })), given, resolved), true);
  // Another failure of the same command is not retried.
  assert.equal(lostLocatorElement(new Error('Element ref e23 (div) is covered by another element'), given, resolved), false);
  // The model's own ref, gone: the model must look again, so it is not found again.
  assert.equal(lostLocatorElement(new Error(staleRefMessage({ ref: 'e23' })), { ref: 'e23' }, { ref: 'e23' }), false);
  // A drag's end, found by a locator, replaced meanwhile.
  assert.equal(lostLocatorElement(new Error(staleRefMessage({ ref: 'e9' })), { startRef: 'e1', endSelector: 'text=Done' },
    { startRef: 'e1', endSelector: 'text=Done', endRef: 'e9' }), true);
  // Told what it was and what is in its place, it is still the refusal of that ref.
  const told = staleRefMessage({ ref: 'e23', was: { role: 'row', name: 'Ada' }, successor: 'e40' });
  assert.equal(lostLocatorElement(new Error(told), given, resolved), true);
});

test('a gone ref\'s refusal says what it named and the ref of the look-alike in its place, or how many there are', async () => {
  const { staleRefMessage } = await import('../lib/commands/shared.js');
  const one = staleRefMessage({ ref: 'e56', was: { role: 'button', name: 'add' }, successor: 'e93' });
  assert.match(one, /^Ref e56 does not name an element on the page any more \(it was button "add"; /);
  assert.match(one, /nothing was done; the page now shows button "add" \[ref=e93\] in its place .*act on that ref .*or take a new snapshot/);
  const two = staleRefMessage({ ref: 'e56', was: { role: 'textbox' }, alike: 2 });
  assert.match(two, /\(it was textbox; .*the page now shows 2 elements like it \(textbox\); take a new snapshot/);
  assert.doesNotMatch(two, /\[ref=/);
  // With nothing known of it (a snapshot of an older extension gave it), as before.
  assert.match(staleRefMessage({ ref: 'e3' }), /^Ref e3 does not name an element on the page any more \(it was removed or replaced, .*take a new snapshot/);
});
