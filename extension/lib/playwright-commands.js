/**
 * The commands behind the rest of Playwright MCP's tool set (issue 14): fillForm,
 * fileUpload, drag, networkRequests, evaluateFunction, elementScreenshot, resize, printPdf
 * and closeAgentTabs. commands.js adds this table to its own; the handlers follow its rules
 * (a tab through {@link targetTab}, page work through CDP, expected failures as -32602 or
 * -32000 with a sentence a model can act on).
 *
 * Elements are named by `ref` (from a snapshot) or `selector` through targets.js, and found
 * by page-scripts.js's `findElementThen`, so a stale ref is refused here as everywhere.
 */

import { fillingWithAsking } from './commands/ask-before.js';
import { frameOffset, sendIn } from './commands/other-frames.js';
import { notePointer, pressing } from './commands/pointer.js';
import { selectOption, slideTo } from './commands/input.js';
import { elementError, evaluateExpression, locate, messageOf, onChooserInput, staleRefMessage, targetTab, unknownRefMessage, worldOf } from './commands/shared.js';
import { fieldAction, fillField, documentBox, MAX_FIELDS, setInputFiles } from './form-fields.js';
import { POST_DATA_CLIP, REQUEST_LIMIT, clipped } from './network.js';
import { elementExpression, findElementThen, findElementsThen, readableValue } from './page-scripts.js';
import { invalidParams, serverError } from './rpc.js';
import { TARGET_PARAMS, describeTarget, elementTarget } from './targets.js';

const TAB_ID = Object.freeze({ type: 'integer', min: 0 });

/** Characters of a response body returned; the rest is counted, not sent. */
export const BODY_CLIP = 100_000;
/** How long a drag waits for Chrome to say an HTML5 drag started (else it was a pointer drag). */
const DRAG_START_MS = 500;
/** Pointer moves between the start and the end of a drag: pages that track movement see a path. */
const DRAG_STEPS = 5;
/** Largest viewport `resize` sets; Chrome's own limit for emulated screens is 10,000,000. */
const MAX_VIEWPORT = 10_000;
const ELEMENT_CAPTURE_TIMEOUT_MS = 10_000;
const PDF_TIMEOUT_MS = 30_000;

export const PLAYWRIGHT_COMMANDS = {
  fillForm: {
    params: { fields: { type: 'array', required: true, nonEmpty: true, maxItems: MAX_FIELDS }, tabId: TAB_ID },
    run: fillForm,
  },
  fileUpload: {
    params: { ...TARGET_PARAMS, files: { type: 'array', required: true, nonEmpty: true, maxItems: 100 }, tabId: TAB_ID },
    run: fileUpload,
  },
  drag: {
    params: {
      startSelector: { type: 'string', nonEmpty: true },
      startRef: { type: 'string', nonEmpty: true },
      endSelector: { type: 'string', nonEmpty: true },
      endRef: { type: 'string', nonEmpty: true },
      tabId: TAB_ID,
    },
    run: drag,
  },
  networkRequests: { params: { requestId: { type: 'string', nonEmpty: true }, index: { type: 'integer', min: 1 }, sincePage: { type: 'boolean' }, tabId: TAB_ID }, run: networkRequests },
  evaluateFunction: {
    // `each`: the function is called with every element the target names (a locator's or a
    // selector's matches), and its value is their list: how a script's page reads
    // allTextContents() or count() of a getBy… locator in one call.
    // `all`: the function is called once with the list of them (Playwright's evaluateAll).
    params: { function: { type: 'string', required: true, nonEmpty: true }, ...TARGET_PARAMS, each: { type: 'boolean' }, all: { type: 'boolean' }, tabId: TAB_ID },
    run: evaluateFunction,
  },
  elementScreenshot: {
    params: { ...TARGET_PARAMS, format: { type: 'string', oneOf: ['png', 'jpeg', 'webp'] }, tabId: TAB_ID },
    run: elementScreenshot,
  },
  resize: {
    params: {
      width: { type: 'integer', required: true, min: 1, max: MAX_VIEWPORT },
      height: { type: 'integer', required: true, min: 1, max: MAX_VIEWPORT },
      tabId: TAB_ID,
    },
    run: resize,
  },
  printPdf: { params: { tabId: TAB_ID }, run: printPdf },
  closeAgentTabs: { params: {}, run: closeAgentTabs },
};

/** @param {import('./commands.js').CommandContext} ctx */
async function fillForm(ctx, { fields, tabId }) {
  const planned = fields.map((field, index) => {
    const checked = fieldAction(field, index);
    if ('error' in checked)
      throw invalidParams(checked.error);
    return { field, action: checked.action, target: fieldTarget(field, index) };
  });
  const id = await targetTab(ctx, tabId);
  const filled = [];
  // Where the person asked to approve form submissions, one the page starts as its fields are
  // filled waits for their Allow (commands/ask-before.js).
  const { submitted } = await fillingWithAsking(ctx, id, async () => {
    for (const { field, action, target } of planned) {
      let result = await evaluateExpression(ctx, id, elementExpression(fillField, target, action), await worldOf(ctx, id, target));
      // A drop-down or a slider the page draws is set as a person sets it: the drop-down
      // opened and its option clicked, the slider moved with the arrow keys.
      if (result?.error === 'wrong-kind' && result.drawn)
        result = await pickDrawn(ctx, id, target, action.option);
      else if (result?.error === 'wrong-kind' && result.slider)
        result = await slideTo(ctx, id, target, action.number);
      if (result?.error) {
        const done = filled.length ? ` (the fields before it were filled: ${filled.map(f => f.name).join(', ')})` : '';
        throw serverError(`Field "${field.name ?? describeTarget(target)}" (${describeTarget(target)}): ${failureText(result)}${done}`);
      }
      filled.push({ name: field.name ?? describeTarget(target), type: field.type, ...result });
    }
  });
  return { tabId: id, filled, ...(submitted?.length ? { submitted } : {}) };
}

/**
 * A fillForm `combobox` that is no `<select>`: chosen as browser_select_option chooses from a
 * drop-down the page draws (input.js), or refused as it refuses.
 *
 * @param {import('./commands.js').CommandContext} ctx
 * @param {number} id
 * @param {{ref?: string, selector?: string}} target
 * @param {string} option
 */
async function pickDrawn(ctx, id, target, option) {
  try {
    const picked = await selectOption(ctx, { ...target, values: [option], tabId: id });
    return { value: picked.labels?.[0] ?? picked.selected[0] };
  } catch (error) {
    return { error: messageOf(error) };
  }
}

/**
 * A form field's element, with the field named in the error when it names none.
 *
 * @param {{ref?: string, selector?: string, name?: string}} field
 * @param {number} index
 */
function fieldTarget(field, index) {
  try {
    return elementTarget(field);
  } catch (error) {
    error.message = `fields[${index}]${field.name ? ` ("${field.name}")` : ''}: ${error.message}`;
    throw error;
  }
}

/** @param {import('./commands.js').CommandContext} ctx */
async function fileUpload(ctx, { selector, ref, files, tabId }) {
  for (const [index, file] of files.entries()) {
    if (typeof file?.name !== 'string' || typeof file?.data !== 'string')
      throw invalidParams(`files[${index}] must be {name, mimeType, data (base64)}`);
  }
  const id = await targetTab(ctx, tabId);
  const given = files.map(file => ({
    name: file.name, mimeType: typeof file.mimeType === 'string' ? file.mimeType : 'application/octet-stream', data: file.data,
  }));
  // Without an element: the input of the file chooser an action opened (action-reports.js),
  // as Playwright MCP answers its file chooser, else the page's only file input (a page with
  // several must be told which).
  const events = ctx.debuggers?.events;
  const chooser = selector === undefined && ref === undefined ? events?.fileChooser(id) : undefined;
  if (chooser) {
    const result = await onChooserInput(ctx, id, chooser, `function (files) { return (${setInputFiles})(this, files); }`, given);
    // Refused (one file too many, a disabled input), the chooser stays open for another try;
    // answered, or its input gone, it is closed.
    if (result?.error)
      throw uploadError(result, null);
    events.fileChooserAnswered(id);
    if (result)
      return { tabId: id, uploaded: result.files };
  }
  const target = selector === undefined && ref === undefined ? 'input[type=file]' : elementTarget({ selector, ref });
  if (selector === undefined && ref === undefined) {
    const count = await evaluateExpression(ctx, id, 'document.querySelectorAll("input[type=file]").length');
    if (count !== 1)
      throw serverError(count === 0
        ? 'The page has no file input (<input type=file>); click what opens the upload first, or name the input with "ref" or "selector"'
        : `The page has ${count} file inputs; name the one to use with "ref" or "selector"`);
  }
  const result = await evaluateExpression(ctx, id, elementExpression(setInputFiles, target, given), await worldOf(ctx, id, target));
  if (result?.error)
    throw uploadError(result, target);
  return { tabId: id, uploaded: result.files };
}

/**
 * Why files could not be given to an input.
 *
 * @param {{error: string, element?: string, count?: number}} failure from `setInputFiles`
 * @param {import('./targets.js').ElementTarget | string | null} target null: the input of the
 *   open file chooser
 */
function uploadError(failure, target) {
  const input = target === null ? 'The file input of the open file chooser' : `The file input ${describeTarget(target)}`;
  if (failure.error === 'not-file-input' && target !== null)
    return serverError(`Element ${describeTarget(target)} is a <${failure.element}>, not an <input type=file>`);
  if (failure.error === 'not-multiple')
    return serverError(`${input} takes one file, not ${failure.count}`);
  if (target === null)
    return serverError(`${input} ${failure.error === 'disabled' ? 'is disabled' : `could not take the files (${failure.error})`}`);
  return elementError(failure, target);
}

/**
 * Drags from one element to another with real input: the mouse is pressed on the start,
 * moved in steps and released on the end. When the page starts an HTML5 drag (draggable
 * elements), Chrome would run its own drag loop, which synthetic events cannot steer; so the
 * drag is intercepted (`Input.setInterceptDrags`) and its data dropped on the end element with
 * `Input.dispatchDragEvent`, as a person's drop would.
 *
 * @param {import('./commands.js').CommandContext} ctx
 */
async function drag(ctx, params) {
  const startTarget = elementTarget(params, 'start');
  const endTarget = elementTarget(params, 'end');
  const { tabId } = params;
  const id = await targetTab(ctx, tabId);
  // The end first: locating scrolls, and the start must be where it is when it is pressed.
  const end = await located(ctx, id, endTarget);
  const start = await located(ctx, id, startTarget);
  const send = (method, params) => ctx.debuggers.send(id, method, params);
  const mouse = (type, point, extra = {}) => send('Input.dispatchMouseEvent', { type, x: point.x, y: point.y, button: 'left', ...extra });
  await send('Input.setInterceptDrags', { enabled: true });
  const intercepted = ctx.debuggers.taps.expect(id, 'Input.dragIntercepted');
  let html5 = false;
  try {
    // The press activates the tab's window; done first, so the person's pointer does not
    // move the page's in the middle of the drag (pointer.js).
    await pressing(ctx, id, async () => {
      await mouse('mouseMoved', start, { button: 'none' });
      await mouse('mousePressed', start, { buttons: 1, clickCount: 1 });
      for (let step = 1; step <= DRAG_STEPS; step++) {
        const point = { x: start.x + (end.x - start.x) * step / DRAG_STEPS, y: start.y + (end.y - start.y) * step / DRAG_STEPS };
        await mouse('mouseMoved', point, { buttons: 1 });
      }
      const dragged = await intercepted.event(DRAG_START_MS);
      if (dragged?.data) {
        html5 = true;
        for (const type of ['dragEnter', 'dragOver', 'drop'])
          await send('Input.dispatchDragEvent', { type, x: end.x, y: end.y, data: dragged.data });
      }
      await mouse('mouseReleased', end, { buttons: 0, clickCount: 1 });
      notePointer(id, end);
    });
  } finally {
    intercepted.cancel();
    await send('Input.setInterceptDrags', { enabled: false }).catch(() => {});
  }
  return { tabId: id, dragged: true, from: start.element, to: end.element, html5Drop: html5 };
}

/** @param {import('./commands.js').CommandContext} ctx */
async function networkRequests(ctx, { requestId, index, sincePage = false, tabId }) {
  const id = await targetTab(ctx, tabId);
  // Recording starts with the attachment; attach now so later requests are kept.
  await ctx.debuggers.attach(id);
  if (requestId !== undefined && index !== undefined)
    throw invalidParams('give requestId or index, not both');
  if (requestId === undefined && index === undefined) {
    // sincePage: only the page now shown (as Playwright MCP lists them), earlier pages counted.
    const { requests, dropped, earlier } = ctx.debuggers.network.requests(id, { sincePage });
    return {
      tabId: id,
      requests,
      ...(sincePage ? { earlier } : {}),
      ...(dropped ? { dropped, note: `${dropped} older requests were dropped: only the last ${REQUEST_LIMIT} of each tab are kept` } : {}),
    };
  }
  // `index`: the request numbered so in the list of the page now shown (Playwright MCP's
  // browser_network_request); a redirect's every hop has a number of its own.
  let hop;
  let redirected = false;
  if (index !== undefined) {
    const found = ctx.debuggers.network.byIndex(id, index);
    if ('missing' in found)
      throw serverError(`tab ${id} has no request ${index}: ${found.missing}; list them with browser_network_requests`);
    ({ requestId, hop, redirected } = found);
  }
  const details = ctx.debuggers.network.details(id, requestId, hop);
  if (!details)
    throw serverError(`tab ${id} has no kept request "${requestId}"; list them without requestId`);
  // As Playwright MCP's browser_network_request: the request's headers and body, then the
  // response's headers and body (or why there is none).
  const { request, requestHeaders, responseHeaders, hasPostData } = details;
  let { postData } = details;
  if (postData === undefined && hasPostData) {
    postData = await ctx.debuggers.send(id, 'Network.getRequestPostData', { requestId })
        .then(answer => clipped(String(answer?.postData ?? ''), POST_DATA_CLIP))
        .catch(() => undefined);
  }
  const answer = {
    tabId: id,
    requestId,
    request: { ...request, headers: requestHeaders, ...(postData !== undefined ? { body: postData } : {}) },
    ...(responseHeaders ? { responseHeaders } : {}),
  };
  if (request.failure)
    return { ...answer, bodyUnavailable: 'the request failed' };
  // An earlier hop of a redirect: Chrome keeps the body of the last hop only, under the same id.
  if (redirected)
    return { ...answer, bodyUnavailable: 'it was redirected' };
  if (!request.finished)
    return { ...answer, bodyUnavailable: 'the response has not finished loading' };
  let response;
  try {
    response = await ctx.debuggers.send(id, 'Network.getResponseBody', { requestId });
  } catch (error) {
    return { ...answer, bodyUnavailable: `${messageOf(error)}; Chrome keeps bodies only for a while, and never for redirects` };
  }
  const body = String(response.body ?? '');
  const cut = body.length > BODY_CLIP;
  return {
    ...answer,
    base64Encoded: Boolean(response.base64Encoded),
    body: cut ? body.slice(0, BODY_CLIP) : body,
    ...(cut ? { clipped: true, note: `only the first ${BODY_CLIP} of ${body.length} characters of the response body are shown` } : {}),
  };
}

/**
 * Playwright's form of evaluate: the source of a function, called with no argument or with
 * the element named by ref/selector; its (awaited) value comes back as JSON. With `each`,
 * called with every element the target names in turn, the value their list; with `all`,
 * called once with the list of them (`refs` are a locator's matches, put there by
 * commands/by-locator.js).
 *
 * @param {import('./commands.js').CommandContext} ctx
 */
async function evaluateFunction(ctx, { function: source, selector, ref, refs, each = false, all = false, tabId }) {
  const withElement = selector !== undefined || ref !== undefined || refs !== undefined;
  if (each && all)
    throw invalidParams('give "each" (the function called with each element) or "all" (called once with their list), not both');
  if ((each || all) && !withElement)
    throw invalidParams(`parameter "${each ? 'each' : 'all'}" reads every element a target names: give "ref" or "selector" too`);
  const target = refs !== undefined ? { refs } : withElement ? elementTarget({ selector, ref }) : undefined;
  const id = await targetTab(ctx, tabId);
  if (refs !== undefined) {
    // A locator's matches may lie in frames of another origin too: each world reads its own,
    // and the values come back in the matches' order.
    const groups = await refsByWorld(ctx, id, refs);
    if (groups.length > 1 && all)
      throw serverError('The locator matches elements in a frame of another origin as well as elsewhere, and one function cannot ' +
          'be handed elements of different frames at once: narrow it to one frame (frameLocator(…)), or read each element');
    if (groups.length > 1 || groups[0]?.world) {
      const value = new Array(refs.length);
      let type = 'object';
      for (const group of groups) {
        const answer = await evaluateIn(ctx, id, source, { refs: group.refs }, { each, all, withElement }, group.world);
        if (all)
          return answer;
        answer.value.forEach((one, i) => { value[group.at[i]] = one; });
        type = answer.type;
      }
      return { value, type };
    }
  }
  // An element of a frame of another origin: called in that frame's world (its DOM; not its
  // scripts' variables, which live in the page's own world of that frame).
  return evaluateIn(ctx, id, source, target, { each, all, withElement }, await worldOf(ctx, id, target));
}

/**
 * `refs` grouped by the world each lives in (the page's own, or a frame of another origin's),
 * each group with the places of its refs in `refs`.
 *
 * @param {import('./commands.js').CommandContext} ctx
 * @param {number} tabId
 * @param {string[]} refs
 * @returns {Promise<{world: object | null, refs: string[], at: number[]}[]>}
 */
async function refsByWorld(ctx, tabId, refs) {
  /** @type {Map<string, object | null>} frame number → world (null: the page's own) */
  const worlds = new Map();
  const groups = new Map();
  for (const [index, ref] of refs.entries()) {
    const frame = /^f(\d+)e\d+$/.exec(ref)?.[1] ?? '0';
    if (!worlds.has(frame))
      worlds.set(frame, frame === '0' ? null : await worldOf(ctx, tabId, { ref }));
    const key = worlds.get(frame) ? frame : '0';
    if (!groups.has(key))
      groups.set(key, { world: worlds.get(key) ?? null, refs: [], at: [] });
    groups.get(key).refs.push(ref);
    groups.get(key).at.push(index);
  }
  return [...groups.values()];
}

/**
 * One evaluation of a model's function (see {@link evaluateFunction}) in one world.
 *
 * @param {import('./commands.js').CommandContext} ctx
 * @param {number} id the tab
 * @param {string} source
 * @param {any} target
 * @param {{each: boolean, all: boolean, withElement: boolean}} how
 * @param {{contextId: number, sessionId?: string} | null} world
 */
async function evaluateIn(ctx, id, source, target, { each, all, withElement }, world) {
  // The source is the model's, pasted as an expression: a syntax error surfaces as the
  // evaluation's exception, and anything but a function is refused by the wrapper.
  const expression = `(async () => {
    const readable = ${readableValue.toString()};
    const fn = (${source}\n);
    if (typeof fn !== 'function')
      return { notAFunction: typeof fn };
    if (${JSON.stringify(each || all)}) {
      const found = (${findElementsThen.toString()})(elements => ({ elements }), ${JSON.stringify(target)}, ${findElementThen.toString()});
      if (found.error)
        return found;
      if (${JSON.stringify(all)}) {
        const value = await fn(found.elements);
        return { value: readable(value), type: typeof value };
      }
      const value = [];
      for (const element of found.elements)
        value.push(await fn(element));
      return { value: readable(value), type: typeof value };
    }
    let el;
    if (${JSON.stringify(withElement)}) {
      const found = (${findElementThen.toString()})(element => ({ el: element }), ${JSON.stringify(target ?? '')});
      if (found.error)
        return found;
      el = found.el;
    }
    const value = await (el === undefined ? fn() : fn(el));
    return { value: readable(value), type: typeof value };
  })()`;
  const { result, exceptionDetails } = await sendIn(ctx, id, world, 'Runtime.evaluate',
      { expression, returnByValue: true, awaitPromise: true, userGesture: true });
  if (exceptionDetails)
    throw serverError(`The function threw: ${exceptionText(exceptionDetails)}`);
  const answer = result.value ?? {};
  if (answer.notAFunction)
    throw invalidParams(`parameter "function" must be a function's source such as "() => document.title" or "(element) => element.textContent", not a ${answer.notAFunction}`);
  if (answer.error)
    throw elementError(answer, target);
  return { value: answer.value ?? null, type: answer.type };
}

/** @param {import('./commands.js').CommandContext} ctx */
async function elementScreenshot(ctx, { selector, ref, format = 'png', tabId }) {
  const target = elementTarget({ selector, ref });
  const id = await targetTab(ctx, tabId);
  const world = await worldOf(ctx, id, target);
  const box = await evaluateExpression(ctx, id, elementExpression(documentBox, target), world);
  if (box?.error)
    throw elementError(box, target);
  if (world) {
    // An element of a frame of another origin: from its frame's document to the page's, by
    // the frame's scroll, where the frame sits in the viewport, and the page's scroll.
    const [frameScroll, offset, pageScroll] = [
      await evaluateExpression(ctx, id, '[scrollX, scrollY]', world),
      await frameOffset(ctx, id, world.frame, true),
      await evaluateExpression(ctx, id, '[scrollX, scrollY]'),
    ];
    if (!offset)
      throw serverError(`The frame of ${describeTarget(target)} is no longer on the page; take a new snapshot (browser_snapshot)`);
    box.x += offset[0] + pageScroll[0] - frameScroll[0];
    box.y += offset[1] + pageScroll[1] - frameScroll[1];
  }
  const { data } = await ctx.debuggers.send(id, 'Page.captureScreenshot', {
    format,
    clip: { x: box.x, y: box.y, width: box.width, height: box.height, scale: 1 },
    captureBeyondViewport: true,
  }, { timeoutMs: ELEMENT_CAPTURE_TIMEOUT_MS });
  return { tabId: id, data, mimeType: `image/${format}`, format, width: Math.round(box.width), height: Math.round(box.height) };
}

/**
 * Sets the tab's viewport, as Playwright's resize does, by emulation: the agent's page gets
 * exactly that innerWidth × innerHeight, and the person's windows are not touched.
 *
 * @param {import('./commands.js').CommandContext} ctx
 */
async function resize(ctx, { width, height, tabId }) {
  const id = await targetTab(ctx, tabId);
  await ctx.debuggers.send(id, 'Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 0, mobile: false });
  const now = await evaluateExpression(ctx, id, '({ width: innerWidth, height: innerHeight })');
  return { tabId: id, width: now.width, height: now.height };
}

/** @param {import('./commands.js').CommandContext} ctx */
async function printPdf(ctx, { tabId }) {
  const id = await targetTab(ctx, tabId);
  const { data } = await ctx.debuggers.send(id, 'Page.printToPDF', { printBackground: true }, { timeoutMs: PDF_TIMEOUT_MS });
  const url = await evaluateExpression(ctx, id, 'location.href').catch(() => '');
  return { tabId: id, url, data, mimeType: 'application/pdf' };
}

/**
 * Playwright's browser_close, for a browser that is the person's: closes the tabs this
 * connection opened, and only those. Tabs of the person's that it was given to work on stay
 * open (released, so they are the person's again).
 *
 * @param {import('./commands.js').CommandContext} ctx
 */
async function closeAgentTabs(ctx) {
  const closed = [];
  const leftOpen = [];
  for (const tabId of ctx.tabs.tabsOf(ctx.connectionId)) {
    if (!ctx.tabs.openedByAgent(tabId)) {
      leftOpen.push(tabId);
      continue;
    }
    await ctx.debuggers.detach(tabId);
    await chrome.tabs.remove(tabId).catch(() => {});
    ctx.tabs.dropTab(tabId);
    closed.push(tabId);
  }
  for (const tabId of leftOpen) {
    await ctx.debuggers.detach(tabId);
    ctx.tabs.dropTab(tabId);
  }
  return {
    closed,
    ...(leftOpen.length ? { leftOpen, note: 'tabs this session did not open are the person\'s: they were released, not closed' } : {}),
  };
}

// ---------------------------------------------------------------------------
// Helpers

/**
 * Where a mouse acts on an element, in a frame of another origin too (commands/shared.js).
 *
 * @param {import('./commands.js').CommandContext} ctx
 * @param {number} tabId
 * @param {import('./targets.js').ElementTarget | string} target
 */
async function located(ctx, tabId, target) {
  return locate(ctx, tabId, target, { requireEnabled: true });
}

/** @param {{error: string, element?: string, cover?: string, wanted?: string, value?: string, available?: string[]}} failure */
function failureText(failure) {
  switch (failure.error) {
    case 'invalid-selector':
      return 'not a valid CSS selector';
    case 'not-found':
      return 'no such element; take a snapshot to see the page\'s elements';
    case 'stale-ref':
      return failure.never ? unknownRefMessage(failure) : staleRefMessage(failure);
    case 'not-visible':
      return `the ${failure.element} is not visible`;
    case 'moving':
      return `the ${failure.element} kept moving (the page scrolling or animating it)`;
    case 'covered':
      return `the ${failure.element} is covered by another element, ${failure.cover}; close or dismiss it first${failure.modal ? ` (${failure.modal})` : ''}`;
    case 'off-screen':
      return `the ${failure.element} is placed outside the page's visible area, where no mouse can reach it`;
    case 'disabled':
      return `the ${failure.element} is disabled or read-only`;
    case 'wrong-kind':
      return `it is a ${failure.element}, not ${failure.wanted}`;
    case 'no-option':
      return `no option with value or label "${failure.value}"; its options are: ${failure.available.join(', ')}`;
    case 'option-disabled':
      return `the option "${failure.value}" is disabled`;
    default:
      return failure.error;
  }
}

/** @param {any} details CDP Runtime.ExceptionDetails */
function exceptionText(details) {
  return details.exception?.description?.split('\n')[0] ?? details.text ?? 'unknown exception';
}
