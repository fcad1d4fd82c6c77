/**
 * Playwright's locators in an element command's `selector` (`startSelector`, `endSelector`):
 * resolved here, before the command runs, to the one element's ref (lib/locators.js says what
 * is understood and how it matches). Every element command takes them so, and a CSS selector
 * goes through untouched.
 */

import { LocatorError, NothingMatches, applySteps, isLocator, matchesText, parseLocator, pick, theOne } from '../locators.js';
import { cssInFrames, elementExpression, refsWithin, textMatches } from '../page-scripts.js';
import { invalidParams, serverError } from '../rpc.js';
import { CAPTURE_TREE, OUTLINE_MAX_NODES, capturePage } from './reading.js';
import { evaluateExpression, staleRefStart, targetTab } from './shared.js';

/** @typedef {import('../commands.js').CommandContext} CommandContext */

/** The selector params an element command may have, each with the ref param that replaces it. */
const TARGETS = [['selector', 'ref'], ['startSelector', 'startRef'], ['endSelector', 'endRef']];

/** How many of a `getByText`'s elements get a ref (and so can be picked with `.nth()`). */
const TEXT_MATCHES_NAMED = 50;

/** How many elements one read of each (`evaluateFunction {each: true}`) may name. */
const EACH_MAX = 2000;

/**
 * `params` with each locator among its selectors replaced by the ref of the one element it
 * names (a ref given beside it wins, as it does over a selector).
 *
 * @param {CommandContext} ctx
 * @param {Record<string, unknown>} params validated
 * @returns {Promise<Record<string, unknown>>}
 */
export async function resolveLocators(ctx, params) {
  const wanted = (/** @type {Record<string, unknown>} */ named) => TARGETS.filter(([selectorKey, refKey]) =>
    typeof named[selectorKey] === 'string' && named[refKey] === undefined && isLocator(named[selectorKey]));
  // browser_fill_form's fields name their elements too.
  const fields = Array.isArray(params.fields) ? params.fields : [];
  const own = wanted(params);
  if (own.length === 0 && !fields.some(field => field && typeof field === 'object' && wanted(field).length))
    return params;
  const tabId = await targetTab(ctx, params.tabId);
  // A read of every match (`each`, `all`) answers with what is there now, none included.
  if (params.each === true || params.all === true) {
    try {
      return await resolvedAll(ctx, tabId, params, own, fields, wanted);
    } catch (error) {
      throw error instanceof NothingMatches ? serverError(error.message) : error;
    }
  }
  return untilSomethingMatches(() => resolvedAll(ctx, tabId, params, own, fields, wanted), () => hiddenBehind(ctx, tabId));
}

/**
 * Whether `error` refused a ref that one of the command's locators was resolved to (by
 * {@link resolveLocators}, from `given` to `resolved`): the element was replaced between its
 * finding and the action (a grid drawing its rows again after a sort), nothing was done, and
 * the locator, which names whatever matches now, can be resolved again.
 *
 * @param {unknown} error
 * @param {Record<string, unknown>} given
 * @param {Record<string, unknown>} resolved
 */
export function lostLocatorElement(error, given, resolved) {
  const message = error instanceof Error ? error.message : '';
  return TARGETS.some(([, refKey]) => given[refKey] === undefined && typeof resolved[refKey] === 'string' &&
    message.startsWith(staleRefStart(resolved[refKey])));
}

/**
 * `attempt`'s answer once it stops throwing NothingMatches, as Playwright's locators wait for
 * their element: one the page shows a moment after the last action (a suggestion list after
 * typing, a panel after a click) is found, the page read again every LOCATOR_POLL_MS, up to
 * LOCATOR_WAIT_MS; then the error says it waited.
 *
 * @template T
 * @param {() => Promise<T>} attempt
 * @param {() => Promise<string | null>} [why] said in place of the advice when nothing came
 * @returns {Promise<T>}
 */
export async function untilSomethingMatches(attempt, why = async () => null) {
  const started = Date.now();
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const waited = Date.now() - started;
      if (!(error instanceof NothingMatches))
        throw error;
      if (waited >= LOCATOR_WAIT_MS) {
        const [what, advice] = error.message.split(/;(.*)/s);
        const because = await why().catch(() => null);
        throw serverError(`${what} (waited ${(waited / 1000).toFixed(1)} s for one to appear)` +
            `${because ? `; ${because}` : advice === undefined ? '' : `;${advice}`}`);
      }
      await new Promise(resolve => setTimeout(resolve, LOCATOR_POLL_MS));
    }
  }
}

/**
 * Waits, as a locator does (resolveLocators), for each CSS or XPath selector among `params`'
 * targets to match an element: one the page shows a moment after the last action is found, and
 * one that never comes is refused saying it was waited for. A ref given beside a selector wins
 * and is not waited for (a ref's element, once gone, never comes back), nor is a read of every
 * match (`each`, `all`), which answers with what is there.
 *
 * @param {CommandContext} ctx
 * @param {Record<string, unknown>} params validated, locators already resolved
 */
export async function awaitSelectors(ctx, params) {
  if (params.each === true || params.all === true)
    return;
  const fields = Array.isArray(params.fields) ? params.fields : [];
  const selectors = [params, ...fields].flatMap(named => named && typeof named === 'object'
    ? TARGETS.filter(([selectorKey, refKey]) => typeof named[selectorKey] === 'string' && named[refKey] === undefined)
        .map(([selectorKey]) => /** @type {string} */ (named[selectorKey]))
    : []);
  if (selectors.length === 0)
    return;
  const tabId = await targetTab(ctx, params.tabId);
  for (const selector of selectors) {
    // Words a model meant as an element's name ("Place order", "Customer name") read as CSS
    // name elements HTML has not (<Place>, <order>): nothing will ever match, so that is said at
    // once, with the ways to name an element by its words, rather than after the wait.
    if (/^[A-Za-z][A-Za-z0-9 ]*$/.test(selector.trim()) &&
        await evaluateExpression(ctx, tabId, `(${namesNoHtmlElement.toString()})(${JSON.stringify(selector)})`).catch(() => false)) {
      const words = JSON.stringify(selector.trim()).replace(/^"|"$/g, "'");
      throw serverError(`No element matches selector ${selector}: as CSS it names elements HTML has not ` +
          `(${selector.trim().split(/\s+/).reverse().map(word => `<${word}>`).join(' inside ')}). To name an element by its words, ` +
          `use a locator, getByRole('button', { name: ${words} }), getByLabel(${words}) or getByText(${words}), ` +
          'or a ref from browser_snapshot or browser_find');
    }
    await untilSomethingMatches(async () => {
      const found = await evaluateExpression(ctx, tabId, elementExpression(() => true, { selector }));
      if (found?.error === 'not-found')
        throw new NothingMatches(`No element matches selector ${selector}; take a snapshot (browser_snapshot) to see the page's elements, or use browser_find`);
    }, () => hiddenBehind(ctx, tabId));
  }
}

/**
 * Why nothing behind an open dialog or menu can be named, when that is so: a page that hides
 * the rest of itself from assistive technology while one is open (Radix's and Headless UI's
 * dialogs and menus set `aria-hidden` on the other children of `<body>`), so a locator by role
 * or name finds nothing there, as Playwright's finds nothing. Said in place of "take a
 * snapshot", which shows the open one alone.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @returns {Promise<string | null>}
 */
async function hiddenBehind(ctx, tabId) {
  const open = await evaluateExpression(ctx, tabId, `(${openOverHiddenPage.toString()})()`);
  if (!open?.role)
    return null;
  return `the page behind the open ${open.role}${open.name ? ` ${JSON.stringify(open.name)}` : ''} is hidden while it ` +
    'is open (the page hides the rest of itself from assistive technology), so nothing there can be named: close it ' +
    'first (a button of its own, or Escape)';
}

/**
 * The dialog or menu open over a page that hid the rest of itself (`aria-hidden` on a shown
 * child of `<body>`), with its name; none otherwise. Runs in the page.
 */
function openOverHiddenPage() {
  const hidden = Array.from(document.body?.children ?? []).some(el => el.getAttribute('aria-hidden') === 'true' &&
    el.checkVisibility() && el.getBoundingClientRect().height > 2);
  if (!hidden)
    return null;
  const open = Array.from(document.querySelectorAll('[role=dialog],[role=alertdialog],dialog[open],[role=menu],[role=listbox]'))
    .find(el => el.checkVisibility() && !el.closest('[aria-hidden=true]'));
  if (!open)
    return null;
  const by = open.getAttribute('aria-labelledby')?.split(/\s+/).map(id => document.getElementById(id)?.innerText ?? '').join(' ');
  const name = (open.getAttribute('aria-label') || by || open.querySelector('h1,h2,h3,h4,h5,h6,[role=heading]')?.innerText || '')
    .replace(/\s+/g, ' ').trim().slice(0, 60);
  return { role: open.getAttribute('role') || 'dialog', name };
}

/**
 * Whether a selector of bare words names an element HTML does not have (one not known to the
 * page, without the hyphen a custom element's name has), so that it can never match. Runs in
 * the page.
 *
 * @param {string} selector
 */
function namesNoHtmlElement(selector) {
  return selector.trim().split(/\s+/)
    .some(word => !word.includes('-') && document.createElement(word) instanceof HTMLUnknownElement);
}

/** How long a locator that names nothing waits for its element to appear. */
const LOCATOR_WAIT_MS = 3_000;
/** How often the page is read again meanwhile. */
const LOCATOR_POLL_MS = 150;

/**
 * One reading of the page for all of a command's locators (see resolveLocators).
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {Record<string, unknown>} params
 * @param {string[][]} own the params' own locators
 * @param {unknown[]} fields browser_fill_form's fields
 * @param {(named: Record<string, unknown>) => string[][]} wanted
 */
async function resolvedAll(ctx, tabId, params, own, fields, wanted) {
  /** @type {{tree?: object[]}} the page's tree, read once for all of this command's locators */
  const page = {};
  // A read of each element (evaluateFunction's `each` or `all`) takes all of its locator's
  // matches.
  const out = await resolvedIn(ctx, tabId, params, own, page, '', params.each === true || params.all === true);
  if (fields.length) {
    out.fields = [];
    for (const [index, field] of fields.entries()) {
      const named = field && typeof field === 'object' ? wanted(field) : [];
      out.fields.push(named.length ? await resolvedIn(ctx, tabId, /** @type {Record<string, unknown>} */ (field), named, page, `fields[${index}].`) : field);
    }
  }
  return out;
}

/**
 * The page's tree (captured once per command, which also gives its elements refs).
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {{tree?: object[]}} page
 * @returns {Promise<object[]>}
 */
async function treeOf(ctx, tabId, page) {
  page.tree ??= (await capturePage(ctx, tabId, { maxNodes: OUTLINE_MAX_NODES })).tree;
  return page.tree;
}

/**
 * `named` with each of its `wanted` locators replaced by a ref.
 *
 * @param {CommandContext} ctx
 * @param {number} tabId
 * @param {Record<string, unknown>} named
 * @param {string[][]} wanted pairs of selector key and ref key
 * @param {{tree?: object[]}} page
 * @param {string} at where `named` is in the params, for messages
 * @param {boolean} [every] `selector` becomes `refs`, every element it names, not one `ref`
 */
async function resolvedIn(ctx, tabId, named, wanted, page, at, every = false) {
  const out = { ...named };
  for (const [selectorKey, refKey] of wanted) {
    const source = /** @type {string} */ (named[selectorKey]).trim();
    let parsed;
    try {
      parsed = parseLocator(source);
    } catch (error) {
      if (error instanceof LocatorError)
        throw invalidParams(`parameter "${at}${selectorKey}": ${error.message}`);
      throw error;
    }
    let found = null;
    let total;
    if ('frame' in parsed) {
      // CSS in a frame's document, or one of the page's matches by its place: named by refs,
      // as a snapshot would name them.
      await treeOf(ctx, tabId, page);
      const answer = await evaluateExpression(ctx, tabId, `(${cssInFrames.toString()})(${CAPTURE_TREE}, ` +
          `${JSON.stringify(parsed.frame)}, ${JSON.stringify(parsed.css)}, ${every || parsed.steps ? EACH_MAX : TEXT_MATCHES_NAMED})`);
      if (answer.error === 'invalid-selector')
        throw invalidParams(`parameter "${at}${selectorKey}": ${source}: ${JSON.stringify(answer.selector)} is not a valid CSS selector: ${answer.message}`);
      if (answer.error === 'no-frame')
        throw serverError(`No frame matches ${JSON.stringify(parsed.frame)} in ${source} (an iframe or frame element); take a snapshot (browser_snapshot) to see the page's frames`);
      if (answer.error === 'other-origin')
        throw serverError(`${source}: the frame ${JSON.stringify(parsed.frame)} shows a page of another origin, whose document this page cannot reach; use the refs browser_snapshot shows inside it (f1e3)`);
      found = parsed.pick ? pick(answer.matches, parsed.pick) : answer.matches;
      total = parsed.pick ? found.length : answer.total;
      if (parsed.steps) {
        // locator(css).filter(…): the matches as the outline holds them, with what is inside
        // them, for the filter to read; then the steps after it.
        if (answer.total > EACH_MAX)
          throw serverError(`${source}: locator(${JSON.stringify(parsed.css)}) matches ${answer.total} elements, more than the ${EACH_MAX} a filter reads: narrow the selector`);
        const refs = new Set(found.map(node => node.ref));
        const nodes = [];
        const walk = items => {
          for (const item of items) {
            if (item.ref && refs.has(item.ref))
              nodes.push(item);
            walk(item.children || []);
          }
        };
        walk(await treeOf(ctx, tabId, page));
        found = applySteps([], parsed.steps, undefined, nodes);
        total = undefined;
      }
    } else if ('css' in parsed) {
      out[selectorKey] = parsed.css;
      continue;
    }
    // A selector's matches were filtered above, their steps taken there.
    const steps = 'frame' in parsed ? [] : parsed.steps ?? [];
    const textAt = steps.findIndex(step => step.kind === 'text');
    if (textAt !== -1 && steps.slice(textAt + 1).some(step => step.kind !== 'pick'))
      throw invalidParams(`parameter "${at}${selectorKey}": ${source}: getByText(…) must come last (before .first(), .last() or .nth() only)`);
    const treeSteps = textAt === -1 ? steps : steps.slice(0, textAt);
    /** @type {Set<string> | undefined} the refs inside what `locator(css)` named */
    let within;
    if (parsed.within !== undefined) {
      await treeOf(ctx, tabId, page);
      const inside = await evaluateExpression(ctx, tabId, `(${refsWithin.toString()})(${JSON.stringify(parsed.within)})`);
      if (inside?.error)
        throw invalidParams(`parameter "${at}${selectorKey}": ${source}: locator(${JSON.stringify(parsed.within)}) is not a valid CSS selector: ${inside.message}`);
      if (!inside?.matched)
        throw new NothingMatches(`No element matches locator(${JSON.stringify(parsed.within)}) in ${source}; take a snapshot (browser_snapshot) to see the page's elements, or use browser_find`);
      within = new Set(inside.refs);
    }
    if (treeSteps.length) {
      found = applySteps(await treeOf(ctx, tabId, page), treeSteps, within);
    }
    if (textAt !== -1) {
      const scope = found === null ? null : found.map(node => node.ref).filter(Boolean);
      const answer = await evaluateExpression(ctx, tabId,
          `(${textMatches.toString()})(${CAPTURE_TREE}, ${matchesText.toString()}, ${JSON.stringify(steps[textAt].text)}, ` +
          `${JSON.stringify(scope)}, ${every ? EACH_MAX : TEXT_MATCHES_NAMED}, ${JSON.stringify(found === null ? parsed.within : undefined) ?? 'undefined'})`);
      found = answer.matches;
      total = answer.total;
      for (const step of steps.slice(textAt + 1)) {
        found = pick(found, step);
        total = found.length;
      }
    }
    if (every && selectorKey === 'selector') {
      // Every match must be nameable, so that the i-th value is the element `.nth(i)` names.
      const refs = (found ?? []).filter(node => node.ref).map(node => node.ref);
      const count = Math.max(total ?? (found ?? []).length, refs.length);
      if (count > EACH_MAX)
        throw serverError(`${source} matches ${count} elements, more than the ${EACH_MAX} one read takes: narrow the locator`);
      if (count > refs.length)
        throw serverError(`${source} matches ${count} elements, of which ${refs.length} are in the page's outline (the others cannot be named): narrow the locator`);
      out.refs = refs;
      delete out[selectorKey];
      continue;
    }
    try {
      out[refKey] = theOne(found ?? [], source, total).ref;
    } catch (error) {
      // Nothing yet is waited for (resolveLocators); several is final.
      if (error instanceof LocatorError && !(error instanceof NothingMatches))
        throw serverError(error.message);
      throw error;
    }
    delete out[selectorKey];
  }
  return out;
}
