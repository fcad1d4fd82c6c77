/**
 * Functions that run inside the page, through CDP `Runtime.evaluate`.
 *
 * They are shipped as source text (`fn.toString()`), so each must be
 * self-contained: no imports, no closures over module scope, helpers nested
 * inside. Arguments travel as JSON. They return plain JSON objects; an
 * expected failure comes back as `{error, message}` rather than a throw, so
 * the caller can pick the JSON-RPC code (a bad selector is -32602, a missing
 * element is -32000).
 *
 * This module itself touches neither `chrome.*` nor the DOM at import time.
 */

/**
 * @param {Function} fn one of the page functions below
 * @param {...unknown} args JSON-serialisable arguments
 * @returns {string} an expression for Runtime.evaluate
 */
export function pageExpression(fn, ...args) {
  return `(${fn.toString()})(${args.map(arg => JSON.stringify(arg)).join(', ')})`;
}

/**
 * An expression whose value is `fn`, compiled by the page once per document rather than on
 * every call: the first evaluation keeps it on the page's global object under a symbol named
 * after the source's hash (so a newer extension's version never meets an older one left in a
 * page), and later ones take it from there. For the large functions a model calls often
 * (`captureTree`, 15 KB, behind every snapshot and find): V8 compiles a function shipped as
 * source afresh on every `Runtime.evaluate`, which cost 1.5–2.5 ms of a 4 ms snapshot of a small
 * page (docs/BENCHMARKS.md). The source still travels each time; only its compilation is saved,
 * so the first call in a document costs no extra round trip.
 *
 * A page's own scripts can see and replace what is kept there, as they can the ref registry
 * (snapshot.js): at worst the page misreports itself, which it can do through its DOM anyway.
 *
 * @param {Function} fn self-contained, as every page function
 * @returns {string} an expression evaluating to the function
 */
export function compiledOnce(fn) {
  const source = fn.toString();
  const key = JSON.stringify(`mcp-relay.fn.${fn.name}.${sourceHash(source)}`);
  return `(globalThis[Symbol.for(${key})] ??= ${source})`;
}

/** FNV-1a over the UTF-16 code units, as 8 hex digits: a version stamp, not a defence. */
function sourceHash(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++)
    hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash.toString(16).padStart(8, '0');
}

/**
 * Whether an option is a native <select>'s (true) or one a page draws (false). Runs through
 * {@link elementExpression}.
 *
 * @param {Element} el
 */
export function inSelect(el) {
  return el.localName === 'option' || Boolean(el.closest('select'));
}

/**
 * Like {@link pageExpression} for a function whose first argument is an
 * element: the expression finds `target`'s element and calls
 * `fn(element, ...args)`, or returns `{error: 'invalid-selector'|'not-found'|'stale-ref'}`.
 *
 * @param {Function} fn
 * @param {import('./targets.js').ElementTarget | string} target a ref or selector (a bare string is a selector)
 * @param {...unknown} args JSON-serialisable arguments
 */
export function elementExpression(fn, target, ...args) {
  const json = [target, ...args].map(arg => JSON.stringify(arg)).join(', ');
  return `(${findElementThen.toString()})(${fn.toString()}, ${json})`;
}

/**
 * The one place a target becomes an element. A ref is looked up in the
 * registry the snapshot keeps in the top window (see snapshot.js): it answers
 * only with the very element it was given for, and only while that element is
 * still in a live document, so a ref to a removed or replaced element (or to
 * an iframe's old document) is refused rather than matched to a look-alike.
 *
 * A CSS selector is matched as Playwright's CSS is: in the page's DOM and in every open shadow
 * root (web components), each within its own tree. The first match is the DOM's own if it has
 * one (a single native query, the usual case), else the first shadow root's in document order.
 *
 * @param {(element: Element, ...args: any[]) => object} fn
 * @param {{ref: string} | {selector: string, every?: boolean} | string} target `every`: `fn`
 *   gets the list of every match instead (for {@link findElementsThen})
 * @param {...unknown} args
 */
export function findElementThen(fn, target, ...args) {
  const wanted = typeof target === 'string' ? { selector: target } : target;
  if (wanted.ref !== undefined) {
    // Keep in step with captureTree in snapshot.js, which fills this registry.
    const registry = window[Symbol.for('mcp-relay.refs')];
    const found = registry && registry.byRef.get(wanted.ref);
    const el = found && found.deref();
    if (!el || !el.isConnected || !el.ownerDocument.defaultView) {
      // A ref no snapshot of this page gave (a number past its last, another tab's, one from
      // before the page loaded again) was never this page's: said apart from one whose
      // element went away.
      const [, frame, n] = /^(?:f(\d+))?e(\d+)$/.exec(wanted.ref) ?? [];
      const last = registry?.counters.get(frame === undefined ? 0 : Number(frame)) ?? 0;
      const never = !found && (!registry || n === undefined || Number(n) > last);
      if (never) {
        return {
          error: 'stale-ref', ref: wanted.ref, snapshotTaken: Boolean(registry), never: true,
          ...(last ? { last: `${frame ? `f${frame}` : ''}e${last}` } : {}),
        };
      }
      return { error: 'stale-ref', ref: wanted.ref, snapshotTaken: true, ...successorOf(registry, wanted.ref) };
    }
    return fn(el, ...args);
  }
  // Every match in document order (`every`: findElementsThen's list), or the first.
  const every = wanted.every === true;
  const selector = wanted.selector;
  // XPath, as Playwright takes it: `xpath=…`, or a path that starts with `//`.
  const xpath = /^xpath=/.test(selector) ? selector.slice(6) : /^\(*\/\//.test(selector) ? selector : null;
  const found = [];
  try {
    if (xpath !== null) {
      const nodes = document.evaluate(xpath, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
      for (let i = 0; i < nodes.snapshotLength && (every || found.length === 0); i++) {
        if (nodes.snapshotItem(i).nodeType === Node.ELEMENT_NODE)
          found.push(nodes.snapshotItem(i));
      }
    } else if (every) {
      // Playwright's CSS reaches into open shadow roots (web components): each tree's
      // elements are matched within that tree, in the order a person reads the page.
      const walk = root => {
        for (const el of root.querySelectorAll('*')) {
          if (el.matches(selector))
            found.push(el);
          if (el.shadowRoot)
            walk(el.shadowRoot);
        }
      };
      walk(document);
    } else {
      // The first: the page's own DOM first (one native query, the usual case), else the
      // first open shadow root, in document order, that holds a match.
      const first = root => {
        const el = root.querySelector(selector);
        if (el)
          return el;
        for (const host of root.querySelectorAll('*')) {
          const inner = host.shadowRoot && first(host.shadowRoot);
          if (inner)
            return inner;
        }
        return null;
      };
      const el = first(document);
      if (el)
        found.push(el);
    }
  } catch (e) {
    return { error: 'invalid-selector', message: String(e && e.message || e) };
  }
  if (every)
    return fn(found, ...args);
  return found.length > 0 ? fn(found[0], ...args) : { error: 'not-found' };

  // What a gone ref was (`was`: its role and name), and the element of that role and name
  // now where it was (`successor`), as a snapshot names it: the one inside the nearest
  // element around it that is still on the page, or, when that is the very element that held
  // it, the one at its place among those (TiddlyWiki's editor holds two "add" buttons).
  // Pages that draw a part again as they update (React, TiddlyWiki's tag field and its "add"
  // button, on each key) replace the very element a ref named; the model is told which ref
  // stands in its place rather than to read the whole page again. Nothing is done on it:
  // which element to act on stays the model's choice.
  function successorOf(registry, ref) {
    const about = registry.about?.get(ref);
    if (!about || !registry.capture)
      return {};
    const [role, name, holder, place] = about;
    const was = { role, ...(name ? { name } : {}) };
    let scope = null;
    let up = holder;
    for (let hops = 0; up && !scope && hops < 100; hops++) {
      const el = registry.byRef.get(up)?.deref();
      if (el?.isConnected && el.ownerDocument.defaultView)
        scope = el;
      else
        up = registry.about.get(up)?.[2];
    }
    const sameHolder = scope !== null && up === holder;
    scope ??= document.body;
    if (!scope)
      return { was };
    const alike = [];
    const look = items => {
      for (const item of items) {
        if (item.ref && item.ref !== ref && item.role === role && (item.name ?? item.altName ?? '') === name)
          alike.push(item.ref);
        if (item.children)
          look(item.children);
      }
    };
    // The holder's own line is its first item, not one of what it holds.
    look(registry.capture({ maxNodes: 20_000 }, scope).tree[0]?.children ?? []);
    const successor = alike.length === 1 ? alike[0] : sameHolder ? alike[place] : undefined;
    return { was, ...(successor ? { successor } : alike.length > 1 ? { alike: alike.length } : {}) };
  }
}

/**
 * The refs of every element inside what `css` names (in its subtree, in its shadow roots, and
 * in the documents of the frames it is or holds): the scope of `locator(css).getBy…` (a
 * frame's, for Playwright's frameLocator). Refs are the snapshot's, so capture the tree first.
 *
 * @param {string} css
 * @returns {{refs: string[], matched: number} | {error: 'invalid-selector', message: string}}
 */
export function refsWithin(css) {
  let roots;
  try {
    roots = new Set(document.querySelectorAll(css));
  } catch (e) {
    return { error: 'invalid-selector', message: String(e && e.message || e) };
  }
  const registry = window[Symbol.for('mcp-relay.refs')];
  const refs = [];
  for (const [ref, weak] of registry ? registry.byRef : []) {
    const el = weak.deref();
    for (let at = el; at;) {
      const root = at.getRootNode();
      const up = at.parentElement || (root instanceof ShadowRoot ? root.host : at.ownerDocument.defaultView?.frameElement);
      if (!up)
        break;
      if (roots.has(up)) {
        refs.push(ref);
        break;
      }
      at = up;
    }
  }
  return { refs, matched: roots.size };
}

/**
 * The elements `css` names in the documents of the frames `frameCss` names (Playwright's
 * `frameLocator(frameCss).locator(css)`), or in the page's document when `frameCss` is null
 * (`locator(css).nth(1)`), in order, each given a ref through `capture` (the snapshot's
 * `captureTree`, as {@link textMatches} names what it finds), at most `max` of them; `total`
 * counts them all. A frame of another origin has no document the page can reach.
 *
 * @param {(limits: object, el: Element) => {tree: object[]}} capture
 * @param {string | null} frameCss
 * @param {string} css
 * @param {number} max
 */
export function cssInFrames(capture, frameCss, css, max) {
  let frames;
  try {
    frames = frameCss === null ? [{ contentDocument: document }]
      : Array.from(document.querySelectorAll(frameCss)).filter(el => el.localName === 'iframe' || el.localName === 'frame');
  } catch (e) {
    return { error: 'invalid-selector', selector: frameCss, message: String(e && e.message || e) };
  }
  if (frames.length === 0)
    return { error: 'no-frame' };
  const found = [];
  let unreachable = 0;
  for (const frame of frames) {
    let doc = null;
    try {
      doc = frame.contentDocument;
    } catch {
      // A frame of another origin.
    }
    if (!doc) {
      unreachable++;
      continue;
    }
    try {
      found.push(...doc.querySelectorAll(css));
    } catch (e) {
      return { error: 'invalid-selector', selector: css, message: String(e && e.message || e) };
    }
  }
  if (found.length === 0 && unreachable === frames.length)
    return { error: 'other-origin', frames: frames.length };
  const matches = [];
  for (const el of found.slice(0, max)) {
    const node = capture({ maxNodes: 1 }, el).tree[0];
    if (node?.ref)
      matches.push({ ref: node.ref, role: node.role, name: node.name ?? el.localName });
  }
  return { matches, total: found.length };
}

/**
 * Every element a target names, for a read of each (`evaluateFunction {each: true}`): a ref's
 * one element, each of `refs` (a locator's matches, resolved to refs before the page is asked),
 * or every match of a CSS selector (open shadow roots too) or an XPath, in document order.
 * Calls `fn(elements)`, or returns the first failure as {@link findElementThen} does; no match
 * is an empty list.
 *
 * @param {(elements: Element[]) => object} fn
 * @param {{ref: string} | {refs: string[]} | {selector: string}} target
 * @param {typeof findElementThen} findOne {@link findElementThen}, handed in with this function
 *   to the page, so that a ref or a selector becomes its elements in that one place
 */
export function findElementsThen(fn, target, findOne) {
  if (target.refs !== undefined || target.ref !== undefined) {
    const elements = [];
    for (const ref of target.refs ?? [target.ref]) {
      const found = findOne(el => ({ el }), { ref });
      if (found.error)
        return found;
      elements.push(found.el);
    }
    return fn(elements);
  }
  return findOne(fn, { selector: target.selector, every: true });
}

/**
 * Scrolls an element to the middle of the viewport and returns the point a
 * real mouse would click: its centre, in CSS pixels of the top-level
 * viewport, which is what Input.dispatchMouseEvent expects (an element of a
 * same-origin iframe gets its frames' offsets added). Refuses when another
 * element covers that point, because a click there would land on the cover
 * (a cookie banner, a modal), not on the target. Refuses, for now, an element still moving
 * (`moving`): a page scrolling itself smoothly to a linked section (Swagger UI, docs sites),
 * an animation sliding it in. Its box is compared across one frame, as Playwright's
 * "stable" check does; a point read while it moves is where it was, and the click would
 * land on whatever moved there. Runs through {@link elementExpression}, which finds the
 * element.
 *
 * @param {Element} el
 */
export async function locateElement(el, options = {}) {
  // The element as CSS would name it, and the words it shows (or is labelled by), so an
  // answer says which one it was: `a "installed_kb"`, not `a`.
  const describe = (el, withWords = true) => {
    let text = el.localName;
    if (el.id)
      text += `#${el.id}`;
    const cls = typeof el.className === 'string' ? el.className.trim().split(/\s+/).filter(Boolean).slice(0, 2) : [];
    if (cls.length)
      text += `.${cls.join('.')}`;
    // A cover is said with its own label by the caller.
    if (!withWords)
      return text;
    // Its first words only, read node by node: a click on a page's <main> reads no more.
    // Text of two blocks is two words ("Untitled.ipynb 3m ago", not "Untitled.ipynb3m ago");
    // inside one block, as written (a menu's underlined mnemonic: "<u>R</u>ename" is "Rename").
    let shows = '';
    let before = null;
    const blockOf = node => {
      let at = node.parentElement;
      while (at && at !== el && el.ownerDocument.defaultView.getComputedStyle(at).display.startsWith('inline'))
        at = at.parentElement;
      return at;
    };
    const walker = el.ownerDocument.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    while (shows.length < 60 && walker.nextNode()) {
      // Text hidden from a screen reader (an icon font's ligature, `keyboard_arrow_right`) is
      // not what the element says, unless the element is that icon (Quasar's calendar button,
      // `edit_calendar`), or lies inside what is hidden.
      const hidden = walker.currentNode.parentElement?.closest('[aria-hidden=true]');
      if (hidden && hidden !== el && el.contains(hidden))
        continue;
      const block = blockOf(walker.currentNode);
      if (before && block !== before)
        shows += ' ';
      shows += walker.currentNode.data;
      before = block;
    }
    const button = el.localName === 'input' && ['submit', 'button', 'reset'].includes(el.type) ? el.value : '';
    // A field shows no words of its own: its label's say which it was (`input "I agree"`).
    const labelledBy = (el.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean)
      .map(id => el.ownerDocument.getElementById(id)?.textContent ?? '').join(' ').trim();
    // An icon button or a logo link shows pictures, not words: their alt or label says it
    // (`button "Delete row"`), as they name the element; so for a field labelled by a picture.
    // An icon drawn by CSS says it by its title (Django admin's calendar link).
    const pictures = node => Array.from(node.querySelectorAll('img[alt], [aria-label], svg title, [title]'), picture =>
      picture.getAttribute('alt') ?? picture.getAttribute('aria-label') ?? picture.getAttribute('title') ?? picture.textContent).join(' ').trim();
    // A component's part shows the words the page slotted into it (Shoelace's button: `button
    // "Account"`, not `button`).
    const slotted = node => Array.from(node.querySelectorAll('slot'), slot =>
      slot.assignedNodes({ flatten: true }).map(one => one.textContent).join(' ')).join(' ').trim();
    const labels = labelledBy || Array.from(el.labels ?? [], label => label.textContent.trim() || slotted(label) || pictures(label)).join(' ').trim();
    const words = String(el.getAttribute('aria-label') || shows.trim() || slotted(el) || button || labels || pictures(el) || el.getAttribute('title') || el.getAttribute('placeholder') || '')
      .replace(/\s+/g, ' ').trim();
    if (words)
      text += ` ${JSON.stringify(words.length > 40 ? `${words.slice(0, 39)}…` : words)}`;
    return text;
  };
  const view = el.ownerDocument.defaultView;
  // A checkbox or switch that a component draws itself keeps its real <input> out of the
  // mouse's way (no size, no pointer events: Shoelace's); a person clicks its label, which
  // draws the box, and so does this. A disabled one is refused as itself.
  const asked = el;
  if (el.labels?.length && !(options.requireEnabled && el.disabled)) {
    const own = view.getComputedStyle(el);
    const box = el.getBoundingClientRect();
    // (A checkbox or radio kept in a "visually hidden" 1 px square counts: MUI's Rating keeps
    // each star's radio so, and a click at its place lands on another star's label.)
    const hidden = ['checkbox', 'radio'].includes(el.type) && box.width <= 2 && box.height <= 2;
    if (box.width === 0 || box.height === 0 || hidden || own.pointerEvents === 'none' || own.visibility !== 'visible') {
      const label = Array.from(el.labels).find(label => label.checkVisibility() && label.getBoundingClientRect().width > 0);
      if (label)
        el = label;
    }
  }
  // A field a component draws around an input that takes no pointer events (Vuetify's select
  // keeps its combobox input so, its label too, inside the field it draws as a combobox that
  // opens the list) is clicked where a person clicks it: on that field, the nearest drop-down
  // or button around the input, a few levels up at most. (It was refused as not taking pointer
  // events; so does Playwright, which waits for the input to take them.)
  if (!(options.requireEnabled && asked.disabled) && view.getComputedStyle(el).pointerEvents === 'none') {
    let around = null;
    for (let up = asked.parentElement, level = 0; up && level < 5 && !around; up = up.parentElement, level++)
      around = up.matches('[role=combobox], [role=button], button, [aria-haspopup]:not([aria-haspopup=false])') ? up : null;
    if (around && around.checkVisibility() && view.getComputedStyle(around).pointerEvents !== 'none')
      el = around;
  }
  // A control a page keeps in a box clipped to nothing (a "visually hidden" wrapper a pixel
  // across: React Aria's slider keeps its range input so, inside the thumb it draws; Streamlit's
  // "Max rows" was refused as covered by the thumb's value) is clicked where a person clicks:
  // on the nearest box around it that is drawn, which takes the click for it.
  if (el === asked && !(options.requireEnabled && el.disabled)) {
    const clippedAway = node => {
      const box = node.getBoundingClientRect();
      const look = view.getComputedStyle(node);
      return (box.width <= 2 || box.height <= 2) && (look.overflow !== 'visible' || look.clipPath !== 'none' || look.clip !== 'auto');
    };
    let hider = null;
    for (let up = el.parentElement, level = 0; up && level < 3 && !hider; up = up.parentElement, level++)
      hider = clippedAway(up) ? up : null;
    for (let up = hider?.parentElement, level = 0; up && level < 3; up = up.parentElement, level++) {
      const box = up.getBoundingClientRect();
      if (box.width > 2 && box.height > 2 && up.checkVisibility()) {
        el = up;
        break;
      }
    }
  }
  // What a mouse at (x, y) of the element's own viewport would hit, and whether that is the
  // element. elementFromPoint stops at shadow hosts; descend to the innermost element.
  const hitAt = (x, y) => {
    let hit = el.ownerDocument.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const tree = hit.shadowRoot;
      let inner = tree.elementFromPoint(x, y);
      // Text the page slotted into a component (a Shoelace button's "Save") hits as the host
      // itself; what the component draws there is the topmost of its own elements there.
      if (inner === hit)
        inner = tree.elementsFromPoint(x, y).find(node => node !== hit && tree.contains(node));
      if (!inner || inner === hit)
        break;
      hit = inner;
    }
    // A hit inside the element (its text, an icon, its own shadow tree) is the element.
    let reachable = false;
    // Up the tree as it is drawn: text or an element the page slotted into a component (a
    // Material option's `<div slot="headline">Express</div>`) is inside the slot it shows in.
    for (let node = hit; node; node = node.assignedSlot || node.parentNode || (node.nodeType === Node.DOCUMENT_FRAGMENT_NODE ? node.host : null)) {
      if (node === el) {
        reachable = true;
        break;
      }
    }
    // A hit on the element's own label is a click on it: a styled checkbox draws its label
    // over its box (Playwright's hit check follows labels too).
    if (!reachable && hit?.closest?.('label')?.control === el)
      reachable = true;
    // A page that draws its own "Choose files" button may lay its file input over it, unseen
    // (opacity 0: Wagtail's image upload): a person's click there lands on that input and
    // opens the file chooser, as the page means it to, and so does this one.
    if (!reachable && hit?.localName === 'input' && hit.type === 'file' && view.getComputedStyle(hit).opacity === '0')
      reachable = true;
    // An element drawn by its container rather than itself (opacity 0, under the box that
    // draws it: Shoelace's multiple select keeps its combobox input there) is clicked as a
    // person clicks what they see: on that container, a few levels up at most.
    if (!reachable && hit && view.getComputedStyle(el).opacity === '0') {
      const up = node => node.assignedSlot || node.parentElement || node.parentNode?.host || null;
      for (let node = up(el), level = 0; node && level < 3 && !reachable; node = up(node), level++)
        reachable = node === hit;
    }
    // A field's own decoration laid over its input (Element Plus's select draws its chosen
    // value or placeholder, "Choose", over the combobox input; a person clicks on those words,
    // and the select opens) is the field: a part without a role of its own, inside the box
    // around the input a few levels up, takes the click for it.
    if (!reachable && hit && el.matches('input, textarea, [role=combobox], [role=textbox], [role=searchbox]')) {
      const ACTS = 'a, button, input, select, textarea, [role], [tabindex], [contenteditable]';
      for (let node = el.parentElement, level = 0; node && level < 3 && !reachable; node = node.parentElement, level++) {
        if (!node.contains(hit) || node.querySelectorAll('input, textarea, select, [role=combobox]').length !== 1)
          continue;
        let plain = true;
        for (let part = hit; part && part !== node && plain; part = part.parentElement)
          plain = !part.matches(ACTS);
        reachable = plain;
      }
    }
    return { hit, reachable };
  };
  // An element a mouse already reaches, in the top document, is not scrolled, as Playwright
  // scrolls only when needed: a page that keeps its own scroll position (CodeMirror puts its
  // scroller back in the next frame) would otherwise move it on every try.
  const shown = el.getBoundingClientRect();
  const [shownX, shownY] = [shown.left + shown.width / 2, shown.top + shown.height / 2];
  const reachedAlready = view === view.top && shown.width > 0 && shown.height > 0 && shownX >= 0 && shownY >= 0 &&
    shownX < view.innerWidth && shownY < view.innerHeight && hitAt(shownX, shownY).reachable;
  if (!reachedAlready)
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const before = el.getBoundingClientRect();
  // One frame (a page's own scroll step runs in its frame callback before this one), or a
  // moment where frames are not drawn (a tab whose window is hidden).
  await new Promise(resolve => {
    const late = setTimeout(resolve, 100);
    view.requestAnimationFrame(() => {
      clearTimeout(late);
      resolve(undefined);
    });
  });
  const rect = el.getBoundingClientRect();
  if (['x', 'y', 'width', 'height'].some(side => Math.abs(rect[side] - before[side]) >= 1))
    return { error: 'moving', element: describe(el) };
  // Part of what a canvas draws (its fallback content: Glide Data Grid's cells, in Streamlit's
  // st.dataframe): it has no place on the screen of its own, and the canvas takes the mouse.
  // The page acts on it through the focus (Glide selects the cell focused), so a click focuses
  // it (`inCanvas`, for the click to do) and anything else is refused saying so.
  const canvas = rect.width === 0 && rect.height === 0 ? el.parentElement?.closest('canvas') : null;
  if (canvas) {
    const refs = window[Symbol.for('mcp-relay.refs')];
    const canvasRef = refs?.refOf.get(canvas);
    return {
      ...(options.focusInCanvas ? { inCanvas: true } : { error: 'in-canvas' }),
      element: describe(el), ...(canvasRef && refs.byRef.get(canvasRef)?.deref() === canvas ? { canvas: canvasRef } : {}),
    };
  }
  if (rect.width === 0 || rect.height === 0)
    return { error: 'not-visible', element: describe(el) };
  const style = view.getComputedStyle(el);
  if (style.visibility === 'hidden' || style.pointerEvents === 'none')
    return { error: 'not-visible', element: describe(el) };
  if (options.requireEnabled && (el.disabled === true || el.getAttribute('aria-disabled') === 'true' || el.closest('fieldset:disabled')))
    return { error: 'disabled', element: describe(el) };
  const x = rect.left + rect.width / 2;
  const y = rect.top + rect.height / 2;
  // Scrolled as far as it goes and its centre is still outside the viewport: the page placed
  // it off-screen (a skip link shown only on keyboard focus), where no mouse can reach it.
  if (x < 0 || y < 0 || x >= view.innerWidth || y >= view.innerHeight) {
    return {
      error: 'off-screen', element: describe(el),
      at: { x: Math.round(x), y: Math.round(y) }, viewport: { width: view.innerWidth, height: view.innerHeight },
    };
  }
  // The hit test runs in the element's own document, in its own viewport's coordinates.
  const { hit, reachable } = hitAt(x, y);
  if (!reachable && !hit)
    return { error: 'off-screen', element: describe(el), at: { x: Math.round(x), y: Math.round(y) }, viewport: { width: view.innerWidth, height: view.innerHeight } };
  if (!reachable) {
    // The cover as a model can find it: what it says, and its ref when a snapshot gave it
    // one (its own or the nearest of its parents'), so the model can act on it.
    const label = (hit.getAttribute('aria-label') || hit.getAttribute('title') || hit.innerText || '').trim().replace(/\s+/g, ' ');
    let cover = describe(hit, false) + (label ? ` ${JSON.stringify(label.length > 40 ? `${label.slice(0, 40)}…` : label)}` : '');
    const refs = window[Symbol.for('mcp-relay.refs')];
    const refFor = node => {
      const ref = refs?.refOf.get(node);
      return ref && refs.byRef.get(ref)?.deref() === node ? ref : null;
    };
    let named = false;
    for (let node = hit, up = 0; node && up < 4; node = node.parentElement, up++) {
      const ref = refFor(node);
      if (ref) {
        cover += up === 0 ? ` [ref=${ref}]` : ` (inside ref ${ref})`;
        named = true;
        break;
      }
    }
    // A backdrop has no ref; the modal dialog it belongs to has, and holds the way out.
    let modal;
    if (!named) {
      const open = [...el.ownerDocument.querySelectorAll('dialog[open], [aria-modal=true]')]
        .find(box => box.checkVisibility() && !box.contains(el));
      if (open) {
        const by = open.getAttribute('aria-labelledby')?.split(/\s+/)
          .map(id => el.ownerDocument.getElementById(id)?.innerText || '').join(' ');
        const title = (open.getAttribute('aria-label') || by || open.querySelector('h1,h2,h3,h4,h5,h6')?.innerText || '')
          .trim().replace(/\s+/g, ' ').slice(0, 60);
        const ref = refFor(open);
        modal = `a modal dialog${title ? ` ${JSON.stringify(title)}` : ''}${ref ? ` [ref=${ref}]` : ''} is open`;
      }
    }
    return { error: 'covered', element: describe(el), cover, ...(modal ? { modal } : {}) };
  }
  // From the frame's viewport to the top one: each iframe's content box starts at its
  // border-box corner plus its border and padding.
  let top = { x, y };
  for (let frame = view; frame !== window.top && frame.frameElement; frame = frame.parent) {
    const box = frame.frameElement.getBoundingClientRect();
    const frameStyle = frame.parent.getComputedStyle(frame.frameElement);
    top = {
      x: top.x + box.left + frame.frameElement.clientLeft + parseFloat(frameStyle.paddingLeft),
      y: top.y + box.top + frame.frameElement.clientTop + parseFloat(frameStyle.paddingTop),
    };
  }
  return { x: top.x, y: top.y, element: describe(el) };
}

/**
 * Makes an element ready for `text`: focuses an editable element and selects its content so
 * the text typed next replaces it (the behaviour of a "fill"; appending to stale input is
 * what automation usually gets wrong). With `atCaret` (a `slowly` type, Playwright's
 * `pressSequentially`), nothing is selected: the keys go where the caret is, after a click or
 * an End the model pressed, or where focusing put it, as Playwright MCP's slow typing does.
 *
 * As Playwright's fill: an input whose value is picked rather than typed (a date, a time, a
 * colour, a range) has `text` set as its value at once (`set: true`), or refuses a value in
 * the wrong form; an input that takes no text at all (a checkbox, a button, a file) is
 * refused with the tool that does act on it.
 *
 * Runs through {@link elementExpression}.
 *
 * @param {Element} el
 * @param {string} text what is about to be typed; when empty, there is nothing to replace
 *   the selection with, so the value is cleared here and `input` fired
 * @param {boolean} [atCaret] type at the caret rather than over the content
 */
export function prepareTyping(el, text, atCaret = false) {
  // An iframe's elements are instances of that frame's classes, not of this window's.
  const view = el.ownerDocument.defaultView;
  // The inputs that take no typed text, and the tool that acts on each.
  const TAKES_NO_TEXT = {
    checkbox: 'browser_click checks or unchecks it (browser_fill_form sets it)',
    radio: 'browser_click selects it (browser_fill_form sets it)',
    file: 'browser_file_upload gives it files',
    button: 'browser_click presses it',
    submit: 'browser_click presses it',
    reset: 'browser_click presses it',
    image: 'browser_click presses it',
    hidden: 'a hidden input is not for a person to fill',
  };
  // A box holding the one field a person types into takes the typing in that field, as a
  // click in it and typing would: a data grid's cell draws its editor inside once clicked
  // (Dash's DataTable), and the cell, named by its ref, was refused ("does not accept
  // text"). readValue and suggestionsSettled read that field (`typesInto`).
  const typesInto = Symbol.for('mcp-relay.typesInto');
  delete el[typesInto];
  // An element that takes typing through an EditContext (Chrome's API for editors that draw
  // their own text: Monaco 0.5x's input is a `<div role="textbox">` with one) is a field.
  const takesEdits = node => Boolean(node.editContext);
  if (!(el instanceof view.HTMLInputElement) && !(el instanceof view.HTMLTextAreaElement) && !el.isContentEditable && !takesEdits(el)) {
    const fields = Array.from(el.querySelectorAll('input, textarea, [contenteditable=""], [contenteditable=true]'))
      .filter(field => field.checkVisibility() && !(field.localName === 'input' && field.type in TAKES_NO_TEXT));
    if (fields.length === 1) {
      el[typesInto] = fields[0];
      el = fields[0];
    }
  }
  // Set by the action itself: its answer says the value (action-evidence.js leaves it out).
  el[Symbol.for('mcp-relay.setByAction')] = true;
  const isInput = el instanceof view.HTMLInputElement;
  const isField = isInput || el instanceof view.HTMLTextAreaElement;
  if (!isField && !el.isContentEditable && !takesEdits(el))
    return { error: 'not-editable', element: el.localName, ...(el.getAttribute('role') === 'slider' ? { slider: true } : {}) };
  // `type` reads as "text" for a type the browser does not know, as the browser treats it.
  const inputType = isInput ? el.type : '';
  const instead = TAKES_NO_TEXT[inputType];
  if (instead)
    return { error: 'takes-no-text', element: `input type=${inputType}`, instead };
  if (el.disabled || el.readOnly)
    return { error: 'disabled', element: el.localName, readOnly: Boolean(el.readOnly) && !el.disabled };
  el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  el.focus();
  const fire = () => {
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  };
  const forms = {
    date: '2026-11-26', time: '14:30', 'datetime-local': '2026-11-26T14:30', month: '2026-11',
    week: '2026-W48', color: '#1a2b3c', range: `a number from ${el.min || 0} to ${el.max || 100}`,
  };
  if (inputType in forms) {
    // A picker's value, not keystrokes: Chrome's date and time fields take keys per segment,
    // in the person's locale, and a colour or a range takes none.
    const wanted = text.trim();
    const before = el.value;
    const setValue = value => Object.getOwnPropertyDescriptor(view.HTMLInputElement.prototype, 'value').set.call(el, value);
    setValue(wanted);
    const held = el.value;
    const kept = inputType === 'color' ? held === wanted.toLowerCase()
      : inputType === 'range' ? wanted !== '' && Number(held) === Number(wanted)
      : held === wanted;
    if (!kept) {
      setValue(before);
      return { error: 'malformed', element: `input type=${inputType}`, text, form: forms[inputType], value: before };
    }
    fire();
    return { ok: true, set: true };
  }
  // A text field shown a pixel or two across is a code editor's hidden input: Monaco's is 1×1,
  // CodeMirror 5's sits in a box 0 pixels tall that clips it (a slider's or a picker's hidden
  // input, React Aria's, took its value whole above). It holds none of the editor's text, so
  // selecting its content replaces nothing and the typing lands at the editor's caret:
  // Datasette's "select * from customers" became "…group by productselect * from customers".
  // The editor's own select-all (its Control+A, sent for `editorInput`) makes the typing
  // replace its text, as a field's does; readValue reads the editor back (the mark).
  const tiny = node => {
    const box = node.getBoundingClientRect();
    return box.width <= 2 || box.height <= 2;
  };
  // An EditContext's element holds no text of its own to select either: the editor's
  // select-all goes first there too.
  let editorInput = takesEdits(el);
  if (el.localName === 'textarea' || (isInput && ['text', 'search'].includes(el.type))) {
    editorInput = tiny(el);
    for (let up = el.parentElement, n = 0; !editorInput && up && n < 3; up = up.parentElement, n++)
      editorInput = view.getComputedStyle(up).overflow !== 'visible' && tiny(up);
  }
  const mark = Symbol.for('mcp-relay.editorInput');
  if (editorInput)
    el[mark] = true;
  else
    delete el[mark];
  if (atCaret)
    return { ok: true };
  if (editorInput)
    return { ok: true, editorInput: true, ...(el.closest('.monaco-editor') ? { linewise: true } : {}) };
  // What it held, so the typing can tell a field that took none of the text at once (one
  // that reads keys one by one: MUI's date field's parts) and type it key by key instead.
  const before = isField ? (el.type === 'password' ? null : el.value) : el.textContent;
  if (isField) {
    try {
      el.select();
    } catch {
      // Some input types (email, number) have no text selection; typing still replaces nothing.
    }
    if (text === '' && el.value !== '') {
      el.value = '';
      fire();
    }
  } else {
    const range = el.ownerDocument.createRange();
    range.selectNodeContents(el);
    const selection = view.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    if (text === '' && el.textContent !== '') {
      el.textContent = '';
      el.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }
  // A one-line field's last character is pressed as a key (input.js): a page may search as
  // keys come up.
  return { ok: true, ...(before === null ? {} : { before }), ...(el.localName === 'input' ? { lastKey: true } : {}) };
}

/**
 * Sets a code editor's whole text through the editor's own edit call, where the page offers
 * one: Monaco loaded as a global (its AMD loader, as playgrounds and consoles load it from a
 * CDN). Its edit replaces the text as a paste does, undoable, where keys meet the editor's
 * typing rules (closing brackets, indenting each new line again). A paste itself would not do:
 * Monaco asks to read the clipboard on every paste, and the person would see the prompt.
 * Answers `{ set: true }`, or `{ set: false }` for the keys to type it.
 *
 * Runs through {@link elementExpression}. @param {Element} el @param {string} text
 */
export function editorSetText(el, text) {
  const monaco = el.ownerDocument.defaultView.monaco?.editor;
  const held = monaco?.getEditors?.().find(one => one.getContainerDomNode?.().contains(el));
  const model = held?.getModel?.();
  if (!model || held.getOption(monaco.EditorOption.readOnly))
    return { set: false };
  held.pushUndoStop();
  held.executeEdits('mcp-relay', [{ range: model.getFullModelRange(), text, forceMoveMarkers: true }]);
  held.pushUndoStop();
  held.focus();
  return { set: true };
}

/**
 * The option of a drop-down the page draws with no roles (selectize's, Chosen's) that reads
 * `value` exactly, found as a person finds it: shown, in a box that floats (absolute or fixed)
 * apart from the field `el` that opened it, so the same words elsewhere on the page (a table's
 * cell) are not taken for it. Marked (`MARK`) for the click that picks it, or, in a frame of
 * the page's origin, given a ref; the click's answer says the element.
 *
 * Runs through {@link elementExpression}. @param {Element} el @param {string} value
 * @param {string} MARK the attribute that marks it
 */
export function markDrawnOption(el, value, MARK) {
  // The field's own document: a widget in a frame of the page's origin draws its list there.
  const doc = el.ownerDocument;
  for (const old of doc.querySelectorAll(`[${MARK}]`))
    old.removeAttribute(MARK);
  const wanted = value.trim();
  const floatsApart = node => {
    for (let up = node, n = 0; up && up !== doc.body && n < 8; up = up.parentElement, n++) {
      if (['absolute', 'fixed'].includes(doc.defaultView.getComputedStyle(up).position))
        return !up.contains(el);
    }
    return false;
  };
  const walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    if (walker.currentNode.data.trim() !== wanted)
      continue;
    let option = walker.currentNode.parentElement;
    while (option?.parentElement && option.parentElement !== doc.body && option.parentElement.innerText?.trim() === wanted)
      option = option.parentElement;
    if (option?.checkVisibility() && floatsApart(option)) {
      // In a frame, which a selector of the page's does not reach, the option is given a ref
      // as a snapshot would give it (snapshot.js `give`), and clicked by that.
      const ref = doc === document ? null : window[Symbol.for('mcp-relay.refs')]?.give?.(option);
      if (ref)
        return { found: true, ref };
      option.setAttribute(MARK, '');
      return { found: true };
    }
  }
  return { found: false };
}

/**
 * Whether a drop-down the page draws is still open after its options were picked: a
 * multi-select stays open for more (Shoelace's, MUI's, react-select's `isMulti`), and its
 * list then covers what the model clicks next (Shoelace's "Toppings" list made the next two
 * clicks wait 3 s and fail as covered). Called with the option about to be clicked
 * (`phase` "note"), it keeps the list the option is in: its nearest list, menu, grid or tree,
 * or else its nearest box that floats. Called with the drop-down (`phase` "check"), it answers
 * from the drop-down's `aria-expanded` (its own, its field's or its button's), else from
 * whether the kept list is still shown.
 *
 * Runs through {@link elementExpression}. @param {Element} el @param {'note' | 'check'} phase
 */
export function dropDownOpen(el, phase) {
  const key = Symbol.for('mcp-relay.optionList');
  // Up the tree a person sees: out of a shadow root to its host.
  const up = node => node.assignedSlot ?? node.parentElement ?? node.getRootNode()?.host ?? null;
  if (phase === 'note') {
    let list = null;
    for (let at = up(el), n = 0; at && at !== el.ownerDocument.body && n < 12 && !list; at = up(at), n++) {
      if (/^(listbox|menu|grid|tree|treegrid)$/.test(at.getAttribute('role') ?? '') ||
          ['absolute', 'fixed'].includes(getComputedStyle(at).position))
        list = at;
    }
    window[key] = list ? new WeakRef(list) : null;
    return { noted: Boolean(list) };
  }
  const expanded = [el, el.querySelector('[aria-expanded]'), el.closest('[aria-expanded]')]
    .map(one => one?.getAttribute('aria-expanded')).find(value => value === 'true' || value === 'false');
  if (expanded)
    return { open: expanded === 'true' };
  const list = window[key]?.deref();
  return { open: Boolean(list?.isConnected && list.checkVisibility()) };
}

/**
 * Whether the Monaco editor `el` types into shows its suggestions: typed key by key, a word
 * opens them, and the Enter a model presses next (or `submit`'s) would take one in place of a
 * line break. A fill leaves nothing pending, so the typing closes them (Escape).
 *
 * Runs through {@link elementExpression}. @param {Element} el @param {number} waitMs how long
 *   to wait for them to show
 */
export function editorSuggesting(el, waitMs) {
  const shown = () => Boolean(el.closest('.monaco-editor')?.querySelector('.suggest-widget.visible'));
  // They come a moment after the last key (its language's service answers first).
  const started = performance.now();
  return new Promise(resolve => {
    const check = () => {
      if (shown() || performance.now() - started >= waitMs)
        resolve({ open: shown() });
      else
        setTimeout(check, 25);
    };
    check();
  });
}

/**
 * What a field made of parts holds, read whole, when the part typed into is one of several
 * spinbuttons in one group (MUI's date field: month, day and year, each taking its digits as
 * keys and moving the focus on). Typed key by key into "Month", `12/24/2026` read back `12`,
 * the month alone, and the day's change was said as another control's. The parts are marked
 * as set by the action (action-evidence.js leaves them out of what changed). Null for any
 * other field.
 *
 * Runs through {@link elementExpression}. @param {Element} el the element typed into
 */
export function readParts(el) {
  el = el[Symbol.for('mcp-relay.typesInto')] ?? el;
  const group = el.closest('[role=group]');
  const parts = group ? [...group.querySelectorAll('[role=spinbutton]')] : [];
  if (parts.length < 2 || !(parts.includes(el) || el === group))
    return null;
  for (const part of parts)
    part[Symbol.for('mcp-relay.setByAction')] = true;
  // The parts and what stands between them (the smallest element holding them all: MUI's
  // group holds its label too, drawn unseen in its outline's gap), as a person reads them:
  // without the marks that keep their order (MUI's U+2066–2069) or space around a separator
  // ("12 / 24 / 2026").
  let holder = parts[0].parentElement;
  while (holder !== group && !parts.every(part => holder.contains(part)))
    holder = holder.parentElement;
  const text = holder.innerText.replace(/[\u200b\u200e\u200f\u2060\u2066-\u2069\ufeff]/g, '').replace(/\s+/g, ' ')
    .replace(/\s*([^\p{L}\p{N}\s])\s*/gu, '$1').trim();
  return { value: text };
}

/**
 * The value a field holds after typing, as the answer reads it back. A password is never
 * read back: typing at the caret (`slowly`) adds to what is there, and what is there may be
 * the person's own, filled in by their browser.
 *
 * Runs through {@link elementExpression}. @param {Element} el
 */
export function readValue(el) {
  // The field inside that took the typing (prepareTyping).
  el = el[Symbol.for('mcp-relay.typesInto')] ?? el;
  if (el.localName === 'input' && el.type === 'password')
    return { value: el.value ? '••••••' : '' };
  // A code editor's hidden input (prepareTyping marks it): what it holds may not be the
  // editor's text (CodeMirror's holds just what was typed; Monaco's the lines around the
  // caret), so its value is read back marked as such, unless the editor says its text
  // (CodeMirror 5 keeps itself on its box: `getValue()`).
  if (el[Symbol.for('mcp-relay.editorInput')]) {
    const editor = el.closest('.CodeMirror')?.CodeMirror;
    if (typeof editor?.getValue === 'function')
      return { value: String(editor.getValue()) };
    // Monaco says its text where the page loads it as a global (its AMD loader); bundled in
    // an app, it does not, and the lines it draws (hidden from assistive technology) are what
    // a person reads: the whole text unless it scrolls.
    const monaco = el.closest('.monaco-editor');
    if (monaco) {
      const held = el.ownerDocument.defaultView.monaco?.editor?.getEditors?.()
        .find(one => one.getContainerDomNode?.().contains(el));
      if (typeof held?.getValue === 'function')
        return { value: String(held.getValue()) };
      // It draws what was typed at the next frame: read after it (at most 200 ms, for a
      // window that draws no frames).
      const view = el.ownerDocument.defaultView;
      return new Promise(resolve => {
        const read = () => {
          const drawn = Array.from(monaco.querySelectorAll('.view-lines > .view-line'))
            .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
          const lines = drawn.map(line => line.textContent.replace(/\u00a0/g, ' ').replace(/\s+$/, ''));
          while (lines.length && !lines[lines.length - 1])
            lines.pop();
          // Lines above or below the view are not drawn: then the value is only part. The
          // first line is drawn at the top of the editor's content (a line drawn lower means
          // lines above it are not); a line cut by the bottom edge may have more below.
          const box = monaco.getBoundingClientRect();
          const part = drawn.length > 0 && (parseFloat(drawn[0].style.top) > 0 ||
            drawn[drawn.length - 1].getBoundingClientRect().bottom > box.bottom + 1);
          resolve({ value: lines.join('\n'), shownLines: true, ...(part ? { partOnly: true } : {}) });
        };
        const late = view.setTimeout(read, 200);
        view.requestAnimationFrame(() => view.requestAnimationFrame(() => {
          view.clearTimeout(late);
          read();
        }));
      });
    }
    if (!('value' in el))
      return { value: String(el.editContext?.text ?? ''), hiddenInput: true };
    return { value: String(el.value), hiddenInput: true };
  }
  if ('value' in el)
    return { value: String(el.value) };
  // An editor's lines are its blocks (CodeMirror's line divs, a rich-text editor's
  // paragraphs), each one line and an empty one an empty line, as the text typed into it had
  // them. textContent ran them together ("import osfor i in range(3):"), and innerText sets a
  // paragraph apart by a blank line: "a\nb" typed into Quill, ProseMirror or CKEditor, which
  // hold two paragraphs, read back "a\n\nb", and a model could not tell what the editor did.
  const view = el.ownerDocument.defaultView;
  const lines = [];
  let run = null;
  let runKeeps = false;
  const end = () => {
    if (run === null)
      return;
    // A block's last <br> holds an empty line open (Quill's `<p><br></p>`), no line of its own.
    for (const line of run.replace(/\n$/, '').split('\n'))
      lines.push(runKeeps ? line : line.trim());
    run = null;
  };
  const visit = (node, keeps) => {
    for (const kid of node.childNodes) {
      if (kid.nodeType === Node.TEXT_NODE) {
        const words = keeps ? kid.data : kid.data.replace(/\s+/g, ' ');
        // Spaces between a page's blocks in its source are no text.
        if (keeps || run !== null || words.trim()) {
          runKeeps = run === null ? keeps : runKeeps;
          run = (run ?? '') + words;
        }
        continue;
      }
      if (kid.nodeType !== Node.ELEMENT_NODE)
        continue;
      if (kid.localName === 'br') {
        run = (run ?? '') + '\n';
        continue;
      }
      const look = view.getComputedStyle(kid);
      if (look.display === 'none')
        continue;
      const keepsSpaces = /^pre/.test(look.whiteSpace) || look.whiteSpace === 'break-spaces';
      if (look.display.startsWith('inline') || look.display === 'contents') {
        visit(kid, keepsSpaces);
        continue;
      }
      end();
      const before = lines.length;
      visit(kid, keepsSpaces);
      if (run === null && lines.length === before)
        lines.push('');
      end();
    }
  };
  visit(el, /^pre/.test(view.getComputedStyle(el).whiteSpace));
  end();
  while (lines.length && !lines[lines.length - 1])
    lines.pop();
  // (`editable`: an editor of lines, which its answer compares with the text typed; not a
  // date field's part, a spinbutton, whose text is its own.)
  const editable = !['spinbutton', 'slider'].includes(el.getAttribute('role'));
  // Without what takes no room (snapshot.js `UNSEEN`: CKEditor's word joiners).
  return { value: lines.join('\n').replace(/\u00a0/g, ' ').replace(/[\u200b\u2060\ufeff]/g, ''), editable };
}

/**
 * Before a typed Enter in a field with suggestions (a combobox: Tom Select, jQuery UI's
 * autocomplete, a search box with a list), waits for its list to catch up with the text, as a
 * person sees the list change before pressing Enter. Enter picks the option active *then*, and
 * a list refreshed 300 ms after the last key (Tom Select's, jQuery UI's) still showed the
 * options for the text before: Tom Select picked "Red" for "Gre". Waits until nothing in the
 * list it controls (without one, the page) changed for `quietMs`, at most `capMs`; any other
 * field answers at once. With `firstMs` (typing without Enter), until the list begins to change,
 * at most `firstMs`, and then until it has been still for `quietMs`.
 *
 * Runs through {@link elementExpression}. @param {Element} el
 */
export function suggestionsSettled(el, quietMs, capMs, firstMs = 0) {
  el = el[Symbol.for('mcp-relay.typesInto')] ?? el;
  const combobox = el.getAttribute('role') === 'combobox' || ['list', 'both'].includes(el.getAttribute('aria-autocomplete')) ||
    (el.localName === 'input' && Boolean(el.list));
  if (!combobox)
    return { waitedMs: 0 };
  const doc = el.ownerDocument;
  const lists = `${el.getAttribute('aria-controls') || ''} ${el.getAttribute('aria-owns') || ''}`.split(/\s+/)
    .filter(Boolean).map(id => doc.getElementById(id)).filter(Boolean);
  const started = performance.now();
  let last = started;
  let changed = false;
  const observer = new MutationObserver(() => {
    last = performance.now();
    changed = true;
  });
  for (const node of lists.length ? lists : [doc.body || doc.documentElement])
    observer.observe(node, { subtree: true, childList: true, attributes: true, characterData: true });
  return new Promise(resolve => {
    const check = () => {
      const now = performance.now();
      // (With `firstMs`: the list is waited for until it begins to change, that long at most,
      // and then until it is still.)
      const still = firstMs && !changed ? now - started >= firstMs : now - last >= quietMs;
      if (still || now - started >= capMs) {
        observer.disconnect();
        resolve({ waitedMs: Math.round(now - started) });
      } else {
        setTimeout(check, 25);
      }
    };
    setTimeout(check, 25);
  });
}

/**
 * A value a page function returned, as JSON can carry it and a person would read it: CDP's
 * by-value answer refuses a BigInt ("Object couldn't be returned by value") and a cycle
 * ("Object reference chain is too long"), and reads an element, a Map or a Set as `{}`. So a
 * BigInt reads `123n`; NaN, Infinity and -0 as those words; an element as its opening tag and
 * text; a Map as its entries, a Set as its items; a Date, a RegExp or an Error as they print; a
 * function as `[function f]`; a cycle as `[Circular]`. Everything else is as JSON has it.
 * Shipped as source (self-contained).
 *
 * @param {any} value
 */
export function readableValue(value) {
  const clip = (text, most) => (text.length > most ? `${text.slice(0, most - 1)}…` : text);
  const node = n => {
    if (n.nodeType === Node.ELEMENT_NODE) {
      // Its opening tag, written from its attributes (the body's outerHTML may be megabytes).
      const open = `<${n.localName}${Array.from(n.attributes, a => ` ${a.name}="${a.value}"`).join('')}>`;
      const text = (n.innerText ?? n.textContent ?? '').replace(/\s+/g, ' ').trim();
      return `${clip(open, 200)}${text ? ` ${JSON.stringify(clip(text, 100))}` : ''}`;
    }
    if (n.nodeType === Node.DOCUMENT_NODE)
      return `#document ${n.URL}`;
    return clip((n.textContent ?? n.nodeName).replace(/\s+/g, ' ').trim(), 200);
  };
  const ancestors = new Set();
  const walk = (v, depth) => {
    switch (typeof v) {
      case 'bigint': return `${v}n`;
      case 'number': return Number.isFinite(v) && !Object.is(v, -0) ? v : Object.is(v, -0) ? '-0' : String(v);
      case 'function': return `[function ${v.name || 'anonymous'}]`;
      case 'symbol': return v.toString();
      case 'object': break;
      default: return v;
    }
    if (v === null)
      return v;
    if (ancestors.has(v))
      return '[Circular]';
    if (depth > 64)
      return '[…]';
    if (typeof Node !== 'undefined' && v instanceof Node)
      return node(v);
    if (v instanceof Date)
      return Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
    if (v instanceof RegExp)
      return String(v);
    if (v instanceof Error)
      return `${v.name}: ${v.message}`;
    ancestors.add(v);
    try {
      if (v instanceof Map)
        return Array.from(v, ([key, item]) => [walk(key, depth + 1), walk(item, depth + 1)]);
      if (v instanceof Set || ArrayBuffer.isView(v) || (typeof NodeList !== 'undefined' && v instanceof NodeList) ||
          (typeof HTMLCollection !== 'undefined' && v instanceof HTMLCollection))
        return Array.from(v, item => walk(item, depth + 1));
      if (Array.isArray(v))
        return v.map(item => (item === undefined ? null : walk(item, depth + 1)));
      if (typeof v.toJSON === 'function')
        return walk(v.toJSON(), depth + 1);
      const out = {};
      for (const key of Object.keys(v)) {
        if (v[key] !== undefined)
          out[key] = walk(v[key], depth + 1);
      }
      return out;
    } finally {
      ancestors.delete(v);
    }
  };
  return walk(value, 0);
}

/** Where the page is and whether it finished loading. */
export function pageState() {
  return { url: location.href, title: document.title, readyState: document.readyState };
}

/**
 * What a model needs to act on the page without pixels: its readable text and
 * every visible interactive element with a CSS selector that `click`, `type`
 * and `hover` accept. Selectors are checked for uniqueness in this document.
 *
 * @param {{maxTextLength: number, maxElements: number}} limits
 */
export function takeSnapshot(limits) {
  const unique = selector => {
    try {
      return document.querySelectorAll(selector).length === 1;
    } catch {
      return false;
    }
  };
  const attrSelector = (el, attr) => `${el.localName}[${attr}="${CSS.escape(el.getAttribute(attr))}"]`;
  const selectorFor = el => {
    if (el.id && unique(`#${CSS.escape(el.id)}`))
      return `#${CSS.escape(el.id)}`;
    for (const attr of ['data-testid', 'data-test', 'name', 'aria-label']) {
      if (el.hasAttribute(attr) && el.getAttribute(attr) && unique(attrSelector(el, attr)))
        return attrSelector(el, attr);
    }
    const parts = [];
    for (let node = el; node && node.nodeType === Node.ELEMENT_NODE && node !== document.documentElement; node = node.parentElement) {
      if (node !== el && node.id && unique(`#${CSS.escape(node.id)}`)) {
        parts.unshift(`#${CSS.escape(node.id)}`);
        break;
      }
      let part = node.localName;
      const parent = node.parentElement;
      if (parent) {
        const sameTag = Array.from(parent.children).filter(child => child.localName === node.localName);
        if (sameTag.length > 1)
          part += `:nth-of-type(${sameTag.indexOf(node) + 1})`;
      }
      parts.unshift(part);
    }
    return parts.join(' > ');
  };
  const visible = el => {
    const rect = el.getBoundingClientRect();
    if (rect.width === 0 && rect.height === 0)
      return false;
    const style = getComputedStyle(el);
    return style.visibility !== 'hidden' && style.display !== 'none';
  };
  const implicitRole = el => {
    const tag = el.localName;
    if (tag === 'a')
      return 'link';
    if (tag === 'button' || tag === 'summary')
      return 'button';
    if (tag === 'select')
      return 'combobox';
    if (tag === 'textarea')
      return 'textbox';
    if (tag === 'input') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (['button', 'submit', 'reset', 'image'].includes(type))
        return 'button';
      if (type === 'checkbox' || type === 'radio')
        return type;
      if (type === 'range')
        return 'slider';
      return 'textbox';
    }
    if (el.isContentEditable)
      return 'textbox';
    return 'generic';
  };
  const clip = text => {
    const flat = (text || '').replace(/\s+/g, ' ').trim();
    return flat.length > 100 ? `${flat.slice(0, 99)}…` : flat;
  };
  const nameOf = el => {
    const labelledBy = el.getAttribute('aria-labelledby');
    if (labelledBy) {
      const text = labelledBy.split(/\s+/).map(id => document.getElementById(id)?.innerText || '').join(' ');
      if (text.trim())
        return clip(text);
    }
    const candidates = [
      el.getAttribute('aria-label'),
      el.labels && el.labels.length ? Array.from(el.labels).map(label => label.innerText).join(' ') : '',
      el.localName === 'input' && ['button', 'submit', 'reset'].includes(el.type) ? el.value : '',
      el.localName === 'input' || el.localName === 'textarea' || el.localName === 'select' ? '' : el.innerText,
      el.getAttribute('placeholder'),
      el.getAttribute('title'),
      el.getAttribute('alt'),
      el.querySelector && el.querySelector('img[alt]')?.getAttribute('alt'),
    ];
    for (const candidate of candidates) {
      if (candidate && candidate.trim())
        return clip(candidate);
    }
    return '';
  };

  const interactive = document.querySelectorAll([
    'a[href]', 'button', 'input:not([type=hidden])', 'select', 'textarea', 'summary',
    '[role=button]', '[role=link]', '[role=checkbox]', '[role=radio]', '[role=tab]', '[role=menuitem]',
    '[role=textbox]', '[role=combobox]', '[role=switch]', '[contenteditable=""]', '[contenteditable=true]',
    '[onclick]', '[tabindex]:not([tabindex="-1"])',
  ].join(','));
  const elements = [];
  let elementsTruncated = false;
  for (const el of interactive) {
    if (!visible(el))
      continue;
    if (elements.length >= limits.maxElements) {
      elementsTruncated = true;
      break;
    }
    const entry = {
      ref: elements.length + 1,
      role: el.getAttribute('role') || implicitRole(el),
      name: nameOf(el),
      selector: selectorFor(el),
      tag: el.localName,
    };
    if (el.localName === 'input')
      entry.type = (el.getAttribute('type') || 'text').toLowerCase();
    if ('value' in el && el.localName !== 'button' && typeof el.value === 'string' && el.value !== '')
      entry.value = clip(el.value);
    if (el.localName === 'a')
      entry.href = el.href;
    if (el.disabled)
      entry.disabled = true;
    if (el.checked)
      entry.checked = true;
    elements.push(entry);
  }

  const fullText = (document.body ? document.body.innerText : document.documentElement.innerText || '')
      .replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
  const textTruncated = fullText.length > limits.maxTextLength;
  return {
    url: location.href,
    title: document.title,
    text: textTruncated ? fullText.slice(0, limits.maxTextLength) : fullText,
    textTruncated,
    elements,
    elementsTruncated,
  };
}

/**
 * Selects the options of a `<select>` whose value or visible label is one of
 * `values` (value first, then label, both exact after trimming), deselects
 * the rest, and fires `input` and `change` as a person's choice would. Runs
 * through {@link elementExpression}.
 *
 * @param {Element} el
 * @param {string[]} values
 */
export function selectOptions(el, values) {
  // Chosen by the action itself: its answer says what (action-evidence.js leaves it out).
  el[Symbol.for('mcp-relay.setByAction')] = true;
  // A component that draws one drop-down in its shadow root (Shoelace's <sl-select>,
  // Material's <md-outlined-select>) is chosen from through it, as a person sees one field.
  const inner = el.shadowRoot?.querySelectorAll('select, [role=combobox]');
  if (el.localName !== 'select' && inner?.length === 1) {
    const answer = selectOptions(inner[0], values);
    return answer.error === 'not-select' ? { ...answer, element: el.localName } : answer;
  }
  if (el.localName !== 'select') {
    // A drop-down the page draws: a combobox, or a button that pops up a list.
    const popup = el.getAttribute('aria-haspopup');
    const dropDown = el.getAttribute('role') === 'combobox' || (popup !== null && !['false', 'dialog'].includes(popup));
    // Or a text field a widget put in place of a <select> it hides, with no roles at all
    // (selectize, under Shiny's inputs; Chosen): the hidden <select> beside a box around it.
    let replaces = false;
    if (!dropDown && el.localName === 'input') {
      for (let up = el, n = 0; up && n < 3 && !replaces; up = up.parentElement, n++) {
        const before = up.previousElementSibling;
        replaces = before?.localName === 'select' && !before.checkVisibility();
      }
    }
    // How the answer names the drop-down it opened, as the outline does (`combobox "Plan"`).
    const labelledBy = el.getAttribute('aria-labelledby')?.split(/\s+/)
      .map(id => el.ownerDocument.getElementById(id)?.innerText ?? '').join(' ');
    const name = (labelledBy || el.getAttribute('aria-label') || Array.from(el.labels ?? [], label => label.innerText).join(' '))
      .replace(/[\u200b\u2060\ufeff]/g, '').replace(/\s+/g, ' ').trim().slice(0, 60);
    const said = `${el.getAttribute('role') || (el.localName === 'input' ? 'textbox' : el.localName)}${name ? ` ${JSON.stringify(name)}` : ''}`;
    return { error: 'not-select', element: el.localName, said, dropDown: dropDown || replaces, ...(replaces ? { drawnOptions: true } : {}) };
  }
  if (el.disabled)
    return { error: 'disabled', element: el.localName };
  const options = Array.from(el.options);
  const label = option => (option.label || option.textContent || '').replace(/\s+/g, ' ').trim();
  const chosen = [];
  for (const wanted of values) {
    const text = wanted.trim();
    const option = options.find(o => o.value === wanted) || options.find(o => label(o) === text);
    if (!option) {
      return {
        error: 'no-option',
        value: wanted,
        available: options.slice(0, 30).map(o => (o.value === label(o) ? o.value : `${o.value} (${label(o)})`)),
      };
    }
    if (option.disabled)
      return { error: 'option-disabled', value: wanted };
    if (!chosen.includes(option))
      chosen.push(option);
  }
  if (!el.multiple && chosen.length > 1)
    return { error: 'not-multiple', count: chosen.length };
  for (const option of options)
    option.selected = chosen.includes(option);
  el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  // What was chosen, and what the page's own handlers, which ran in those events, left the
  // drop-down showing, when that is not it: Trac's "And" filter adds the field chosen as a
  // row and sets itself back to "field…", which answered `selected: "field…"`.
  const selected = options.filter(o => o.selected);
  const kept = selected.length === chosen.length && chosen.every(o => selected.includes(o));
  return { values: chosen.map(o => o.value), labels: chosen.map(label), ...(kept ? {} : { setBack: selected.map(label) }) };
}

/**
 * Whether `text` is in the page's visible text, read as Playwright MCP's browser_wait_for reads
 * it (its getByText): by `matchesText` (lib/locators.js, handed in as source), case aside and
 * any run of white space as one space, so "Results" is found in rustdoc's "Search results".
 * The page's `innerText` first (hidden elements do not count); then what it leaves out and
 * getByText reads: the text of open shadow roots (web components) and the value of a button
 * or submit input, each shown element's on its own; and the value of a text field the person
 * cannot edit, where a page writes its answer (Gradio's outputs), which getByText does not.
 *
 * @param {(matcher: object, text: string) => boolean} matchesText
 * @param {string} text
 */
export function pageShowsText(matchesText, text) {
  const root = document.body || document.documentElement;
  if (!root)
    return false;
  const matcher = { exact: false, text };
  if (matchesText(matcher, root.innerText))
    return true;
  const shown = el => (el.checkVisibility ? el.checkVisibility() : true);
  const inside = tree => {
    for (const el of tree.querySelectorAll('*')) {
      if (el.localName === 'input' && (el.type === 'submit' || el.type === 'button') && shown(el) && matchesText(matcher, el.value))
        return true;
      // A field the page writes its answer into and the person cannot edit (Gradio's output
      // boxes: disabled text areas) shows that answer; an editable field's value is what was
      // typed, and waiting for it would find the typing.
      if ((el.localName === 'textarea' || (el.localName === 'input' && ['text', 'search', 'url', 'email', 'tel', 'number'].includes(el.type))) &&
          (el.disabled || el.readOnly) && shown(el) && matchesText(matcher, el.value))
        return true;
      if (el.shadowRoot) {
        // innerText does not reach into a shadow root: read each of its shown elements.
        if (Array.from(el.shadowRoot.children).some(child => shown(child) && matchesText(matcher, child.innerText)))
          return true;
        if (inside(el.shadowRoot))
          return true;
      }
    }
    return false;
  };
  return inside(document);
}

/**
 * `getByText`: the innermost elements whose text `matchesText` (lib/locators.js, handed in as
 * source: Playwright's text matching) accepts for `matcher`, shown on the page, within the
 * elements of `scopeRefs` (refs the steps before found) or the whole document. Each is given a
 * ref through `capture` (the snapshot's `captureTree`, which names a subtree's root even
 * without a role), so the command then acts on that very element. The tree cannot answer
 * this: it leaves out elements without a role, and text would then land on a container.
 *
 * @param {(limits: object, el: Element) => {tree: object[]}} capture
 * @param {(matcher: object, text: string) => boolean} matchesText
 * @param {{exact: boolean, text?: string, regex?: {source: string, flags: string}}} matcher
 * @param {string[] | null} scopeRefs
 * @param {number} max how many to name; `total` counts them all
 * @param {string} [withinCss] with no `scopeRefs`: within the elements this selector names
 *   (`locator(css).getByText(…)`), a frame's document for a frame among them
 */
export function textMatches(capture, matchesText, matcher, scopeRefs, max, withinCss) {
  const registry = window[Symbol.for('mcp-relay.refs')];
  const framed = el => (el.localName === 'iframe' || el.localName === 'frame' ? el.contentDocument?.body ?? null : el);
  const roots = scopeRefs !== null ? scopeRefs.map(ref => registry?.byRef.get(ref)?.deref()).filter(el => el && el.isConnected)
    : withinCss !== undefined ? Array.from(document.querySelectorAll(withinCss), framed).filter(Boolean)
      : [document.body || document.documentElement];
  const skip = new Set(['script', 'style', 'noscript', 'template', 'head', 'title']);
  // An element's text as Playwright's getByText reads it: a button or submit input's value;
  // else its children's text, its open shadow root's first (web components), and nothing
  // from scripts or styles. Each element's once, kept for its ancestors.
  const texts = new Map();
  const textOf = el => {
    let text = texts.get(el);
    if (text !== undefined)
      return text;
    text = '';
    if (el.localName === 'input' && (el.type === 'submit' || el.type === 'button')) {
      text = el.value;
    } else {
      for (const children of el.shadowRoot ? [el.shadowRoot.childNodes, el.childNodes] : [el.childNodes]) {
        for (const child of children) {
          if (child.nodeType === Node.TEXT_NODE)
            text += child.data;
          else if (child.nodeType === Node.ELEMENT_NODE && !skip.has(child.localName))
            text += textOf(child);
        }
      }
    }
    texts.set(el, text);
    return text;
  };
  const matching = [];
  const walk = tree => {
    for (const el of tree.querySelectorAll('*')) {
      if (!skip.has(el.localName) && matchesText(matcher, textOf(el)))
        matching.push(el);
      if (el.shadowRoot)
        walk(el.shadowRoot);
    }
  };
  for (const root of roots) {
    walk(root);
    if (root.shadowRoot)
      walk(root.shadowRoot);
  }
  // A shadow root's top elements have no parent element: their host is their container.
  const parentOf = el => el.parentElement || el.parentNode?.host || null;
  // The innermost only: an element whose descendant matches too is that descendant's container.
  const containers = new Set();
  for (const el of matching) {
    for (let up = parentOf(el); up && !containers.has(up); up = parentOf(up))
      containers.add(up);
  }
  const shown = matching.filter(el => !containers.has(el) && (el.checkVisibility ? el.checkVisibility() : true));
  const matches = [];
  for (const el of shown.slice(0, max)) {
    const node = capture({ maxNodes: 1 }, el).tree[0];
    if (node?.ref)
      matches.push({ ref: node.ref, role: node.role, name: node.name ?? el.textContent.replace(/\s+/g, ' ').trim().slice(0, 60) });
  }
  return { matches, total: shown.length };
}
