/**
 * "Ask me before" (issue 29): the person's rules for consequential steps, per site or for all
 * sites, and what in a page makes a step consequential.
 *
 * Two kinds: submitting a form ("forms"), and a purchase or payment ("purchases"). Each is a
 * list of site patterns as the off-limits list takes them (blocked-sites.js), where a line `*`
 * means every site. A click, a key press (Enter) or typing with `submit` that would submit a
 * form, or a click on a control the page marks as a purchase or payment, then waits for the
 * person's Allow or Deny in the popup (commands/ask-before.js).
 *
 * Pure: the rules are read from stored values; {@link pageConsequence} runs in the page.
 */

import { blockingPattern, parseSitePatterns } from './blocked-sites.js';

/** chrome.storage.local key: `{forms: string[], purchases: string[]}` of site patterns. */
export const ASK_BEFORE_KEY = 'askBefore';
/** The line that means "every site". */
export const EVERY_SITE = '*';

/** @typedef {{every: boolean, patterns: ReturnType<typeof parseSitePatterns>}} SiteRule */
/** @typedef {{forms: SiteRule, purchases: SiteRule}} AskRules */
/** @typedef {{forms: boolean, purchases: boolean}} Asks what to ask about on one page */

/**
 * The rules from the options page's lists and dev-config.json's `askBefore` (automated set-ups).
 *
 * @param {unknown} stored the stored `askBefore` value
 * @param {Record<string, unknown> | null} [devConfig]
 * @returns {AskRules}
 */
export function askRules(stored, devConfig = null) {
  const rule = kind => {
    const lines = [...listOf(stored, kind), ...listOf(devConfig?.askBefore, kind)].map(line => String(line).trim());
    return { every: lines.includes(EVERY_SITE), patterns: parseSitePatterns(lines.filter(line => line !== EVERY_SITE)) };
  };
  return { forms: rule('forms'), purchases: rule('purchases') };
}

/** @param {unknown} value @param {'forms'|'purchases'} kind @returns {unknown[]} */
function listOf(value, kind) {
  const list = value && typeof value === 'object' ? /** @type {any} */ (value)[kind] : undefined;
  return Array.isArray(list) ? list : [];
}

/**
 * What the person asked to be asked about on the page at `url`.
 *
 * @param {AskRules} rules
 * @param {string | undefined} url
 * @returns {Asks}
 */
export function asksFor(rules, url) {
  const applies = (/** @type {SiteRule} */ rule) => rule.every || blockingPattern(rule.patterns, url) !== undefined;
  return { forms: applies(rules.forms), purchases: applies(rules.purchases) };
}

/** Whether any site has a rule (when none does, nothing is checked in the page). @param {AskRules} rules */
export function asksAnything(rules) {
  return [rules.forms, rules.purchases].some(rule => rule.every || rule.patterns.length > 0);
}

/**
 * Runs in the page: what acting on `element` would do. `how` says how the element is found when
 * `element` is null: the element at a viewport point (a click at x, y), or the focused one (a
 * key press). Answers whether it would submit a form, whether it reads as a purchase or payment
 * (its words: Buy, Pay, Place order, Checkout…; `data-purchase` / `data-payment` /
 * `data-consequential` on it or an ancestor; a form with card fields, autocomplete `cc-*`), and
 * the element in words for the person ("the button “Place order” in the form “Checkout”").
 * Self-contained (sent to the page as source).
 *
 * @param {Element | null} element
 * @param {{x?: number, y?: number, focused?: boolean, enter?: boolean}} how
 * @returns {{submits: boolean, purchase: boolean, words: string} | {error: string} | {frame: object}}
 *   `frame`: the point or focus is in a frame of another origin (kept on the window), with
 *   `how` for asking there
 */
export function pageConsequence(element, how) {
  let el = element;
  if (!el && how.focused)
    el = document.activeElement;
  else if (!el && typeof how.x === 'number')
    el = document.elementFromPoint(how.x, how.y);
  // A point or the focus inside a frame: the frame's element. A frame of another origin cannot
  // be read from here: it is kept for the extension, which asks again in the frame's own world
  // (commands/other-frames.js), at the point in the frame's viewport.
  let [x, y] = [how.x, how.y];
  while (el && (el.localName === 'iframe' || el.localName === 'frame')) {
    const rect = el.getBoundingClientRect();
    const css = el.ownerDocument.defaultView.getComputedStyle(el);
    if (typeof x === 'number') {
      x -= rect.x + el.clientLeft + parseFloat(css.paddingLeft);
      y -= rect.y + el.clientTop + parseFloat(css.paddingTop);
    }
    let inner = null;
    try {
      inner = el.contentDocument;
    } catch {
      inner = null;
    }
    if (!inner) {
      window[Symbol.for('mcp-relay.frameInTheWay')] = el;
      return { frame: { ...how, ...(typeof x === 'number' ? { x, y } : {}) } };
    }
    el = how.focused ? inner.activeElement : inner.elementFromPoint(x, y);
  }
  if (!el || el === el.ownerDocument.body || el === el.ownerDocument.documentElement)
    return { submits: false, purchase: false, words: 'the page' };
  const control = el.closest('button, input, a, [role="button"], select, textarea') || el;
  const tag = control.tagName.toLowerCase();
  const type = (control.getAttribute('type') || '').toLowerCase();
  const form = control.form || control.closest('form');
  const text = (control.value && (tag === 'input' && ['submit', 'button'].includes(type)) ? control.value : control.innerText || control.textContent || '')
    .replace(/\s+/g, ' ').trim().slice(0, 80);
  const label = text || control.getAttribute('aria-label') || control.getAttribute('title') || control.getAttribute('name') || '';
  let submits = false;
  if (how.enter) {
    // Enter in a form's text field submits it (implicit submission), as does Enter on a submit button.
    const textual = tag === 'input' && !['button', 'checkbox', 'radio', 'reset', 'file', 'color', 'range'].includes(type);
    submits = Boolean(form) && (textual || (tag === 'button' && type !== 'button' && type !== 'reset'));
  } else if (form) {
    submits = (tag === 'button' && (type === '' || type === 'submit')) || (tag === 'input' && (type === 'submit' || type === 'image'));
  }
  const marked = control.closest('[data-purchase], [data-payment], [data-consequential]') !== null;
  const words = /\b(buy|pay|purchase|place (?:your )?order|order now|checkout|check out|complete (?:order|purchase)|confirm (?:order|payment|purchase)|subscribe)\b/i;
  const cardForm = form ? form.querySelector('[autocomplete^="cc-"], [autocomplete*=" cc-"]') !== null : false;
  const actsOnIt = submits || tag === 'button' || tag === 'a' || type === 'submit' || control.getAttribute('role') === 'button';
  const purchase = marked || (actsOnIt && (words.test(label) || (submits && cardForm)));
  const kind = tag === 'a' ? 'link' : tag === 'input' ? (type === 'submit' || type === 'button' || type === 'image' ? 'button' : 'field') : tag === 'select' ? 'list' : tag === 'textarea' ? 'text box' : tag === 'button' || control.getAttribute('role') === 'button' ? 'button' : 'element';
  const formName = form ? (form.getAttribute('aria-label') || form.getAttribute('name') || form.querySelector('h1, h2, h3, legend')?.textContent || form.id || '').replace(/\s+/g, ' ').trim().slice(0, 60) : '';
  const described = `the ${kind}${label ? ` “${label}”` : ''}${form ? ` in the form${formName ? ` “${formName}”` : ''}` : ''}`;
  return { submits, purchase, words: described };
}

/** Where {@link holdSubmissions} keeps what it held back, on the top window (a symbol: no page name collides). */
export const HELD_SUBMISSIONS_KEY = 'mcp-relay.held-submissions';

/**
 * Runs in the page, before a `fillForm` where the person asked to approve form submissions:
 * from now until {@link takeHeldSubmissions}, a form submission the page starts while its
 * fields are filled (a `change` handler calling `form.submit()` or `requestSubmit()`, a click
 * handler on a checkbox) is held back instead of sent, in this window and its same-origin frames:
 * `HTMLFormElement.prototype.submit` is replaced, and a `submit` event is stopped in the capture
 * phase before the page's own handlers see it. Self-contained (sent to the page as source).
 *
 * @param {string} key
 * @returns {boolean}
 */
export function holdSubmissions(key) {
  const slot = Symbol.for(key);
  if (window[slot])
    return false;
  const windows = [];
  const walk = win => {
    windows.push(win);
    for (let i = 0; i < win.frames.length; i++) {
      try {
        if (win.frames[i].document)
          walk(win.frames[i]);
      } catch {
        // A cross-origin frame: its forms are not this page's to hold.
      }
    }
  };
  walk(window);
  const state = { held: [], undo: [] };
  for (const win of windows) {
    const proto = win.HTMLFormElement.prototype;
    const submit = proto.submit;
    proto.submit = function heldSubmit() {
      state.held.push({ form: this, submitter: null, send: () => submit.call(this) });
    };
    const stop = event => {
      if (!(event.target instanceof win.HTMLFormElement))
        return;
      event.preventDefault();
      event.stopImmediatePropagation();
      const form = event.target;
      const submitter = event.submitter ?? null;
      state.held.push({ form, submitter, send: () => form.requestSubmit(submitter && submitter.form === form ? submitter : undefined) });
    };
    win.addEventListener('submit', stop, true);
    state.undo.push(() => {
      proto.submit = submit;
      win.removeEventListener('submit', stop, true);
    });
  }
  Object.defineProperty(window, slot, { value: state, configurable: true });
  return true;
}

/**
 * Runs in the page after the fields are filled: ends the hold of {@link holdSubmissions} (what
 * the page submits from now on goes through) and says which forms the page tried to submit
 * meanwhile, in words for the person ("the form “Delivery”"), with whether one reads as a
 * purchase or payment (card fields, or marked `data-purchase` / `data-payment` /
 * `data-consequential`). The held submissions wait for {@link takeHeldSubmissions}.
 * Self-contained (sent to the page as source).
 *
 * @param {string} key
 * @returns {{forms: {words: string, purchase: boolean}[]}}
 */
export function peekHeldSubmissions(key) {
  const state = window[Symbol.for(key)];
  if (!state)
    return { forms: [] };
  for (const undo of state.undo.splice(0))
    undo();
  const forms = [];
  for (const { form } of state.held) {
    if (forms.some(seen => seen.form === form))
      continue;
    const name = (form.getAttribute('aria-label') || form.getAttribute('name') || form.querySelector('h1, h2, h3, legend')?.textContent || form.id || '')
        .replace(/\s+/g, ' ').trim().slice(0, 60);
    const purchase = form.closest('[data-purchase], [data-payment], [data-consequential]') !== null ||
        form.querySelector('[autocomplete^="cc-"], [autocomplete*=" cc-"], [data-purchase], [data-payment], [data-consequential]') !== null;
    forms.push({ form, words: `the form${name ? ` “${name}”` : ''}`, purchase });
  }
  return { forms: forms.map(({ words, purchase }) => ({ words, purchase })) };
}

/**
 * Runs in the page: ends the hold of {@link holdSubmissions} and, with `send`, submits each form
 * the page tried to submit during it, once, as the page asked (`submit()` or `requestSubmit`
 * with its submitter); without `send` the held submissions are dropped. Self-contained.
 *
 * @param {string} key
 * @param {boolean} send
 * @returns {{sent: number}}
 */
export function takeHeldSubmissions(key, send) {
  const slot = Symbol.for(key);
  const state = window[slot];
  if (!state)
    return { sent: 0 };
  for (const undo of state.undo.splice(0))
    undo();
  delete window[slot];
  let sent = 0;
  const done = [];
  for (const entry of state.held) {
    if (!send || done.includes(entry.form) || !entry.form.isConnected)
      continue;
    done.push(entry.form);
    entry.send();
    sent += 1;
  }
  return { sent };
}
