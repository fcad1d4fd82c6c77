/**
 * Input the person's mouse and keyboard would give: clicks, typing, hovering, choosing options,
 * key presses, and answering a JavaScript dialog. Dispatched through CDP's Input domain, so it
 * works on background tabs, with the focus handed back to the person's window.
 */

import { focusSlider } from '../form-fields.js';
import { keyPressEvents, modifierBits, typingEvents } from '../keys.js';
import { NothingMatches } from '../locators.js';
import { dropDownOpen, editorSetText, editorSuggesting, elementExpression, inSelect, markDrawnOption, prepareTyping, readParts, readValue, selectOptions, suggestionsSettled } from '../page-scripts.js';
import { invalidParams, serverError } from '../rpc.js';
import { describeTarget, elementTarget } from '../targets.js';
import { resolveLocators, untilSomethingMatches } from './by-locator.js';
import { notePointer, pressing } from './pointer.js';
import { ACTIONABLE_POLL_MS, ACTIONABLE_WAIT_MS, elementError, evaluateExpression, locate, messageOf, targetTab, worldOf } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */

/** handleDialog: how long it waits for a dialog that is about to open (the click that opens it just returned). */
const DIALOG_GRACE_MS = 2_000;

/**
 * A typed Enter in a field with suggestions waits for its list to be still this long (at most
 * SUGGESTIONS_CAP_MS): pages refresh theirs up to 300 ms after the last key.
 */
const SUGGESTIONS_QUIET_MS = 400;
const SUGGESTIONS_CAP_MS = 1_500;
/** Typing without Enter: how long suggestions are waited for to begin, and then to be still. */
const SUGGESTIONS_FIRST_MS = 500;
const SUGGESTIONS_STILL_MS = 150;

/** What a typed answer adds when the field was a code editor's hidden input (readValue). */
const HIDDEN_INPUT_NOTE = 'typed into the page\'s hidden input (a code editor\'s, a pixel or two across): its value may ' +
  'not be the editor\'s text (CodeMirror\'s holds only what was typed); browser_evaluate reads what the editor holds';

const EDITOR_CHANGED_NOTE = 'the code editor\'s own typing rules (closing brackets and quotes, indenting lines) ' +
  'made its text differ from what was typed; the value read back is what it holds now';

/** The attribute markDrawnOption leaves on the option it found, for the click. */
const DRAWN_OPTION_MARK = 'data-mcp-relay-option';

/** How many times a drop-down closed with Escape is looked at again (ACTIONABLE_POLL_MS apart) before it is said to be still open. */
const CLOSE_CHECKS = 5;

/** How long a code editor's suggestions are waited for after text ending in a word. */
const SUGGESTIONS_SHOW_MS = 400;

/**
 * What a typed answer adds when a rich-text editor (an element that is its own editor, as
 * CKEditor's, Quill's and ProseMirror's are) holds a text that differs from what was typed:
 * CKEditor drops an empty line. Its text is read back a line for each of its paragraphs.
 */
const RICH_CHANGED_NOTE = 'the text the editor holds differs from what was typed (a rich-text editor may drop empty ' +
  'lines or change words as it formats them); the value read back is what it holds now, a line for each paragraph';

/** What a typed answer adds when the field took none of the text at once and was typed key by key. */
const KEY_BY_KEY_NOTE = 'the field took none of the text at once (it reads keys one by one, as a date field\'s parts ' +
  'do), so it was typed key by key; the value read back is what it holds now (all its parts, for a date field\'s)';

const PART_SHOWN_NOTE = 'the code editor draws only the lines in its view, and the value read back is those; ' +
  'browser_snapshot shows which lines they are';

/** How many times a click finds its element again after the pointer moved, before pressing. */
const RELOCATE_TRIES = 3;

/** Between the clicks of a double or triple click: a quick person's pace, far inside any page's bound. */
const MULTI_CLICK_GAP_MS = 40;

/** @param {CommandContext} ctx */
export async function click(ctx, params) {
  const { ref, selector, x, y, button = 'left', clickCount = 1, modifiers = [], tabId } = params;
  if (ref === undefined && selector === undefined && (x === undefined || y === undefined))
    throw invalidParams('click needs parameter "ref" or "selector", or both "x" and "y"');
  const held = modifierBits(modifiers);
  if ('error' in held)
    throw invalidParams(`parameter "modifiers": ${held.error}`);
  const id = await targetTab(ctx, tabId);
  let point = { x, y };
  let element;
  const target = ref !== undefined || selector !== undefined ? elementTarget(params) : null;
  if (target) {
    const located = await locate(ctx, id, target, { requireEnabled: true, focusInCanvas: true });
    if (located.inCanvas)
      return focusInCanvas(ctx, id, target, located);
    point = { x: located.x, y: located.y };
    element = located.element;
  }
  const buttons = { left: 1, right: 2, middle: 4 }[button];
  // Held keys ride on the mouse events (the page reads ctrlKey, shiftKey… on them, and Chrome
  // opens a Control-clicked link in a new tab), as when a person holds them while clicking.
  const mouse = (type, extra) => ctx.debuggers.send(id, 'Input.dispatchMouseEvent',
      { type, ...point, ...(held.bits ? { modifiers: held.bits } : {}), ...extra });
  await pressing(ctx, id, async () => {
    await mouse('mouseMoved', {});
    // The move itself can change the page: a menu the pointer left closes and what was below
    // it moves up, a hover effect shifts the element. So the element is found again where it
    // now is before the press, as Playwright checks the target its pointer events hit.
    for (let again = 0; target && again < RELOCATE_TRIES; again++) {
      const now = await locate(ctx, id, target, { requireEnabled: true });
      if (Math.abs(now.x - point.x) < 1 && Math.abs(now.y - point.y) < 1)
        break;
      point = { x: now.x, y: now.y };
      await mouse('mouseMoved', {});
    }
    notePointer(id, point);
    // A double click is two clicks, as a person's is: a press and a release counted 1, then 2
    // (Chrome fires dblclick on the second), a moment apart. A page that tells one by its own
    // clock, between two mousedowns, sees both (Node-RED's editor opens a node so, when they
    // are more than 0 and less than 650 ms apart; a lone press counted 2 only selected it, and
    // two in the same millisecond did too).
    for (let count = 1; count <= clickCount; count++) {
      if (count > 1)
        await new Promise(resolve => setTimeout(resolve, MULTI_CLICK_GAP_MS));
      await mouse('mousePressed', { button, buttons, clickCount: count });
      await mouse('mouseReleased', { button, buttons: 0, clickCount: count });
    }
  });
  return { tabId: id, clicked: true, x: point.x, y: point.y, ...(element ? { element } : {}) };
}

/**
 * A click on part of what a canvas draws (locateElement's `inCanvas`): the mouse would land on
 * the canvas, wherever the page drew the part, so the part is focused instead, as a keyboard
 * user reaches it; Glide Data Grid selects the cell focused, and Enter then opens its editor.
 *
 * @param {CommandContext} ctx
 * @param {number} id
 * @param {import('../targets.js').ElementTarget} target
 * @param {{element: string, canvas?: string}} located
 */
async function focusInCanvas(ctx, id, target, located) {
  const focused = await evaluateExpression(ctx, id, elementExpression(el => {
    el.focus();
    return { focused: el.ownerDocument.activeElement === el };
  }, target));
  if (!focused?.focused)
    throw serverError(`Element ${describeTarget(target)} (${located.element}) is part of what a canvas draws, ` +
        'with no place on the screen of its own, and the page does not let it take the focus: click the canvas or use its keys');
  return {
    tabId: id, focused: true, element: located.element,
    note: `drawn on a canvas${located.canvas ? ` [ref=${located.canvas}]` : ''}, so focused rather than clicked ` +
      '(a click lands on the canvas); keys act on it now (Enter edits a grid\'s cell)',
  };
}

/** @param {CommandContext} ctx */
export async function type(ctx, params) {
  const { text, submit = false, slowly = false, tabId } = params;
  const target = elementTarget(params);
  const id = await targetTab(ctx, tabId);
  const started = Date.now();
  // A field's text without its spaces, to tell whether it took what was typed.
  const flat = held => String(held ?? '').replace(/\s+/g, '');
  // A field of a frame of another origin is prepared and read in that frame's world.
  const world = await worldOf(ctx, id, target);
  // The text (or `keys` of it) key by key, each character with its keyDown and keyUp
  // (`slowly`, a field that took none of it at once, a one-line field's last character).
  const typeKeys = async (keys = text) => {
    for (const events of typingEvents(keys)) {
      for (const event of events)
        await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', event);
    }
  };
  let prepared = await evaluateExpression(ctx, id, elementExpression(prepareTyping, target, text, slowly), world);
  // A field the page enables a moment later (after another field is filled) is waited for.
  while (prepared?.error === 'disabled' && Date.now() - started < ACTIONABLE_WAIT_MS) {
    await new Promise(resolve => setTimeout(resolve, ACTIONABLE_POLL_MS));
    prepared = await evaluateExpression(ctx, id, elementExpression(prepareTyping, target, text, slowly), world);
  }
  // A slider the page draws (`role=slider`) takes a number as fillForm's `slider` sets one:
  // by arrow keys, as a person moves it (refused before as a <div> that takes no text).
  if (prepared?.error === 'not-editable' && prepared.slider && /^\s*-?\d+(\.\d+)?\s*$/.test(text)) {
    const moved = await slideTo(ctx, id, target, Number(text));
    if (moved?.error)
      throw moved.error.includes(' ') ? serverError(`Slider ${describeTarget(target)}: ${moved.error}`) : elementError(moved, target);
    return { tabId: id, typed: true, value: String(moved.value) };
  }
  if (prepared?.error)
    throw elementError({ ...prepared, ...(prepared.error === 'disabled' ? { waitedMs: Date.now() - started } : {}) }, target);
  if (prepared?.set) {
    // A date, time, colour or range took its value whole (prepareTyping): nothing to type.
  } else if (slowly) {
    // Key by key: pages that act on keydown or keyup (suggestions, shortcuts) see each key.
    await typeKeys();
  } else {
    // A code editor's input: the editor's own edit where the page offers it (editorSetText),
    // else its select-all and Delete first, so the text replaces the editor's.
    const press = async (...combos) => {
      for (const combo of combos) {
        for (const event of keyPressEvents(combo).events)
          await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', event);
      }
    };
    const insert = async piece => ctx.debuggers.send(id, 'Input.insertText', { text: piece });
    let set = false;
    if (prepared?.editorInput) {
      set = Boolean((await evaluateExpression(ctx, id, elementExpression(editorSetText, target, text), world))?.set);
      if (!set)
        await press('ControlOrMeta+A', 'Delete');
    }
    if (set || text === '') {
      // Set by the editor's own edit, or cleared.
    } else if (prepared?.linewise) {
      await typeLineByLine(text, press, insert);
      // Suggestions come after a word or a `.` typed last, a moment later: waited for then.
      const waitMs = /[\p{L}\p{N}_$.]$/u.test(text) ? SUGGESTIONS_SHOW_MS : 0;
      if ((await evaluateExpression(ctx, id, elementExpression(editorSuggesting, target, waitMs), world))?.open)
        await press('Escape');
    } else if (prepared?.lastKey && !/[\r\n]$/.test(text)) {
      // A one-line field gets its last character as a key a person presses: a page that
      // searches on `keyup` (MkDocs Material's search box answered "Type to start searching"
      // to a text inserted whole) sees the key, and the text it holds then is the whole text.
      // A field that took none of what was inserted reads keys one by one: left to the
      // key-by-key typing below, all of it.
      const chars = Array.from(text);
      const last = chars.pop();
      const rest = chars.join('');
      let tookRest = true;
      if (rest) {
        await insert(rest);
        const held = (await evaluateExpression(ctx, id, elementExpression(readValue, target), world))?.value;
        // (A field that held those very words before took them, changed or not.)
        tookRest = typeof prepared.before !== 'string' || flat(held) !== flat(prepared.before) || flat(rest) === flat(prepared.before);
      }
      if (tookRest)
        await typeKeys(last);
    } else {
      await insert(text);
    }
  }
  let read = await evaluateExpression(ctx, id, elementExpression(readValue, target), world);
  // A field that took none of the text at once reads keys one by one (MUI's date field: each
  // part takes its digits as keys and moves on): typed key by key, as a person types it. Not
  // a text of several lines, whose Enter keys could send a form.
  let keyByKey = false;
  if (!slowly && !prepared?.set && !prepared?.editorInput && typeof prepared?.before === 'string' && text !== '' && !/[\r\n]/.test(text) &&
      flat(read?.value) === flat(prepared.before) && flat(text) !== flat(prepared.before)) {
    await typeKeys();
    keyByKey = true;
    read = (await evaluateExpression(ctx, id, elementExpression(readParts, target), world)) ??
      await evaluateExpression(ctx, id, elementExpression(readValue, target), world);
  }
  const value = read?.value ?? null;
  if (!submit) {
    // A field with suggestions (a combobox, an `aria-autocomplete` list) shows them a moment
    // after the keys, as a person sees them come: VitePress's search shows its results 100–
    // 200 ms after the last key, without a request, so the answer said nothing of them, and a
    // browser_find right after it found none. They are waited for (until the list begins to
    // change, SUGGESTIONS_FIRST_MS at most, then until it is still for SUGGESTIONS_STILL_MS),
    // so that the answer says what they show.
    await evaluateExpression(ctx, id,
        elementExpression(suggestionsSettled, target, SUGGESTIONS_STILL_MS, SUGGESTIONS_CAP_MS, SUGGESTIONS_FIRST_MS), world);
  } else {
    // Enter picks what a list of suggestions shows then: let it catch up with the text first.
    await evaluateExpression(ctx, id, elementExpression(suggestionsSettled, target, SUGGESTIONS_QUIET_MS, SUGGESTIONS_CAP_MS), world);
    // keyDown carrying "\r" is what makes Chrome fire keypress and submit the form.
    const enter = { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 };
    await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', { type: 'keyDown', ...enter, text: '\r', unmodifiedText: '\r' });
    await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', { type: 'keyUp', ...enter });
  }
  // An editor's typing rules may change keys' text (Monaco closes a bracket, indents a new
  // line again): said when the text it holds is not what was typed.
  const lines = held => String(held).replace(/\r\n?/g, '\n').replace(/[^\S\n]+$/gm, '').replace(/\n+$/, '');
  const note = keyByKey ? KEY_BY_KEY_NOTE
    : read?.hiddenInput ? HIDDEN_INPUT_NOTE
    : read?.partOnly ? PART_SHOWN_NOTE
    : prepared?.editorInput && value !== null && lines(value) !== lines(text) ? EDITOR_CHANGED_NOTE
    : read?.editable && !slowly && !prepared?.set && value !== null && lines(value) !== lines(text) ? RICH_CHANGED_NOTE : null;
  return { tabId: id, typed: true, value, submitted: submit, ...(note ? { note } : {}) };
}

/**
 * Of the options `refs` names (a locator's answer, if any), those the page draws: not a
 * native <select>'s (see optionShown).
 *
 * @param {CommandContext} ctx
 * @param {number} id the tab
 * @param {string[] | undefined} refs
 */
async function drawnOnly(ctx, id, refs) {
  const drawn = [];
  for (const ref of Array.isArray(refs) ? refs.slice(0, 10) : []) {
    const native = await evaluateExpression(ctx, id, elementExpression(inSelect, { ref }), await worldOf(ctx, id, { ref }))
      .catch(() => null);
    if (native === false)
      drawn.push(ref);
  }
  return drawn;
}

/**
 * The option a drop-down just opened shows: by its role and name (`option`, a locator), or,
 * where its list has no roles (antd's options are plain `div`s in a floating list: only a
 * hidden copy of one or two has role=option), by its words in the list that opened
 * (`drawnOne`: markDrawnOption). Either is looked for as a locator waits for its element
 * (by-locator.js `untilSomethingMatches`), as the list may come a moment after the click.
 *
 * @param {CommandContext} ctx
 * @param {number} id the tab
 * @param {string} option the locator of the option by role and name
 * @param {() => Promise<string | boolean>} drawnOne marks the option drawn with no role
 * @returns {Promise<{ref?: string, drawn?: string | boolean}>}
 */
function optionShown(ctx, id, option, drawnOne) {
  return untilSomethingMatches(async () => {
    const shown = await resolveLocators(ctx, { selector: option, tabId: id, each: true }).catch(() => null);
    // Those of a <select> elsewhere on the page are not the drawn drop-down's (AdminLTE's
    // form has Select2's states and a dual list box of the same states: "Texas" matched both,
    // and a second pick clicked the list box's "Delaware", which moved it across).
    const refs = await drawnOnly(ctx, id, shown?.refs);
    if (refs.length === 1)
      return { ref: refs[0] };
    // Several: the strict lookup names them in its refusal.
    if (refs.length > 1)
      return { ref: (await resolveLocators(ctx, { selector: option, tabId: id })).ref };
    const drawn = await drawnOne();
    if (drawn)
      return { drawn };
    throw new NothingMatches(`No element matches ${option}`);
  });
}

/**
 * Types a text into Monaco line by line, so that its typing rules leave the text as given.
 * Monaco types text key by key: a bracket or a quote it closes stays after the caret (and an
 * opening bracket with a selection surrounds it), and each new line is indented to its rules
 * before the line's own indentation is typed. So what it closed after the caret is deleted
 * before each line break, the indentation it gave a new line is deleted before the line is
 * typed, and the line break is inserted as text: Enter would accept a suggestion it shows.
 *
 * @param {string} text
 * @param {(...combos: string[]) => Promise<void>} press
 * @param {(piece: string) => Promise<unknown>} insert
 */
async function typeLineByLine(text, press, insert) {
  // A line break written "\r\n" (a text from Windows) is one break, not two.
  const lines = text.split(/\r\n?|\n/);
  for (const [i, line] of lines.entries()) {
    if (i > 0) {
      await press('Shift+End', 'Delete');
      await insert('\n');
      await press('Shift+Home', 'Delete');
    }
    if (line)
      await insert(line);
  }
  await press('Shift+End', 'Delete');
}

/** Arrow key presses at most to move a slider the page draws: 0 to 100 a step at a time. */
const SLIDER_MAX_PRESSES = 200;
/** Presses in a row that may leave a slider where it was before it is taken to be at its end. */
const SLIDER_STUCK_TRIES = 3;
/** How long after a press the slider may take to say its new value. */
const SLIDER_STUCK_WAIT_MS = 150;

/**
 * A slider the page draws (`role=slider`), a fillForm `slider` or a number typed into it:
 * focused, then moved with ArrowRight or ArrowLeft until its `aria-valuenow` is the number
 * asked, as a person moves it with the keyboard (every such slider takes arrow keys, by
 * ARIA's pattern). One that stops short (its steps do not land on the number, or its end)
 * answers where it stopped.
 *
 * @param {CommandContext} ctx
 * @param {number} id
 * @param {{ref?: string, selector?: string}} target
 * @param {number} wanted
 */
export async function slideTo(ctx, id, target, wanted) {
  const world = await worldOf(ctx, id, target);
  const read = () => evaluateExpression(ctx, id, elementExpression(focusSlider, target), world);
  let state = await read();
  if (state?.error)
    return state;
  if (state.now === null)
    return { error: 'a slider that says no value (aria-valuenow), so it cannot be set to a number' };
  if ((state.min !== null && wanted < state.min) || (state.max !== null && wanted > state.max))
    return { error: `${wanted} is outside the slider's range, ${state.min} to ${state.max}` };
  let stuck = 0;
  for (let presses = 0; state.now !== wanted && presses < SLIDER_MAX_PRESSES; presses++) {
    const key = state.now < wanted ? 'ArrowRight' : 'ArrowLeft';
    const before = state.now;
    for (const event of keyPressEvents(key).events)
      await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', event);
    // A page may say the new value a moment after the key (NiceGUI's slider, once its value
    // went round its framework).
    const until = Date.now() + SLIDER_STUCK_WAIT_MS;
    do
      state = await read();
    while (!state?.error && state.now === before && Date.now() < until);
    // The page took it away (a re-render replaced it).
    if (state?.error)
      return state;
    // It went past the number (its steps do not land on it).
    if (key === 'ArrowRight' ? state.now > wanted : state.now < wanted)
      break;
    // It did not move: at its end, or the key went elsewhere (a drop-down chosen just before
    // gives the focus back to its field as it closes, after the slider took it; `read`
    // focuses the slider again). A few tries.
    stuck = state.now === before ? stuck + 1 : 0;
    if (stuck >= SLIDER_STUCK_TRIES)
      break;
  }
  return { value: state.now };
}

/** @param {CommandContext} ctx */
export async function hover(ctx, params) {
  const target = elementTarget(params);
  const id = await targetTab(ctx, params.tabId);
  const { x, y, element } = await locate(ctx, id, target);
  await ctx.debuggers.send(id, 'Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
  notePointer(id, { x, y }, true);
  return { tabId: id, hovered: true, x, y, element };
}

/** @param {CommandContext} ctx */
export async function selectOption(ctx, params) {
  const { values, tabId } = params;
  const target = elementTarget(params);
  const named = describeTarget(target);
  const id = await targetTab(ctx, tabId);
  const result = await evaluateExpression(ctx, id, elementExpression(selectOptions, target, values), await worldOf(ctx, id, target));
  if (result?.error) {
    switch (result.error) {
      case 'not-select':
        // A drop-down the page draws (a combobox, a button that opens a list box) is chosen
        // from as a person does: opened, then its option clicked.
        if (result.dropDown)
          return pickFromDropDown(ctx, id, params, result.said ? `${result.said} (${named})` : named, values, Boolean(result.drawnOptions));
        throw serverError(`Element ${named} is a <${result.element}>, not a <select>; click custom drop-downs instead`);
      case 'no-option':
        throw serverError(`<select> ${named} has no option with value or label "${result.value}"; its options are: ${result.available.join(', ')}`);
      case 'option-disabled':
        throw serverError(`The option "${result.value}" of ${named} is disabled`);
      case 'not-multiple':
        throw invalidParams(`<select> ${named} takes one value, not ${result.count}: it is not a multi-select`);
      default:
        throw elementError(result, target);
    }
  }
  return { tabId: id, selected: result.values, labels: result.labels, ...(result.setBack ? { pageSetItTo: result.setBack } : {}) };
}

/**
 * Values chosen from a drop-down the page draws, as a person chooses them: a click opens it,
 * and a click on the option named each value (exactly; waited for as a locator waits) picks
 * it, in turn. A multi-select (Streamlit's tags, react-select's `isMulti`) often stays open
 * after a pick: after the first, an option already shown is clicked without opening the
 * drop-down again, which would close it. Playwright MCP refuses such an element; a model that takes it for a <select>
 * gets it done.
 *
 * @param {CommandContext} ctx
 * @param {number} id the tab
 * @param {object} params selectOption's (the drop-down's ref or selector)
 * @param {string} named the drop-down, as errors name it
 * @param {string[]} values the options' visible names
 */
async function pickFromDropDown(ctx, id, params, named, values, drawnOptions = false) {
  const { ref, selector } = params;
  const target = elementTarget(params);
  const world = await worldOf(ctx, id, target);
  // A drop-down with no roles (selectize's): its option is the one shown in its floating list
  // with exactly those words (markDrawnOption), clicked by the mark it leaves.
  // Its ref when it is in a frame (markDrawnOption gives it one), else true: clicked by its mark.
  const markDrawn = async value => {
    const found = await evaluateExpression(ctx, id, elementExpression(markDrawnOption, target, value, DRAWN_OPTION_MARK), world);
    return found?.found ? found.ref ?? true : false;
  };
  const picked = [];
  for (const value of values) {
    const option = `getByRole('option', { name: ${JSON.stringify(value)}, exact: true })`;
    // After a pick of ours only: an option of another list on the page is not taken for it.
    let drawn = drawnOptions && picked.length > 0 && await markDrawn(value);
    const shown = picked.length && !drawnOptions ? await resolveLocators(ctx, { selector: option, tabId: id, each: true }).catch(() => null) : null;
    // (A drawn one: a <select>'s option of the same name elsewhere on the page is not it.)
    const seen = await drawnOnly(ctx, id, shown?.refs);
    let at = seen.length === 1 ? seen[0] : undefined;
    if (at === undefined && !drawn) {
      await click(ctx, { ref, selector, tabId: id });
      drawn = drawnOptions && await markDrawn(value);
      try {
        if (!drawn)
          at = await optionShown(ctx, id, option, () => markDrawn(value)).then(found => {
            drawn = found.drawn ?? false;
            return found.ref;
          });
      } catch (error) {
        const why = /^No element matches/.test(messageOf(error)) ? `it shows no option named "${value}"` : messageOf(error);
        const done = picked.length ? ` (${picked.map(one => `"${one}"`).join(', ')} chosen before it)` : '';
        throw serverError(`${named} is a drop-down the page draws: it was opened, but ${why}${done}. ` +
            'Take a snapshot to see the options it shows, and click one (it is still open)');
      }
    }
    const byMark = drawn === true;
    const optionTarget = byMark ? { selector: `[${DRAWN_OPTION_MARK}]` } : { ref: drawn || at };
    if (picked.length === values.length - 1)
      await evaluateExpression(ctx, id, elementExpression(dropDownOpen, optionTarget, 'note'), world).catch(() => null);
    await click(ctx, { ...optionTarget, tabId: id });
    if (byMark) {
      await evaluateExpression(ctx, id, `document.querySelectorAll('[${DRAWN_OPTION_MARK}]').forEach(el => el.removeAttribute('${DRAWN_OPTION_MARK}'))`, world)
        .catch(() => null);
    }
    picked.push(value);
  }
  // Still open after the last pick (a multi-select stays open for more): closed with Escape,
  // as a person closes it, so that its list covers nothing the model clicks next.
  const open = async () => Boolean((await evaluateExpression(ctx, id, elementExpression(dropDownOpen, target, 'check'), world)
    .catch(() => null))?.open);
  let closed = '';
  if (await open()) {
    await pressKey(ctx, { key: 'Escape', tabId: id });
    // A list that fades out is shown a moment more.
    let still = await open();
    for (let tries = 0; still && tries < CLOSE_CHECKS; tries++) {
      await new Promise(resolve => setTimeout(resolve, ACTIONABLE_POLL_MS));
      still = await open();
    }
    closed = still ? '; it is still open' : ', then closed it (Escape)';
  }
  const said = picked.map(value => `"${value}"`).join(', ');
  return { tabId: id, selected: picked, picked: `opened ${named} and clicked its option${picked.length > 1 ? 's' : ''} ${said}${closed}` };
}

/** @param {CommandContext} ctx */
export async function pressKey(ctx, { key, text, tabId }) {
  if ((key === undefined) === (text === undefined))
    throw invalidParams('give "key" (a key such as Enter or Control+A) or "text" (its characters pressed in turn), one of them');
  let events;
  if (text !== undefined) {
    // As Playwright's keyboard.type: a key press per character, into whatever has focus.
    events = typingEvents(text).flat();
  } else {
    const plan = keyPressEvents(key);
    if ('error' in plan)
      throw invalidParams(`parameter "key": ${plan.error}`);
    events = plan.events;
  }
  const id = await targetTab(ctx, tabId);
  for (const event of events)
    await ctx.debuggers.send(id, 'Input.dispatchKeyEvent', event);
  return text !== undefined ? { tabId: id, typed: text } : { tabId: id, pressed: key };
}


/** @param {CommandContext} ctx */
export async function handleDialog(ctx, { accept, promptText, tabId }) {
  const id = await targetTab(ctx, tabId);
  const events = ctx.debuggers.events;
  let dialog = events.dialog(id);
  if (!dialog) {
    // The command that opens it may have returned a moment before the dialog appeared.
    await ctx.debuggers.attach(id);
    dialog = await new Promise(resolve => {
      const timer = setTimeout(() => {
        stop();
        resolve(events.dialog(id));
      }, DIALOG_GRACE_MS);
      const stop = events.watchDialogs(id, opened => {
        clearTimeout(timer);
        stop();
        resolve(opened);
      });
    });
  }
  if (!dialog)
    throw serverError(`tab ${id} shows no JavaScript dialog (none opened within ${DIALOG_GRACE_MS / 1000} s) to answer`);
  const params = { accept, ...(promptText !== undefined ? { promptText } : {}) };
  await ctx.debuggers.send(id, 'Page.handleJavaScriptDialog', params);
  // Chrome also sends Page.javascriptDialogClosed; do not wait for it, but do not report it open either.
  events.answered(id);
  return { tabId: id, handled: true, type: dialog.type, message: dialog.message, accepted: accept, ...(promptText !== undefined && dialog.type === 'prompt' ? { promptText } : {}) };
}
