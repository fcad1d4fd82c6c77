// The snapshot's pure half: the outline text a model reads, its depth and interactive-only
// views, the whole-line cut; and the element targets every element command accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cutLines, formatOutline, onlyInteractive } from '../lib/snapshot.js';
import { REF_PATTERN, TARGET_PARAMS, describeTarget, elementTarget } from '../lib/targets.js';
import { ErrorCode, RpcError } from '../lib/rpc.js';

const TREE = [
  { role: 'heading', name: 'Controls', states: ['level=1'] },
  { role: 'paragraph', children: [{ text: 'Pick a colour.' }] },
  {
    role: 'combobox', name: 'Colour', ref: 'e1', actionable: true, value: 'Red',
    children: [{ role: 'option', name: 'Red', states: ['selected'] }, { role: 'option', name: 'Blue' }],
  },
  { role: 'button', name: 'Save', ref: 'e2', actionable: true, states: ['disabled'] },
  { role: 'link', name: 'Next page', ref: 'e3', actionable: true, url: 'page2.html' },
  {
    role: 'iframe', ref: 'e4', actionable: true,
    children: [{ role: 'form', children: [{ text: 'Inside' }, { role: 'textbox', name: 'Name', ref: 'f1e1', actionable: true, value: 'Ada' }] }],
  },
  { role: 'iframe', ref: 'e5', actionable: true, note: 'cross-origin frame: its content is not in this snapshot' },
];

// What captureTree gives now: a ref on every element shown, not only on what a person can act on.
const NAMED = [
  {
    role: 'list', name: 'Todo', ref: 'e6', children: [
      { role: 'listitem', ref: 'e7', children: [{ text: 'Write the `drop` command' }] },
      { role: 'listitem', ref: 'e8', children: [{ role: 'link', name: 'Docs', ref: 'e9', actionable: true, url: 'docs.html' }] },
    ],
  },
  { role: 'img', name: 'Chart', ref: 'e10' },
  { role: 'table', ref: 'e11', children: [{ role: 'row', ref: 'e12', children: [{ role: 'cell', name: '42', ref: 'e13' }] }] },
];

test('the outline reads like Playwright MCP: role, quoted name, ref, states, value, children indented', () => {
  assert.equal(formatOutline(TREE), [
    '- heading "Controls" [level=1]',
    '- paragraph: Pick a colour.',
    '- combobox "Colour" [ref=e1]: Red',
    '  - option "Red" [selected]',
    '  - option "Blue"',
    '- button "Save" [ref=e2] [disabled]',
    '- link "Next page" [ref=e3]:',
    '  - /url: page2.html',
    '- iframe [ref=e4]:',
    '  - form:',
    '    - text: Inside',
    '    - textbox "Name" [ref=f1e1]: Ada',
    '- iframe [ref=e5]:',
    '  - note: cross-origin frame: its content is not in this snapshot',
  ].join('\n'));
});

test("a field's placeholder is printed under it when it is not the field's name, as Playwright prints it", () => {
  assert.equal(formatOutline([
    { role: 'textbox', name: 'Run search', ref: 'e2', placeholder: 'Type to search' },
    { role: 'textbox', name: 'Only placeholder', ref: 'e3', placeholder: 'Only placeholder' },
    { role: 'textbox', name: 'Email', ref: 'e4', placeholder: 'you@x', value: 'ada@x' },
  ]), [
    '- textbox "Run search" [ref=e2]:',
    '  - /placeholder: Type to search',
    '- textbox "Only placeholder" [ref=e3]',
    '- textbox "Email" [ref=e4]: ada@x',
    '  - /placeholder: you@x',
  ].join('\n'));
});

test("a code block's lines are printed as lines, indented under the element they belong to", () => {
  assert.equal(formatOutline([
    { role: 'list', ref: 'e1', children: [
      { role: 'code', ref: 'e2', children: [{ text: 'let x = 1; // one\n\nif x {\n    go();\n}' }] },
      { text: 'a\nb' },
    ] },
  ]), [
    '- list [ref=e1]:',
    '  - code [ref=e2]: |',
    '      let x = 1; // one',
    '',
    '      if x {',
    '          go();',
    '      }',
    '  - text: |',
    '      a',
    '      b',
  ].join('\n'));
  // A lone bar (a breadcrumb's separator) is text, not the start of a block.
  assert.equal(formatOutline([{ text: '|' }, { role: 'paragraph', ref: 'e3', children: [{ text: '>' }] }]),
      '- text: "|"\n- paragraph [ref=e3]: ">"');
});

test("a text area's value of several lines is a literal block too, above what is printed under it", () => {
  assert.equal(formatOutline([
    { role: 'textbox', name: 'Address', ref: 'e1', value: '1 Main St\nSpringfield', placeholder: 'Where to' },
    { role: 'textbox', name: 'Note', ref: 'e2', value: 'one\ntwo' },
  ]), [
    '- textbox "Address" [ref=e1]: |',
    '    1 Main St',
    '    Springfield',
    '  - /placeholder: Where to',
    '- textbox "Note" [ref=e2]: |',
    '    one',
    '    two',
  ].join('\n'));
});

test('names with quotes stay one unambiguous string', () => {
  assert.equal(formatOutline([{ role: 'button', name: 'Say "hi"', ref: 'e9' }]), '- button "Say \\"hi\\"" [ref=e9]');
});

test("a name its one child says on the next line is not said twice, unless the child is past the depth", () => {
  const heading = [{
    role: 'heading', name: 'Methods', ref: 'e22', states: ['level=3'],
    children: [{ role: 'link', name: 'Methods', ref: 'e23', url: '#implementations' }],
  }];
  assert.equal(formatOutline(heading), [
    '- heading [ref=e22] [level=3]:',
    '  - link "Methods" [ref=e23]:',
    '    - /url: #implementations',
  ].join('\n'));
  assert.equal(formatOutline(heading, { depth: 1 }), '- heading "Methods" [ref=e22] [level=3] [1 more below: raise depth to see them]');
  // Another name, or more than one child, keeps its own.
  const other = [{ role: 'heading', name: 'std 1.95.0', ref: 'e5', children: [{ role: 'link', name: 'std', ref: 'e6' }, { text: '1.95.0' }] }];
  assert.ok(formatOutline(other).startsWith('- heading "std 1.95.0" [ref=e5]:'));
});

test('depth keeps the top levels and says how much it left out below', () => {
  assert.equal(formatOutline(TREE, { depth: 1 }).split('\n').filter(line => line.includes('iframe [ref=e4]'))[0],
      '- iframe [ref=e4] [3 more below: raise depth to see them]');
  assert.ok(!formatOutline(TREE, { depth: 1 }).includes('f1e1'));
  assert.ok(formatOutline(TREE, { depth: 3 }).includes('f1e1'));
  assert.ok(formatOutline(TREE, { depth: 1 }).length < formatOutline(TREE).length);
});

test('interactive keeps only elements with refs and the frames around them, dropping text', () => {
  assert.equal(formatOutline(TREE, { interactive: true }), [
    '- combobox "Colour" [ref=e1]: Red',
    '- button "Save" [ref=e2] [disabled]',
    '- link "Next page" [ref=e3]:',
    '  - /url: page2.html',
    '- iframe [ref=e4]:',
    '  - textbox "Name" [ref=f1e1]: Ada',
    '- iframe [ref=e5]:',
    '  - note: cross-origin frame: its content is not in this snapshot',
  ].join('\n'));
  assert.deepEqual(onlyInteractive([{ text: 'x' }, { role: 'list', children: [{ role: 'listitem', children: [{ text: 'y' }] }] }]), []);
  // A nameless drop-down around a named one of its role that takes no clicks (Vuetify's select)
  // is known by that one's name; one around a named one still shown keeps none.
  const drawn = [{ role: 'combobox', ref: 'e74', actionable: true, children: [{ role: 'combobox', name: 'Product', ref: 'e75' }] }];
  assert.equal(formatOutline(drawn, { interactive: true }), '- combobox "Product" [ref=e74]');
  const both = [{ role: 'combobox', ref: 'e77', actionable: true, children: [{ role: 'combobox', name: 'Country', ref: 'e78', actionable: true }] }];
  assert.equal(formatOutline(both, { interactive: true }), '- combobox [ref=e77]:\n  - combobox "Country" [ref=e78]');
  // One named by content this view leaves out says that name: a sortable header's words
  // beside its button (Grid.js's), a button whose words are a paragraph inside it.
  const header = [{ role: 'columnheader', altName: 'Project', ref: 'e81', actionable: true, children: [
    { text: 'Project' }, { role: 'button', name: 'Sort column ascending', ref: 'e82', actionable: true }] }];
  assert.equal(formatOutline(header, { interactive: true }),
      '- columnheader "Project" [ref=e81]:\n  - button "Sort column ascending" [ref=e82]');
  const worded = [{ role: 'button', altName: 'Place order', ref: 'e5', actionable: true, children: [
    { role: 'paragraph', children: [{ text: 'Place order' }] }] }];
  assert.equal(formatOutline(worded, { interactive: true }), '- button "Place order" [ref=e5]');
  // (The whole outline keeps the words as lines of their own.)
  assert.ok(formatOutline(header).startsWith('- columnheader [ref=e81]:'));
});

test('lists, items, images, tables, rows and cells carry refs in the same line format', () => {
  assert.equal(formatOutline(NAMED), [
    '- list "Todo" [ref=e6]:',
    '  - listitem [ref=e7]: Write the `drop` command',
    '  - listitem [ref=e8]:',
    '    - link "Docs" [ref=e9]:',
    '      - /url: docs.html',
    '- img "Chart" [ref=e10]',
    '- table [ref=e11]:',
    '  - row [ref=e12]:',
    '    - cell "42" [ref=e13]',
  ].join('\n'));
  // Interactive still means what a person can act on, not everything with a ref.
  assert.equal(formatOutline(NAMED, { interactive: true }), '- link "Docs" [ref=e9]:\n  - /url: docs.html');
});

test('a subtree is formatted with its root first at indent 0, depth counted from it', () => {
  const subtree = [NAMED[0]];
  assert.equal(formatOutline(subtree, { depth: 1 }), '- list "Todo" [ref=e6] [4 more below: raise depth to see them]');
  assert.equal(formatOutline(subtree, { depth: 2 }).split('\n')[0], '- list "Todo" [ref=e6]:');
  assert.ok(formatOutline(subtree, { depth: 2 }).includes('  - listitem [ref=e8] [1 more below'));
  // A link at the cut with nothing below it keeps its URL, and no "0 more below".
  const link = [{ role: 'link', name: 'Docs', ref: 'e9', url: 'docs.html', children: [] }];
  assert.equal(formatOutline(link, { depth: 1 }), '- link "Docs" [ref=e9]:\n  - /url: docs.html');
});

test('a cut keeps whole lines within the budget and counts what it left out', () => {
  const text = ['- row: 1', '- row: 2', '- row: 3'].join('\n');
  assert.deepEqual(cutLines(text, 100), { text, cut: false, shownLines: 3, totalLines: 3 });
  assert.deepEqual(cutLines(text, 17), { text: '- row: 1\n- row: 2', cut: true, shownLines: 2, totalLines: 3 });
  assert.deepEqual(cutLines(text, 16), { text: '- row: 1', cut: true, shownLines: 1, totalLines: 3 });
  const rows = Array.from({ length: 5000 }, (_, i) => `- row "${i}" [ref=e${i + 1}]`).join('\n');
  const first = cutLines(rows, 20_000);
  assert.ok(first.text.length <= 20_000 && first.cut && first.shownLines > 500);
  assert.ok(first.text.endsWith(`[ref=e${first.shownLines}]`), 'no line is cut in half');
});

test('a target is a ref or a selector, a ref winning when both are sent', () => {
  assert.deepEqual(elementTarget({ ref: 'e5' }), { ref: 'e5' });
  assert.deepEqual(elementTarget({ ref: ' f2e13 ', selector: '#x' }), { ref: 'f2e13' });
  assert.deepEqual(elementTarget({ selector: '#save' }), { selector: '#save' });
  assert.deepEqual(elementTarget({ startRef: 'e1' }, 'start'), { ref: 'e1' });
  assert.equal(describeTarget({ ref: 'e5' }), 'ref e5');
  assert.equal(describeTarget('#save'), 'selector "#save"');
  assert.deepEqual(Object.keys(TARGET_PARAMS).sort(), ['ref', 'selector']);
  for (const ref of ['e1', 'e42', 'f1e3', 'f12e305'])
    assert.ok(REF_PATTERN.test(ref), ref);
});

test('a target without ref or selector, or with a selector passed as ref, is refused as invalid params', () => {
  const invalid = pattern => error => error instanceof RpcError && error.code === ErrorCode.INVALID_PARAMS && pattern.test(error.message);
  assert.throws(() => elementTarget({}), invalid(/give parameter "ref" .* or "selector"/));
  assert.throws(() => elementTarget({ ref: '#save' }), invalid(/must be a ref from a snapshot.*for a CSS selector use "selector"/));
  assert.throws(() => elementTarget({ ref: 'e0' }), invalid(/must be a ref/));
});

// A large page function is compiled by the page once per document: the expression keeps the
// function on the global object the first time and takes it from there after, under a key that
// changes with the source, so an older extension's copy left in a page is never used.
test('a page function shipped with compiledOnce is kept by the page and reused', async () => {
  const { compiledOnce } = await import('../lib/page-scripts.js');
  const first = (limits) => ({ version: 1, limits });
  const newer = (limits) => ({ version: 2, limits });
  const expression = compiledOnce(first);
  const kept = (0, eval)(expression);
  assert.equal(kept, (0, eval)(expression), 'the second evaluation takes the kept function');
  assert.deepEqual((0, eval)(`${expression}({maxNodes: 3})`), { version: 1, limits: { maxNodes: 3 } });
  assert.notEqual(compiledOnce(newer), expression, 'another source is kept under another key');
  assert.equal((0, eval)(`${compiledOnce(newer)}(0)`).version, 2);
});

test('with boxes, each element says where it is: [box=x,y,width,height] after its states', () => {
  assert.equal(formatOutline([{ role: 'heading', name: 'Title', ref: 'e1', states: ['level=1'], box: [8, 21, 784, 37] }]),
      '- heading "Title" [ref=e1] [level=1] [box=8,21,784,37]');
  assert.equal(formatOutline([{ role: 'button', name: 'Go', ref: 'e2' }]), '- button "Go" [ref=e2]', 'no box unless asked');
});
