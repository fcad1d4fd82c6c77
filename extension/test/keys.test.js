import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Modifier, keyDefinition, keyPressEvents, modifierBits, parseKeyCombo, typingEvents } from '../lib/keys.js';

const summary = combo => keyPressEvents(combo).events.map(e =>
  `${e.type} ${e.key} ${e.code} ${e.windowsVirtualKeyCode} m${e.modifiers}${e.text !== undefined ? ` t${JSON.stringify(e.text)}` : ''}`);

test('named keys carry their DOM key, physical code and Windows key code', () => {
  assert.deepEqual(keyDefinition('Enter'), { key: 'Enter', code: 'Enter', keyCode: 13, text: '\r' });
  assert.deepEqual(keyDefinition('ArrowDown'), { key: 'ArrowDown', code: 'ArrowDown', keyCode: 40 });
  assert.deepEqual(keyDefinition('Escape'), { key: 'Escape', code: 'Escape', keyCode: 27 });
  assert.deepEqual(keyDefinition('Esc'), keyDefinition('Escape'));
  assert.equal(keyDefinition('F5').keyCode, 116);
  assert.equal(keyDefinition('F12').keyCode, 123);
  assert.deepEqual(keyDefinition('Space'), { key: ' ', code: 'Space', keyCode: 32, text: ' ' });
  assert.deepEqual(keyDefinition('7'), { key: '7', code: 'Digit7', keyCode: 55, text: '7' });
  assert.deepEqual(keyDefinition('Q'), { key: 'Q', code: 'KeyQ', keyCode: 81, text: 'Q' });
  assert.deepEqual(keyDefinition('?'), { key: '?', code: 'Slash', keyCode: 191, text: '?' });
  assert.deepEqual(keyDefinition('@'), { key: '@', code: 'Digit2', keyCode: 50, text: '@' });
  assert.deepEqual(keyDefinition('é'), { key: 'é', code: '', keyCode: 0, text: 'é' });
  assert.equal(keyDefinition('Hyper'), undefined);
});

test('keys named by their code, as Playwright also takes them, are the US layout key there', () => {
  assert.deepEqual(keyDefinition('KeyA'), keyDefinition('a'));
  assert.deepEqual(keyDefinition('Digit1'), keyDefinition('1'));
  assert.deepEqual(keyDefinition('Minus'), { key: '-', code: 'Minus', keyCode: 189, text: '-' });
  assert.deepEqual(keyDefinition('ShiftRight'), { key: 'Shift', code: 'ShiftRight', keyCode: 16, location: 2 });
  // Shift on a letter named by its code types the capital, as on a keyboard.
  assert.deepEqual(summary('Shift+KeyA').slice(1, 2), [`keyDown A KeyA 65 m${Modifier.Shift} t"A"`]);
  assert.deepEqual(summary('Control+KeyS').slice(1, 2), [`rawKeyDown s KeyS 83 m${Modifier.Control}`]);
  assert.equal(keyDefinition('Keyboard'), undefined);
});

test('a printable key is one keyDown with text, and keyUp', () => {
  assert.deepEqual(summary('a'), ['keyDown a KeyA 65 m0 t"a"', 'keyUp a KeyA 65 m0']);
  assert.deepEqual(summary('Enter'), ['keyDown Enter Enter 13 m0 t"\\r"', 'keyUp Enter Enter 13 m0']);
});

test('a key without text is a rawKeyDown', () => {
  assert.deepEqual(summary('ArrowDown'), ['rawKeyDown ArrowDown ArrowDown 40 m0', 'keyUp ArrowDown ArrowDown 40 m0']);
});

test('combinations press modifiers first, release them last, and carry their bits', () => {
  assert.deepEqual(summary('Control+A'), [
    `rawKeyDown Control ControlLeft 17 m${Modifier.Control}`,
    // A real keyboard sends the small letter with Control, and no text.
    `rawKeyDown a KeyA 65 m${Modifier.Control}`,
    `keyUp a KeyA 65 m${Modifier.Control}`,
    'keyUp Control ControlLeft 17 m0',
  ]);
  assert.deepEqual(summary('Shift+Tab'), [
    `rawKeyDown Shift ShiftLeft 16 m${Modifier.Shift}`,
    `rawKeyDown Tab Tab 9 m${Modifier.Shift}`,
    `keyUp Tab Tab 9 m${Modifier.Shift}`,
    'keyUp Shift ShiftLeft 16 m0',
  ]);
  // Shift on a letter types the capital.
  assert.deepEqual(summary('Shift+b').slice(1, 2), [`keyDown B KeyB 66 m${Modifier.Shift} t"B"`]);
  const both = keyPressEvents('Control+Shift+ArrowLeft').events;
  assert.equal(both[2].modifiers, Modifier.Control | Modifier.Shift);
  assert.equal(both.at(-2).modifiers, Modifier.Control);
  assert.equal(both.at(-1).modifiers, 0);
  assert.deepEqual(parseKeyCombo('Ctrl+Esc'), { modifiers: ['Control'], key: 'Esc' });
});

test('the plus key can be named alone or in a combination', () => {
  assert.deepEqual(parseKeyCombo('+'), { modifiers: [], key: '+' });
  assert.deepEqual(parseKeyCombo('Control++'), { modifiers: ['Control'], key: '+' });
  assert.equal(keyPressEvents('Control++').events[1].code, 'Equal');
});

test('bad names are explained', () => {
  assert.match(keyPressEvents('').error, /empty/);
  assert.match(keyPressEvents('Hyper+Q').error, /"Hyper" in "Hyper\+Q" is not a modifier/);
  assert.match(keyPressEvents('Control+').error, /empty part/);
  assert.match(keyPressEvents('Enterr').error, /"Enterr" is not a key name; use Playwright's names/);
});

test('keys held during a click become CDP modifier bits; ControlOrMeta follows the platform', () => {
  assert.deepEqual(modifierBits([], false), { bits: 0 });
  assert.deepEqual(modifierBits(['Shift', 'Alt'], false), { bits: 9 });
  assert.deepEqual(modifierBits(['ControlOrMeta'], false), { bits: 2 });
  assert.deepEqual(modifierBits(['ControlOrMeta'], true), { bits: 4 });
  assert.deepEqual(modifierBits(['Control', 'Control'], false), { bits: 2 });
  assert.match(modifierBits(['Ctrl'], false).error, /"Ctrl" is not a modifier; modifiers are Alt, Control, ControlOrMeta, Meta and Shift/);
});

test('typing key by key gives each character its key events; a space is Space and a line break Enter', () => {
  const typed = typingEvents('aB 1\n€').map(events => events.map(e => `${e.type} ${e.key} ${e.code}${e.text !== undefined ? ` t${JSON.stringify(e.text)}` : ''}`));
  assert.deepEqual(typed, [
    ['keyDown a KeyA t"a"', 'keyUp a KeyA'],
    ['keyDown B KeyB t"B"', 'keyUp B KeyB'],
    ['keyDown   Space t" "', 'keyUp   Space'],
    ['keyDown 1 Digit1 t"1"', 'keyUp 1 Digit1'],
    ['keyDown Enter Enter t"\\r"', 'keyUp Enter Enter'],
    ['keyDown €  t"€"', 'keyUp € '],
  ]);
});
