/**
 * Playwright-style key names ("Enter", "ArrowDown", "Control+A", "Shift+Tab")
 * turned into the CDP `Input.dispatchKeyEvent` calls a real US keyboard
 * would produce: modifiers pressed first and released last, each key with
 * its DOM `key`, its physical `code`, its Windows virtual key code (which is
 * what Chrome's editing commands and most pages' keyCode checks read), and
 * `text` for keys that insert a character.
 *
 * Pure: no `chrome.*`, so Node tests it directly.
 */

/** CDP `modifiers` bits. */
export const Modifier = Object.freeze({ Alt: 1, Control: 2, Meta: 4, Shift: 8 });

/**
 * The CDP `modifiers` bits of keys held during a click, named as Playwright names them
 * (`ControlOrMeta` is Meta on macOS, Control elsewhere, as a person's shortcut would be).
 *
 * @param {readonly string[]} names
 * @param {boolean} [mac] whether to read `ControlOrMeta` as on macOS (default: this browser's platform)
 * @returns {{bits: number} | {error: string}}
 */
export function modifierBits(names, mac = MAC) {
  let bits = 0;
  for (const name of names) {
    const key = name === 'ControlOrMeta' ? (mac ? 'Meta' : 'Control') : name;
    if (!Object.hasOwn(Modifier, key))
      return { error: `"${name}" is not a modifier; modifiers are Alt, Control, ControlOrMeta, Meta and Shift` };
    bits |= Modifier[/** @type {keyof typeof Modifier} */ (key)];
  }
  return { bits };
}

/** @typedef {{key: string, code: string, keyCode: number, text?: string, location?: number}} KeyDefinition */

/**
 * Named keys, by Playwright name: [name, Windows key code, text]. The DOM `key` and `code`
 * are the name itself, except for Space and the modifiers (added below).
 *
 * @type {Record<string, KeyDefinition>}
 */
const NAMED = Object.fromEntries(/** @type {[string, number, string?][]} */ ([
  ['Enter', 13, '\r'], ['Tab', 9], ['Escape', 27], ['Backspace', 8], ['Delete', 46], ['Insert', 45],
  ['ArrowUp', 38], ['ArrowDown', 40], ['ArrowLeft', 37], ['ArrowRight', 39], ['Home', 36], ['End', 35],
  ['PageUp', 33], ['PageDown', 34], ['CapsLock', 20], ['ContextMenu', 93],
]).map(([name, keyCode, text]) => [name, { key: name, code: name, keyCode, ...(text ? { text } : {}) }]));
NAMED.Space = { key: ' ', code: 'Space', keyCode: 32, text: ' ' };
for (const [name, keyCode] of /** @type {const} */ ([['Shift', 16], ['Control', 17], ['Alt', 18], ['Meta', 91]]))
  NAMED[name] = { key: name, code: `${name}Left`, keyCode, location: 1 };
for (let n = 1; n <= 12; n++)
  NAMED[`F${n}`] = { key: `F${n}`, code: `F${n}`, keyCode: 111 + n };

/** Punctuation of a US layout: [unshifted, shifted, code, keyCode]. */
const PUNCTUATION = [
  ['-', '_', 'Minus', 189], ['=', '+', 'Equal', 187], ['[', '{', 'BracketLeft', 219],
  [']', '}', 'BracketRight', 221], ['\\', '|', 'Backslash', 220], [';', ':', 'Semicolon', 186],
  ["'", '"', 'Quote', 222], [',', '<', 'Comma', 188], ['.', '>', 'Period', 190],
  ['/', '?', 'Slash', 191], ['`', '~', 'Backquote', 192],
];
const SHIFTED_DIGITS = ')!@#$%^&*(';

/** Whether the browser runs on macOS, where Playwright's `ControlOrMeta` is Meta. */
const MAC = Boolean(globalThis.navigator?.platform?.startsWith('Mac'));

/** Aliases models and other tools use for the same keys. */
const ALIASES = {
  Esc: 'Escape', Return: 'Enter', Up: 'ArrowUp', Down: 'ArrowDown', Left: 'ArrowLeft', Right: 'ArrowRight',
  Del: 'Delete', Ctrl: 'Control', Cmd: 'Meta', Command: 'Meta', Option: 'Alt', Win: 'Meta',
  // Playwright's portable modifier; this extension drives Chrome on Linux and Windows as well as macOS.
  ControlOrMeta: MAC ? 'Meta' : 'Control',
};

/**
 * The definition of one key name, or undefined when it is not one.
 *
 * @param {string} name
 * @returns {KeyDefinition | undefined}
 */
export function keyDefinition(name) {
  const canonical = ALIASES[name] ?? name;
  if (Object.hasOwn(NAMED, canonical))
    return NAMED[canonical];
  if (/^[a-z]$/i.test(name)) {
    const upper = name.toUpperCase();
    return { key: name, code: `Key${upper}`, keyCode: upper.charCodeAt(0), text: name };
  }
  if (/^[0-9]$/.test(name))
    return { key: name, code: `Digit${name}`, keyCode: name.charCodeAt(0), text: name };
  const shiftedDigit = SHIFTED_DIGITS.indexOf(name);
  if (name.length === 1 && shiftedDigit >= 0)
    return { key: name, code: `Digit${shiftedDigit}`, keyCode: 48 + shiftedDigit, text: name };
  for (const [plain, shifted, code, keyCode] of PUNCTUATION) {
    if (name === plain || name === shifted)
      return { key: name, code, keyCode, text: name };
  }
  // A physical key by its code, as Playwright's keyboard also takes it ("KeyA", "Digit1",
  // "Minus", "ShiftLeft"): the key a US layout has there, unshifted.
  const letter = /^Key([A-Z])$/.exec(name) ?? /^Digit([0-9])$/.exec(name);
  if (letter)
    return keyDefinition(letter[1].toLowerCase());
  const punctuation = PUNCTUATION.find(([, , code]) => code === name);
  if (punctuation)
    return keyDefinition(punctuation[0]);
  const side = /^(Shift|Control|Alt|Meta)(Left|Right)$/.exec(name);
  if (side)
    return { ...NAMED[side[1]], code: name, location: side[2] === 'Left' ? 1 : 2 };
  // Any other single character (é, ß, €): no physical key, but the character.
  if ([...name].length === 1)
    return { key: name, code: '', keyCode: 0, text: name };
  return undefined;
}

/**
 * Parses "Control+Shift+ArrowLeft" into its modifiers and main key. "+" alone
 * and a trailing "++" ("Control++") name the plus key.
 *
 * @param {string} combo
 * @returns {{modifiers: string[], key: string} | {error: string}}
 */
export function parseKeyCombo(combo) {
  if (typeof combo !== 'string' || combo === '')
    return { error: 'an empty key name' };
  const parts = combo.split('+');
  if (parts.length > 1 && parts.at(-1) === '' && parts.at(-2) === '') {
    parts.splice(-2, 2, '+');
  } else if (combo === '+') {
    parts.splice(0, parts.length, '+');
  }
  if (parts.some(part => part === ''))
    return { error: `"${combo}" has an empty part; write combinations like "Control+A" or "Shift+Tab"` };
  const key = /** @type {string} */ (parts.pop());
  const modifiers = [];
  for (const part of parts) {
    const modifier = ALIASES[part] ?? part;
    if (!Object.hasOwn(Modifier, modifier))
      return { error: `"${part}" in "${combo}" is not a modifier; modifiers are Shift, Control, Alt, Meta and ControlOrMeta` };
    if (!modifiers.includes(modifier))
      modifiers.push(modifier);
  }
  return { modifiers, key };
}

/**
 * The `Input.dispatchKeyEvent` params that press and release `combo`, in order.
 *
 * @param {string} combo a Playwright key name or combination
 * @returns {{events: object[]} | {error: string}}
 */
export function keyPressEvents(combo) {
  const parsed = parseKeyCombo(combo);
  if ('error' in parsed)
    return parsed;
  const main = keyDefinition(parsed.key);
  if (!main) {
    return {
      error: `"${parsed.key}" is not a key name; use Playwright's names such as Enter, Escape, Tab, ` +
        'Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, F1…F12, ' +
        'a single character like "a", a key code like "KeyA" or "Digit1", or a combination like "Control+A" or "Shift+Tab"',
    };
  }
  const events = [];
  let bits = 0;
  for (const name of parsed.modifiers) {
    bits |= Modifier[name];
    events.push(keyEvent('rawKeyDown', NAMED[name], bits));
  }
  const shift = (bits & Modifier.Shift) !== 0;
  const command = (bits & (Modifier.Control | Modifier.Alt | Modifier.Meta)) !== 0;
  let key = main.key;
  let text = main.text;
  if (/^[a-z]$/i.test(key)) {
    // A letter key: Shift gives the capital; without Shift it is the small letter (Control+A
    // on a real keyboard sends key "a"), unless the name asked for a capital on its own.
    key = shift ? key.toUpperCase() : (command ? key.toLowerCase() : key);
    text = key;
  }
  const down = keyEvent(text !== undefined && !command ? 'keyDown' : 'rawKeyDown', { ...main, key }, bits);
  if (text !== undefined && !command) {
    down.text = text;
    down.unmodifiedText = text;
  }
  events.push(down);
  events.push(keyEvent('keyUp', { ...main, key }, bits));
  for (const name of [...parsed.modifiers].reverse()) {
    bits &= ~Modifier[name];
    events.push(keyEvent('keyUp', NAMED[name], bits));
  }
  return { events };
}

/**
 * The key events that type `text` key by key, as a person would (Playwright's
 * `pressSequentially`): each character its keyDown carrying the character, and keyUp; a space
 * is the Space key and a line break Enter.
 *
 * @param {string} text
 * @returns {object[][]} the events of each character, in order
 */
export function typingEvents(text) {
  return [...text].map(character => {
    const name = character === ' ' ? 'Space' : character === '\n' ? 'Enter' : character;
    // A single character is always a key name here (keyDefinition takes any one character).
    const pressed = keyPressEvents(name);
    return 'events' in pressed ? pressed.events : [];
  });
}

/**
 * @param {string} type
 * @param {KeyDefinition} definition
 * @param {number} modifiers
 */
function keyEvent(type, definition, modifiers) {
  const event = {
    type,
    key: definition.key,
    code: definition.code,
    windowsVirtualKeyCode: definition.keyCode,
    nativeVirtualKeyCode: definition.keyCode,
    modifiers,
  };
  if (definition.location)
    event.location = definition.location;
  return event;
}
