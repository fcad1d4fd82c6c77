/**
 * The page snapshot a model reads: an accessibility-style outline in the
 * shape Playwright MCP's `browser_snapshot` made familiar (models are trained
 * on it), with a ref on every element it shows (issue 23: what a model reads,
 * it can name: a list to drop on, a region to read, an image to screenshot):
 *
 *     - heading "Controls" [ref=e1] [level=1]
 *     - combobox "Colour" [ref=e2]: Red
 *     - button "Save" [ref=e4] [disabled]
 *     - list "Todo" [ref=e5]:
 *       - listitem [ref=e6]: Write the `drop` command
 *     - iframe [ref=e7]:
 *       - textbox "Inside" [ref=f1e1]
 *
 * Two halves. {@link captureTree} runs in the page (shipped as source text,
 * so self-contained) and returns the tree as JSON; it also gives refs out and
 * remembers them, per element, in a registry on the top window. The pure
 * functions below turn that tree into text ({@link formatOutline}) and bound
 * it ({@link cutLines}); Node tests them directly.
 *
 * Why refs stay true: the registry maps element → ref in a WeakMap and
 * ref → element through a WeakRef, so a ref names one element object for as
 * long as it lives, a second snapshot gives the same element the same ref,
 * and refs are never reused (counters only grow). `findElementThen` in
 * page-scripts.js refuses a ref whose element left its document.
 *
 * The registry lives in the page's main world (under a Symbol.for key, not
 * enumerable): an isolated world would hide it from the page's scripts, but
 * every evaluation would then need that world's context id per frame and per
 * navigation. A page that deletes it only loses its refs (they are refused);
 * one that forges it could only point a ref at one of its own elements.
 */

/**
 * Records each element's ElementInternals as a web component attaches them, so the snapshot
 * can read the ARIA it gives itself there (its role, checked, selected…), which no attribute
 * shows: Material's radios and tabs read as plain boxes without it, in Playwright MCP's too.
 * Evaluated in agent tabs' new documents (debugger-sessions.js) before the page's scripts;
 * `attachInternals` keeps its name, its length and what it returns. A document that loaded
 * before the tab was attached has no record, and reads attributes only.
 */
export const INTERNALS_SCRIPT = `(() => {
  const key = Symbol.for('mcp-relay.internals');
  const proto = window.HTMLElement && HTMLElement.prototype;
  if (Object.prototype.hasOwnProperty.call(window, key) || !proto || !proto.attachInternals) return;
  const known = { of: new WeakMap(), count: 0 };
  Object.defineProperty(window, key, { value: known });
  const attach = proto.attachInternals;
  const wrapped = { attachInternals() {
    const internals = attach.call(this);
    known.of.set(this, internals);
    known.count++;
    return internals;
  } }.attachInternals;
  Object.defineProperty(proto, 'attachInternals', { ...Object.getOwnPropertyDescriptor(proto, 'attachInternals'), value: wrapped });
})()`;

/**
 * Walks the page (and its same-origin iframes) into a tree of plain objects:
 * `{role, name?, ref, actionable?, value?, states?, url?, level?, note?, children?}` (and,
 * not printed, `labelled` where a label gave the name, which getByLabel finds it by);
 * a text run is `{text}` (inline `<code>` joins it, in backticks). Hidden
 * elements (not rendered, `aria-hidden`) are left out; elements with no role
 * of their own (div, span) are left out but their content is kept, except when
 * a person can act on them (`actionable`, what `interactive` keeps) or they
 * are labelled.
 *
 * @param {{maxNodes: number, boxes?: boolean, frame?: number}} limits the walk stops there (and says so), so a
 *   page of millions of nodes cannot make one answer unbounded; `boxes`: each element's box,
 *   `box: [x, y, width, height]`, whole CSS pixels in the top document's viewport (an
 *   iframe's elements offset by where the frame's content sits); `frame`: this is the
 *   document of a frame of another origin, read in its own world, that frame's number in the
 *   top document's (a cross-origin iframe there is marked `otherOrigin: number` for that)
 * @param {Element} [rootElement] only this element's subtree, the element
 *   itself first (shown even without a role of its own)
 */
export function captureTree(limits, rootElement) {
  // Keep the key in step with findElementThen in page-scripts.js, which reads this registry.
  const KEY = Symbol.for('mcp-relay.refs');
  let registry = window[KEY];
  if (!registry) {
    registry = { byRef: new Map(), refOf: new WeakMap(), frameOf: new WeakMap(), frames: 0, counters: new Map() };
    Object.defineProperty(window, KEY, { value: registry, enumerable: false });
  }
  // Frame number → its iframe element, for a frame of another origin that this world cannot
  // walk into: the extension reads it in the frame's own world (commands/other-frames.js).
  registry.frameEls ??= new Map();
  const alive = el => el && el.isConnected && el.ownerDocument.defaultView;
  // The element that has focus in each document (inside shadow roots too): Playwright's
  // snapshot marks it [active], and a key press acts on it.
  const focusedIn = new Map();
  const isFocused = el => {
    const doc = el.ownerDocument;
    if (!focusedIn.has(doc)) {
      let at = doc.activeElement;
      while (at && at.shadowRoot && at.shadowRoot.activeElement)
        at = at.shadowRoot.activeElement;
      focusedIn.set(doc, at === doc.body || at === doc.documentElement ? null : at);
    }
    return focusedIn.get(doc) === el;
  };
  // Forget refs whose elements are gone; they stay refused (unknown is refused too).
  for (const [ref, weak] of registry.byRef) {
    if (!alive(weak.deref()))
      registry.byRef.delete(ref);
  }
  // What each ref named, `[role, name, the ref of the nearest element around it that has one,
  // how many elements of that role and name come before it there]`:
  // a ref whose element the page replaced as it drew again (TiddlyWiki's tag field and its
  // "add" button, on each key) is refused saying what it was and what stands in its place
  // now (findElementThen in page-scripts.js). Kept past its element, for that; dropped with
  // the rest of the gone once there are many more of them than live refs.
  registry.about ??= new Map();
  if (registry.about.size > 4 * registry.byRef.size + 5_000) {
    for (const ref of registry.about.keys()) {
      if (!registry.byRef.has(ref))
        registry.about.delete(ref);
    }
  }
  // This function itself, for findElementThen to look for a gone ref's successor as a
  // snapshot would name it.
  registry.capture = captureTree;
  const refFor = (el, frame) => {
    const known = registry.refOf.get(el);
    if (known && registry.byRef.has(known))
      return known;
    const n = (registry.counters.get(frame) || 0) + 1;
    registry.counters.set(frame, n);
    const ref = frame ? `f${frame}e${n}` : `e${n}`;
    registry.refOf.set(el, ref);
    registry.byRef.set(ref, new WeakRef(el));
    return ref;
  };
  // A ref for an element no snapshot named yet, given as this one would give it, for another
  // page function (page-scripts.js markDrawnOption: an option a drawn drop-down shows in a
  // frame, found by its words). None for a frame no snapshot went into.
  registry.give = el => {
    const host = el.ownerDocument === document ? null : el.ownerDocument.defaultView?.frameElement;
    const frame = host ? registry.frameOf.get(host) : 0;
    return frame === undefined ? null : refFor(el, frame);
  };
  const frameNumber = iframe => {
    let n = registry.frameOf.get(iframe);
    if (!n) {
      n = ++registry.frames;
      registry.frameOf.set(iframe, n);
      registry.frameEls.set(n, new WeakRef(iframe));
    }
    return n;
  };

  // Where an element is in the top viewport: its own rectangle, moved by each frame around it.
  const boxOf = el => {
    const rect = el.getBoundingClientRect();
    let [x, y] = [rect.x, rect.y];
    for (let view = el.ownerDocument.defaultView; view && view.frameElement; view = view.frameElement.ownerDocument.defaultView) {
      const host = view.frameElement;
      const outer = host.getBoundingClientRect();
      const css = host.ownerDocument.defaultView.getComputedStyle(host);
      x += outer.x + host.clientLeft + parseFloat(css.paddingLeft);
      y += outer.y + host.clientTop + parseFloat(css.paddingTop);
    }
    return [x, y, rect.width, rect.height].map(Math.round);
  };
  // Roles whose accessible name is their text: the text is not repeated below them.
  const NAME_FROM_CONTENT = new Set([
    'button', 'link', 'heading', 'cell', 'gridcell', 'columnheader', 'rowheader', 'option', 'tab', 'menuitem',
    'checkbox', 'radio', 'switch', 'treeitem', 'generic',
  ]);
  const MAX_OPTIONS = 50;
  /** An unnamed <svg> no larger than this square (in area: a 80×16 wordmark too) is an icon, left out. */
  const ICON_MAX_PX = 48;
  const LEAD = 'lead';
  const TRAIL = 'trail';
  // Where a text run's own box stands, when the page placed that box itself (`position:
  // absolute`: a virtualized grid's cell). Runs of boxes at different heights are different
  // lines on the screen, and are not read as one.
  const TOP = 'top';
  const SPACE = { space: true };
  // Characters that take no room and say nothing: a zero-width space (Swagger UI's path
  // buttons read `get \u200b/pets`), a word joiner (CKEditor puts seven where a bold caret
  // waits, and the paragraph read `Steps to reproduce:⁠⁠⁠⁠⁠⁠⁠ now`), a byte-order mark. Left
  // out of what the outline says (a zero-width joiner, which joins an emoji, stays).
  const UNSEEN = /[\u200b\u2060\ufeff]/g;
  const flat = text => (text || '').replace(UNSEEN, '').replace(/\s+/g, ' ').trim();
  // A button or link that shows only an icon font's glyph or a sprite, with no name at all
  // (Node-RED's toolbar: 40 of them, `<a><i class="fa fa-bars"></i></a>`, each read as a bare
  // `link [ref=e6]`; its tooltips are its own popovers, shown on hover), is told by the icon it
  // draws: `button [ref=e16] [icon=bars]`. Not a name (no accessible name has these words, and
  // getByRole does not match them): what a person sees on it, which a target copied from the
  // line names (`button [icon=bars]`, locators.js).
  const ICON_CLASS = /^(?:fa[srbl]?|bi|glyphicon|icon|mdi|ti|la[srb]?|codicon|octicon|feather|lucide|ri|ion|pi|bx[sl]?|zmdi|uil|oi|gg)-([a-z][a-z0-9-]*)$/;
  const NOT_AN_ICON = /^(?:fw|xs|sm|lg|xl|2xs|2xl|\d+x|spin|pulse|solid|regular|light|thin|duotone|brands|sharp|inverse|border|li|stack(?:-.+)?|pull-.+|rotate-.+|flip(?:-.+)?|beat|fade|bounce|shake|button|btn|only|left|right|text|wrapper|container|small|medium|large|white|black|primary|secondary|default|active|disabled)$/;
  const ICON_ROLES = new Set(['button', 'link', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'option', 'treeitem', 'checkbox', 'radio', 'switch']);
  const iconOf = el => {
    const names = [];
    for (const part of [el, ...el.querySelectorAll('i, span, svg, use, em')].slice(0, 12)) {
      if (part !== el && !part.checkVisibility?.())
        continue;
      const own = [...part.classList].map(name => ICON_CLASS.exec(name)?.[1]).filter(name => name && !NOT_AN_ICON.test(name));
      const sprite = part.localName === 'use' ? (part.getAttribute('href') || part.getAttribute('xlink:href') || '').split('#')[1] : '';
      const data = part.getAttribute('data-icon') || part.getAttribute('data-lucide');
      for (const name of [...own, sprite?.replace(/^(?:icon|i)-/, ''), data]) {
        if (name && !names.includes(name) && names.length < 2)
          names.push(name);
      }
    }
    return clip(names.join(' '), 40);
  };
  // ARIA a web component gives itself through ElementInternals (Material's radios and tabs set
  // their role and checked state there, in no attribute): recorded as each component attaches
  // its internals (INTERNALS_SCRIPT, run in agent tabs' documents). An attribute the page sets
  // wins, as it does for Chrome.
  const INTERNALS_KEY = Symbol.for('mcp-relay.internals');
  const INTERNALS_PROPS = {
    'role': 'role', 'aria-label': 'ariaLabel', 'aria-hidden': 'ariaHidden', 'aria-checked': 'ariaChecked',
    'aria-selected': 'ariaSelected', 'aria-expanded': 'ariaExpanded', 'aria-pressed': 'ariaPressed',
    'aria-disabled': 'ariaDisabled', 'aria-level': 'ariaLevel', 'aria-valuenow': 'ariaValueNow',
    'aria-valuemin': 'ariaValueMin', 'aria-valuemax': 'ariaValueMax', 'aria-valuetext': 'ariaValueText',
    'aria-rowcount': 'ariaRowCount',
  };
  const internalsOf = el => {
    const known = el.ownerDocument.defaultView?.[INTERNALS_KEY];
    return known && known.count > 0 ? known.of.get(el) : undefined;
  };
  const aria = (el, name) => {
    const own = el.getAttribute(name);
    // A label a script set from nothing (`setAttribute('aria-label', null)`: Bokeh's multi-
    // choice field read `textbox "null"`) names nothing.
    if (own !== null)
      return name === 'aria-label' && (own === 'null' || own === 'undefined') ? null : own;
    const value = internalsOf(el)?.[INTERNALS_PROPS[name]];
    return value === null || value === undefined ? null : String(value);
  };
  // The <label>s of a field, or of a form-associated component (its internals know them).
  const labelsOf = el => {
    if (el.labels?.length)
      return Array.from(el.labels);
    // A field a date picker shows in place of the hidden input it fills (flatpickr's alternate
    // input, under Panel's and many forms' date fields) is labelled by that input's labels: a
    // hidden input takes no label, so the field read as an unnamed textbox below "Delivery date".
    const hidden = el.localName === 'input' ? el.previousElementSibling : null;
    if (hidden?.localName === 'input' && hidden.type === 'hidden' && hidden.id) {
      const labels = el.getRootNode().querySelectorAll?.(`label[for="${CSS.escape(hidden.id)}"]`);
      if (labels?.length)
        return Array.from(labels);
    }
    try {
      return Array.from(internalsOf(el)?.labels ?? []);
    } catch {
      // Not form-associated: it has no labels.
      return [];
    }
  };
  const clip = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'meta', 'link', 'title']);
  const ACTIONABLE = [
    'a[href]', 'button', 'input:not([type=hidden])', 'select', 'textarea', 'summary', 'iframe',
    '[role=button]', '[role=link]', '[role=checkbox]', '[role=radio]', '[role=tab]', '[role=menuitem]',
    '[role=option]', '[role=textbox]', '[role=combobox]', '[role=switch]', '[role=slider]', '[role=treeitem]',
    '[contenteditable=""]', '[contenteditable=true]', '[onclick]', '[tabindex]:not([tabindex="-1"])',
    '[draggable=true]', '[onmouseover]', '[onmouseenter]', '[onmousedown]', '[onpointerdown]', '[ondblclick]',
    '[oncontextmenu]',
  ].join(',');
  // A <th> heads its column or its row, as Chrome and Playwright decide: by its scope, else
  // by its neighbours: a cell with data beside it (`<th>Name</th><td>Ada</td>`) makes it a
  // row's header; headers on both sides, or none beside it, a column's.
  const headerRole = el => {
    const scope = (el.getAttribute('scope') || '').toLowerCase();
    if (scope === 'row' || scope === 'rowgroup')
      return 'rowheader';
    if (scope === 'col' || scope === 'colgroup')
      return 'columnheader';
    const [before, after] = [el.previousElementSibling, el.nextElementSibling];
    const data = cell => cell?.localName === 'td' && Boolean(flat(cell.textContent) || cell.children.length);
    if (before?.localName === 'th' && after?.localName === 'th')
      return 'columnheader';
    return data(before) || data(after) ? 'rowheader' : 'columnheader';
  };
  // An element's role: the one its page gave it, else its tag's.
  const roleOf = el => flat(aria(el, 'role')).split(' ')[0] || implicitRole(el);
  // Where a <header> or <footer> is that of a part of the page, not of the page.
  const SECTIONING = 'article, aside, main, nav, section';
  const implicitRole = el => {
    const tag = el.localName;
    switch (tag) {
      case 'a': return el.hasAttribute('href') ? 'link' : 'generic';
      case 'button': case 'summary': return 'button';
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'textarea': return 'textbox';
      case 'option': return 'option';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'p': return 'paragraph';
      case 'ul': case 'ol': return 'list';
      case 'li': return 'listitem';
      case 'table': return 'table';
      case 'tr': return 'row';
      case 'td': return 'cell';
      case 'th': return headerRole(el);
      case 'img': return el.getAttribute('alt') === '' ? 'none' : 'img';
      case 'nav': return 'navigation';
      case 'main': return 'main';
      // A page's header and footer are landmarks; an article's or a section's are not
      // (HTML-AAM, as Chrome and Playwright map them).
      case 'header': return el.parentElement?.closest(SECTIONING) ? 'generic' : 'banner';
      case 'footer': return el.parentElement?.closest(SECTIONING) ? 'generic' : 'contentinfo';
      case 'aside': return 'complementary';
      // A form is a landmark only when named, as a section is a region only then.
      case 'form': return aria(el, 'aria-label') !== null || el.hasAttribute('aria-labelledby') || el.hasAttribute('title') ? 'form' : 'generic';
      case 'dialog': return 'dialog';
      case 'iframe': case 'frame': return 'iframe';
      case 'fieldset': case 'details': return 'group';
      case 'hr': return 'separator';
      case 'blockquote': return 'blockquote';
      case 'pre': case 'code': return 'code';
      case 'figure': return 'figure';
      case 'article': return 'article';
      case 'section': return aria(el, 'aria-label') !== null || el.hasAttribute('aria-labelledby') ? 'region' : 'generic';
      case 'progress': return 'progressbar';
      case 'meter': return 'meter';
      case 'output': return 'status';
      case 'menu': return 'list';
      case 'svg': return 'img';
      // Not ARIA roles, but what Chrome's accessibility tree calls them: a drawing surface or a
      // player a model needs to name (to screenshot a chart, click in a game, read a player).
      case 'canvas': case 'video': case 'audio': return el.localName;
      case 'input': {
        const type = (el.getAttribute('type') || 'text').toLowerCase();
        if (['button', 'submit', 'reset', 'image'].includes(type))
          return 'button';
        if (type === 'checkbox' || type === 'radio')
          return type;
        if (type === 'range')
          return 'slider';
        if (type === 'number')
          return 'spinbutton';
        if (type === 'file')
          return 'button';
        // As HTML-AAM maps them (and Playwright's snapshot shows them): a search field is a
        // searchbox, and a text field with suggestions (list= naming a <datalist>) a combobox.
        // A list= naming nothing suggests nothing: NiceGUI's every input carries one.
        if (['text', 'search', 'email', 'tel', 'url'].includes(type) && el.list)
          return 'combobox';
        if (type === 'search')
          return 'searchbox';
        return 'textbox';
      }
      default:
        return el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable) ? 'textbox' : 'generic';
    }
  };
  // The text an element shows, as its name from content, read as accessible names are: the
  // page's own text (not as CSS transforms it: rustdoc's "copy" button shows "COPY"), without
  // what is not rendered (a `display: none` "Expand description" inside rustdoc's open section
  // toggle), a block within it a word apart (`std` and its version, not `std1.95.0`); an
  // element that shows no text of its own, what its ::before and ::after say (the same toggle
  // reads "Collapse"). Icon-font glyphs (private use code points) say nothing.
  const shownText = el => {
    let text;
    if (el.querySelector('[aria-hidden="true"], slot, select') || el.shadowRoot || el.localName === 'slot') {
      text = renderedText(el);
    } else {
      // Chrome's own reading of what is rendered, far faster than renderedText; its one
      // difference from a name, CSS's text-transform, undone where the page's text is the same
      // words.
      text = el.innerText ?? el.textContent;
      const own = el.textContent;
      if (flat(own).toLowerCase() === flat(text).toLowerCase())
        text = own;
    }
    if (flat(text))
      return besideText(el, text);
    return [generated(el, '::before'), generated(el, '::after')].join(' ');
  };
  // The elements a tree's style rules may give a ::before or ::after that draws text (a
  // string that is not an icon font's glyph, or a value only the element's style resolves), as a set;
  // null when that cannot be known (a style sheet of another origin, nested rules), and then
  // every element is asked. Read once a capture per document or shadow root.
  const drawersOf = new Map();
  let lastTree = null;
  let lastDrawers = null;
  const drawsWords = tree => {
    if (tree === lastTree)
      return lastDrawers;
    lastTree = tree;
    lastDrawers = drawersOf.has(tree) ? drawersOf.get(tree) : readDrawers(tree);
    return lastDrawers;
  };
  const readDrawers = tree => {
    const found = [];
    let known = true;
    const unescape = value => value.replace(/\\([0-9a-fA-F]{1,6})\s?/g, (_, hex) => String.fromCodePoint(parseInt(hex, 16) || 0xfffd));
    const visit = rules => {
      for (const rule of rules) {
        if (!known)
          return;
        if (rule.styleSheet) {
          try {
            visit(rule.styleSheet.cssRules);
          } catch {
            known = false;
          }
          continue;
        }
        const content = rule.selectorText && /:(?:before|after)\b/i.test(rule.selectorText) ? rule.style.getPropertyValue('content').trim() : '';
        // A picture (`url(…)`) draws no words, nor does an icon font's glyph (private use).
        const words = content && !['none', 'normal', '""', "''"].includes(content) && !/^url\(/i.test(content) &&
          (!/^(?:"[^"]*"|'[^']*'|\s)+$/.test(content) || /[^"'\s\uE000-\uF8FF]/u.test(unescape(content)));
        if (words) {
          for (const one of splitSelectors(rule.selectorText)) {
            if (one.includes('&'))
              known = false;
            else if (/:(?:before|after)\b/i.test(one))
              found.push(one.replace(/::?(?:before|after)\b/gi, '').trim() || '*');
          }
        }
        if (rule.cssRules)
          visit(rule.cssRules);
      }
    };
    for (const sheet of [...(tree.styleSheets || []), ...(tree.adoptedStyleSheets || [])]) {
      try {
        visit(sheet.cssRules);
      } catch {
        known = false;
      }
    }
    let drawers = null;
    try {
      drawers = known ? new Set(found.length ? tree.querySelectorAll(found.join(', ')) : []) : null;
    } catch {
      // A selector this browser cannot match: every element is asked.
    }
    drawersOf.set(tree, drawers);
    return drawers;
  };
  // A form field a widget replaced and keeps out of sight and out of the tab order (see the
  // walk): Tom Select's clipped <select>, ion.rangeSlider's input with no room for text.
  const replacedField = (el, style) => el.tabIndex === -1 && ['select', 'input', 'textarea'].includes(el.localName) &&
    (style.clipPath === 'inset(50%)' || style.clip === 'rect(0px, 0px, 0px, 0px)' ||
      ((el.localName === 'textarea' || (el.localName === 'input' && el.type in TEXT_TYPES)) &&
        (el.clientWidth === 0 || el.clientHeight === 0 || style.fontSize === '0px')));
  const TEXT_TYPES = { text: 1, search: 1, number: 1, email: 1, tel: 1, url: 1 };
  // Words an empty rich-text editor draws with CSS are its placeholder, not text it holds
  // (Quill's `.ql-blank::before`, TipTap's and CKEditor's paragraph `::before`, each `content:
  // attr(data-placeholder)`): Quill's editor read `textbox: - text: What changed in this
  // release?`, as if it held those words. Said as an input's placeholder is (`/placeholder:`).
  const blankEditor = el => {
    if (!el.isContentEditable)
      return false;
    let root = el;
    while (root.parentElement?.isContentEditable)
      root = root.parentElement;
    return !flat(root.textContent);
  };
  const drawnPlaceholder = el => {
    for (let at = el, depth = 0; at && depth < 3; at = at.firstElementChild, depth++) {
      const words = generated(at, '::before', true) || generated(at, '::after', true);
      if (words)
        return words;
    }
    return '';
  };
  // An element's text with the words its ::before and ::after draw around it; the text itself
  // (not a copy: a large section's is long) when they draw none.
  const besideText = (el, text) => {
    const before = generated(el, '::before', true);
    const after = generated(el, '::after', true);
    return before || after ? [before, text, after].filter(Boolean).join(' ') : text;
  };
  // The document or shadow root an element is in; its document until the walk met a shadow root.
  const treeOf = el => (shadowRoots.size ? el.getRootNode() : el.ownerDocument);
  // A selector list's selectors: split at the commas outside brackets (`:is(a, b)`).
  const splitSelectors = list => {
    const out = [];
    let depth = 0;
    let start = 0;
    for (let i = 0; i < list.length; i++) {
      const c = list[i];
      if (c === '(' || c === '[')
        depth++;
      else if (c === ')' || c === ']')
        depth--;
      else if (c === ',' && depth === 0) {
        out.push(list.slice(start, i).trim());
        start = i + 1;
      }
    }
    out.push(list.slice(start).trim());
    return out;
  };
  // The words an element's ::before or ::after draws (`content: "Error: "`, Shiny's prefix to
  // an error; a required field's "*"; a "NEW" badge), as Chrome's accessibility tree and
  // Playwright's snapshot read them: quoted strings only (not counters or attr()), without
  // icon-font glyphs (private use code points). Beside text of the element's own (`asWords`),
  // only words (a letter or a digit) or a lone "*": a breadcrumb's "/" or a bullet is decoration.
  // Beside text, words drawn where nobody sees them (rustdoc's "Collapse" on every toggle, in
  // a box 0 px across that clips it, for screen readers) are left out, as text so hidden is.
  const generated = (el, pseudo, asWords = false) => {
    // Most elements draw no words: asking each for its ::before and ::after cost the `Vec`
    // page 150 ms. Only elements the page's rules give such words are asked (`drawsWords`).
    // A shadow host is drawn by its shadow tree's rules too (`:host::before`): always asked.
    const drawers = el.shadowRoot ? null : drawsWords(treeOf(el));
    if (drawers && !drawers.has(el))
      return '';
    let known = wordsDrawn.get(el);
    if (asWords && known && pseudo in known)
      return known[pseudo];
    const drawn = el.ownerDocument.defaultView.getComputedStyle(el, pseudo);
    const content = drawn.content;
    if (!content || content === 'none' || content === 'normal' || content[0] !== '"')
      return '';
    const strings = content.match(/"(?:[^"\\]|\\.)*"/g) || [];
    const text = strings.map(quoted => quoted.slice(1, -1).replace(/\\(.)/g, '$1')).join('').replace(/[\uE000-\uF8FF]/g, '');
    if (!asWords)
      return text;
    if (!known)
      wordsDrawn.set(el, known = {});
    // The cheap reads first: a pseudo-element's width is laid out to be read.
    const words = /[\p{L}\p{N}]/u.test(text) || text.trim() === '*';
    const unseen = !words || drawn.display === 'none' || drawn.visibility !== 'visible' || drawn.opacity === '0' ||
      drawn.fontSize === '0px' || drawn.clipPath === 'inset(50%)' || drawn.clip === 'rect(0px, 0px, 0px, 0px)' ||
      (drawn.overflow !== 'visible' && (parseFloat(drawn.width) <= 1 || parseFloat(drawn.height) <= 1));
    known[pseudo] = unseen ? '' : flat(text);
    return known[pseudo];
  };
  // What `generated` found beside an element's text, for this capture: a name and the
  // element's own line both ask. @type {WeakMap<Element, Record<string, string>>}
  const wordsDrawn = new WeakMap();
  // The text nodes of `el` that are rendered and not aria-hidden, a block a word apart: what
  // innerText gives, less what is aria-hidden (mdbook's chapter numbers), and into shadow trees
  // as a person sees them: a <slot> shows what the page put in it (a web component's button
  // or radio reads the words its author slotted), else its own fallback content.
  // Read as the text that names `named` (a label's, an aria-labelledby target's), a picture
  // says its alt and an element its aria-label in place of its content, another field its
  // value, and `named` itself nothing, as accessible names are computed.
  const renderedText = (el, named) => {
    const view = el.ownerDocument.defaultView;
    const parts = [];
    const visit = node => {
      if (node.nodeType === Node.TEXT_NODE) {
        parts.push(node.textContent);
        return;
      }
      if (node.nodeType !== Node.ELEMENT_NODE || SKIP.has(node.localName) || aria(node, 'aria-hidden') === 'true')
        return;
      if (node.localName === 'br') {
        parts.push(' ');
        return;
      }
      const style = view.getComputedStyle(node);
      if (style.display === 'none' || style.visibility === 'hidden' || style.visibility === 'collapse')
        return;
      // A drop-down says the option chosen, not all of them (a table cell holding one read
      // `cell "--------- 1 2 3 4 5"`).
      if (node.localName === 'select' && !named) {
        parts.push(' ', chosenText(node), ' ');
        return;
      }
      if (named) {
        const said = node === named ? '' : namingText(node);
        if (said !== null) {
          parts.push(' ', said, ' ');
          return;
        }
      }
      const block = style.display !== 'inline' && style.display !== 'contents';
      if (block)
        parts.push(' ');
      for (const kid of shownKids(node))
        visit(kid);
      if (block)
        parts.push(' ');
    };
    for (const kid of shownKids(el))
      visit(kid);
    return parts.join('');
  };
  // What a drop-down shows: the options chosen.
  const chosenText = select => Array.from(select.selectedOptions, option => option.textContent).join(' ');
  // What an element inside a label says in the label's text, where that is not its content:
  // null where its content is read.
  const namingText = node => {
    const label = aria(node, 'aria-label');
    if (flat(label))
      return label;
    if (node.localName === 'img' || node.localName === 'area' || (node.localName === 'input' && node.type === 'image'))
      return node.getAttribute('alt') || '';
    if (node.localName === 'svg')
      return node.querySelector(':scope > title')?.textContent || '';
    if (node.localName === 'select')
      return chosenText(node);
    if (node.localName === 'textarea')
      return node.value;
    if (node.localName === 'input')
      return ['checkbox', 'radio', 'file', 'hidden', 'password'].includes(node.type) ? '' : node.value;
    return null;
  };
  // Text that names `named` (a <label>'s, an aria-labelledby target's). Plain words are the
  // page's own text; one holding more is read as accessible names are: Django's search box
  // is labelled by a magnifier `<img alt="Search">` (its name was empty), a `<select>` inside
  // its label is not part of its own name ("Show entries", not "Show 1025 entries"), and a
  // hint the label hides (`display: none`) is left out. A label not rendered itself still
  // names its field, whole.
  const labelText = (el, named) => {
    const text = el.localName === 'slot' || el.shadowRoot || el.querySelector('slot') ? renderedText(el, named)
      : !el.firstElementChild || (el.checkVisibility && !el.checkVisibility()) ? el.textContent
      : renderedText(el, named);
    // A required field's "*" its label draws after it is part of the field's name.
    return besideText(el, text);
  };
  // The shown element that `el` names by `aria-labelledby`, looked for in `el`'s own tree.
  // Each tree's labelled elements are listed once a capture, by the ids they point to: a
  // query per element with an id took the `Vec` page's snapshot from 390 to 600 ms.
  const labelledIn = new Map();
  const labelledByThis = el => {
    const tree = el.getRootNode();
    let byId = labelledIn.get(tree);
    if (!byId) {
      byId = new Map();
      for (const named of tree.querySelectorAll?.('[aria-labelledby]') ?? []) {
        for (const id of named.getAttribute('aria-labelledby').split(/\s+/)) {
          if (id && !byId.has(id))
            byId.set(id, named);
        }
      }
      labelledIn.set(tree, byId);
    }
    const named = byId.get(el.id);
    return named && named !== el && !el.contains(named) && rendered(named) ? named : null;
  };
  // What a field's <label>s together say, as a name.
  const labelsName = (labels, named) => clip(flat(labels.map(label => labelText(label, named)).join(' ')), 100);
  // The accessible name, whether it was read from the element's own content, and whether a
  // label gave it (aria-labelledby, aria-label, a <label>): what getByLabel finds an element by.
  const nameOf = (el, role) => {
    const doc = el.ownerDocument;
    const labelledBy = el.getAttribute('aria-labelledby');
    if (labelledBy) {
      // Ids are looked up in the element's own tree: a web component's field is labelled by
      // an element of its shadow tree (Shoelace's `aria-labelledby="label"`).
      const tree = el.getRootNode();
      const byId = id => (tree.getElementById ? tree.getElementById(id) : null) || doc.getElementById(id);
      // Each element pointed to, the element itself too, says its own aria-label first, else
      // its text, as accessible names are computed: react-aria's slider points to itself and
      // to its group, and read "200100" (the digits drawn around it), not "Minimum amount
      // Minimum amount"; a button pointing to its list's label and itself reads "Box size
      // Small".
      const part = target => aria(target, 'aria-label') || labelText(target, el);
      const text = flat(labelledBy.split(/\s+/).map(id => { const target = byId(id); return target ? part(target) : ''; }).join(' '));
      if (text)
        return [clip(text, 100), false, true];
    }
    const isInput = el.localName === 'input';
    const candidates = [
      aria(el, 'aria-label'),
      el.localName === 'svg' ? el.querySelector(':scope > title')?.textContent : '',
      labelsOf(el).map(label => labelText(label, el)).join(' '),
      isInput && ['button', 'submit', 'reset'].includes(el.type) ? el.value || (el.type === 'submit' ? 'Submit' : '') : '',
      // A clickable box's title says what it does where its content is a mark (Sphinx's `>>>`
      // toggle: "Hide the prompts and output"), and Chrome names a generic by its title.
      NAME_FROM_CONTENT.has(role) && !isInput && el.localName !== 'select' && !(role === 'generic' && flat(el.getAttribute('title')))
        ? shownText(el) : '',
      // What names a group, a table or a figure, as Chrome names them.
      el.localName === 'fieldset' ? el.querySelector('legend')?.textContent : '',
      el.localName === 'table' ? el.querySelector(':scope > caption')?.textContent : '',
      el.localName === 'figure' ? el.querySelector(':scope > figcaption')?.textContent : '',
      el.getAttribute('alt'),
      el.getAttribute('title'),
      // Only a field's placeholder names it, as Chrome computes names (a <select> Tom Select
      // hides keeps one that says nothing of what it is).
      isInput || el.localName === 'textarea' ? el.getAttribute('placeholder') : '',
      // What Chrome's own button on an unlabelled file input says, so the model can find it.
      isInput && el.type === 'file' ? (el.multiple ? 'Choose Files' : 'Choose File') : '',
    ];
    for (const [index, candidate] of candidates.entries()) {
      const text = flat(candidate);
      if (text)
        return [clip(text, 100), index === CONTENT_CANDIDATE, LABEL_CANDIDATES.includes(index)];
    }
    return ['', false, false];
  };
  const CONTENT_CANDIDATE = 4;
  // The element that names its parent, by the parent's tag.
  const CAPTIONS = { legend: 'fieldset', caption: 'table', figcaption: 'figure' };
  // aria-label and a <label>, among nameOf's candidates.
  const LABEL_CANDIDATES = [0, 2];
  /**
   * The lines of a code block as a person sees them (its rendered text, so lines the page
   * hides stay hidden), without the indentation every line shares and without blank lines at
   * either end; null where the element does not keep line breaks or has only one line.
   */
  const codeLines = (el, style) => {
    const keeps = ['pre', 'pre-wrap', 'pre-line', 'break-spaces'].includes(style.whiteSpace) ||
      ['preserve', 'preserve-breaks', 'break-spaces'].includes(style.whiteSpaceCollapse);
    if (!keeps)
      return null;
    const lines = (el.innerText || '').replace(/\u00a0/g, ' ').replace(UNSEEN, '').split('\n').map(line => line.replace(/\s+$/, ''));
    while (lines.length && !lines[0])
      lines.shift();
    while (lines.length && !lines[lines.length - 1])
      lines.pop();
    if (lines.length < 2)
      return null;
    const shared = lines.reduce((least, line) => (line ? Math.min(least, line.match(/^[ \t]*/)[0].length) : least), Infinity);
    // Runs of blank lines read as one.
    return lines.map(line => line.slice(shared)).filter((line, i, all) => line || all[i - 1]).join('\n');
  };
  // A Monaco editor's text, from the lines it draws (sorted by their place: it reuses line
  // elements as it scrolls), for the element that takes its typing; null elsewhere.
  const monacoLines = input => {
    const editor = input.closest('.monaco-editor');
    if (!editor)
      return null;
    const byTop = selector => Array.from(editor.querySelectorAll(selector))
      .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    const drawn = byTop('.view-lines > .view-line');
    const lines = drawn.map(line => line.textContent.replace(/\u00a0/g, ' ').replace(/\s+$/, ''));
    while (lines.length && !lines[lines.length - 1])
      lines.pop();
    if (!lines.length)
      return null;
    // It draws only the lines in view: lines above (scrolled past) or one cut by the bottom
    // edge say there is more. Its scroll bar does not (it scrolls past the last line).
    const numbers = byTop('.margin-view-overlays .line-numbers').map(n => parseInt(n.textContent, 10)).filter(Number.isFinite);
    // The first line is drawn at the top of the editor's content: one drawn lower means lines
    // above it are not (a line the view scrolled part way past is still drawn).
    const box = editor.getBoundingClientRect();
    const more = parseFloat(drawn[0].style.top) > 0 || drawn[drawn.length - 1].getBoundingClientRect().bottom > box.bottom + 1;
    if (!more)
      return lines.join('\n');
    const which = numbers.length ? `lines ${numbers[0]}–${numbers[numbers.length - 1]}` : 'the lines';
    return `[${which} of the editor shown; it scrolls for more]\n${lines.join('\n')}`;
  };
  // Roles whose element, empty, is not shown: they only hold what a page writes into them.
  const EMPTY_SAYS_NOTHING = new Set(['code', 'alert', 'status', 'log', 'marquee', 'timer']);
  // Roles whose aria-selected a person sees: the tab shown, the chosen option, row or item.
  const SELECTABLE = new Set(['option', 'tab', 'row', 'gridcell', 'treeitem', 'columnheader', 'rowheader']);
  // Roles that hold blocks of content of their own: an element whose name was read from
  // content holding one of them (a summary holding a heading, a link wrapping a card) is not
  // named by it; the blocks below say it, once.
  const BLOCKS = new Set(['heading', 'paragraph', 'list', 'listitem', 'table', 'group', 'region', 'article', 'figure', 'code', 'blockquote']);
  const TABLE_CELLS = new Set(['cell', 'gridcell', 'columnheader', 'rowheader']);
  const GRIDS = new Set(['grid', 'treegrid', 'table']);
  const VALUED = new Set(['spinbutton', 'slider', 'progressbar', 'meter']);
  // What makes a canvas's fallback content worth reading: see `fallbackDepth`.
  const CANVAS_FALLBACK = '[role], table, a[href], button, input, select, textarea';
  /** A row's `aria-rowindex`, for {@link joinSplitRows}. @type {WeakMap<object, string>} */
  const rowIndexOf = new WeakMap();
  // How many rows have one so far: a grid none of whose rows has one is not walked again.
  let indexedRows = 0;
  // Inside a <canvas> whose fallback content is built for assistive technology (Glide Data
  // Grid's `<table role="grid">`, which Streamlit's st.dataframe draws on a canvas): that
  // content has no boxes, by design, yet Chrome's accessibility tree reads it, and it is the
  // only text of what the canvas shows. While above 0, elements are read without boxes.
  let fallbackDepth = 0;
  // A grid drawn in parts side by side (AG Grid's pinned columns beside its scrolling middle:
  // MLflow's runs table; MUI's pinned columns) draws each row once in each part, every copy
  // with the row's `aria-rowindex`. A person reads one row across the parts, and so does the
  // outline: a row's later copies give their cells to its first, in the order the parts are
  // drawn, and a row group the join left empty goes. A grid inside the grid is its own.
  const joinSplitRows = kids => {
    const first = new Map();
    const visit = items => items.filter(item => {
      // A header row and a data row are never parts of one row, whatever their indexes say
      // (Shiny's data grid numbers its header row 1, and its first data row 1 too).
      const header = item.children?.some(kid => kid.role === 'columnheader');
      const index = rowIndexOf.has(item) ? `${rowIndexOf.get(item)}${header ? ' header' : ''}` : undefined;
      if (index !== undefined) {
        const head = first.get(index);
        if (!head) {
          first.set(index, item);
          return true;
        }
        if (item.children)
          head.children = [...(head.children || []), ...item.children];
        return false;
      }
      if (!item.children || GRIDS.has(item.role))
        return true;
      item.children = visit(item.children);
      if (item.children.length)
        return true;
      delete item.children;
      return item.role !== 'rowgroup';
    });
    return visit(kids);
  };
  // An element's children as they are rendered (the flat tree): a shadow host's shadow tree,
  // a <slot>'s assigned nodes (or its fallback content where nothing is assigned).
  // The open shadow roots the walk went into, where a component's modal dialog is drawn.
  const shadowRoots = new Set();
  function shownKids(el) {
    if (el.localName === 'slot')
      return el.assignedNodes({ flatten: true });
    if (el.shadowRoot)
      shadowRoots.add(el.shadowRoot);
    // A closed <details> draws its <summary> alone: text written straight inside it (not in
    // an element, whose own visibility says it is hidden) is not on the screen either.
    if (el.localName === 'details' && !el.open && !el.shadowRoot) {
      const summary = Array.from(el.children).find(kid => kid.localName === 'summary');
      return summary ? [summary] : [];
    }
    return el.shadowRoot ? el.shadowRoot.childNodes : el.childNodes;
  }
  // The element a node is rendered in, across shadow boundaries: what CSS inherits from.
  const flatParent = el => el.assignedSlot || el.parentElement || el.parentNode?.host || null;
  const rendered = el => (el.checkVisibility ? el.checkVisibility() : el.getClientRects().length > 0);
  // A box more than a pixel each way: a control drawn smaller (zero-size, or a screen
  // reader's 1 px square) is not what a person clicks.
  const hasBox = el => {
    const box = el.getBoundingClientRect();
    return box.width > 1 && box.height > 1;
  };
  // A pointer cursor an element sets for itself (not one it inherits from a link or button
  // around it) is how pages built on a framework's click listeners, which leave no attribute,
  // show a person that a plain element is clickable; Playwright MCP marks it [cursor=pointer].
  // A move or grab cursor shows one a person drags (Node-RED's palette nodes, made draggable by
  // jQuery UI, with no `draggable` attribute): read as text before, "inject debug complete …",
  // none of them could be named to drag onto the workspace. A crosshair shows where a person
  // starts a line (Node-RED's node ports, dragged from one to another to wire two nodes).
  const HAND = new Set(['pointer', 'move', 'grab', 'crosshair']);
  const ownPointer = (el, style) => HAND.has(style.cursor) &&
      !(flatParent(el) && el.ownerDocument.defaultView.getComputedStyle(flatParent(el)).cursor === style.cursor);
  // A checkbox or radio drawn with no box (zero-size, or a "visually hidden" 1 px square)
  // outside its labels: a person clicks a label for it, which draws it (MUI's Rating draws each
  // star as a label for a hidden radio).
  const boxlessControl = el => el.localName === 'input' && ['checkbox', 'radio'].includes(el.type) && !hasBox(el) &&
    !Array.from(el.labels || []).some(label => label.contains(el));
  const actionable = (el, style) => {
    if (!el.matches(ACTIONABLE) && !['button', 'link', 'checkbox', 'radio', 'textbox', 'searchbox', 'combobox'].includes(aria(el, 'role')) &&
        !ownPointer(el, style) && !(el.localName === 'label' && el.control && boxlessControl(el.control)))
      return false;
    const rect = el.getBoundingClientRect();
    return rect.width > 0 && rect.height > 0 && style.visibility === 'visible' && style.pointerEvents !== 'none' && !el.closest('[inert]');
  };

  // What an element hidden from screen readers (`aria-hidden`) contributes: nothing, unless it
  // is an icon a person clicks with no control around it to click instead. Quasar draws a
  // date field's calendar button so (`<i aria-hidden="true" class="cursor-pointer">
  // edit_calendar</i>`, its click opening the date picker), and it had no line, so a model
  // could not open the picker; it reads `generic "edit_calendar" [ref=e9]`, its icon font's
  // word, as Playwright's snapshot lists it. Its contents stay out.
  const hiddenIcon = (el, frame) => {
    const style = el.ownerDocument.defaultView.getComputedStyle(el);
    if (!ownPointer(el, style) || !actionable(el, style) || el.querySelector(ACTIONABLE) || el.parentElement?.closest(ACTIONABLE))
      return [];
    const box = el.getBoundingClientRect();
    if (box.width > ICON_MAX_PX || box.height > ICON_MAX_PX)
      return [];
    const name = flat(el.getAttribute('title') || el.textContent);
    const item = { role: 'generic', ...(name ? { name: clip(name, 100) } : {}), ref: refFor(el, frame), actionable: true };
    if (limits.boxes)
      item.box = boxOf(el);
    return [item];
  };

  let nodes = 0;
  let truncated = false;
  /** @returns {object[]} the nodes `node` contributes to its parent's children */
  const walk = (node, frame) => {
    if (truncated)
      return [];
    if (node.nodeType === Node.TEXT_NODE) {
      const raw = node.textContent.replace(UNSEEN, '');
      const text = flat(raw);
      // Whether the run touches its neighbours decides, when runs are merged, whether a space
      // goes between. A run of only white space is kept as a mark for that: the space between
      // `<span>fn</span> <span>main</span>` is what keeps it from reading `fnmain`.
      if (!text)
        return raw ? [SPACE] : [];
      return [{ text, [LEAD]: /^\s/.test(raw), [TRAIL]: /\s$/.test(raw) }];
    }
    if (node.nodeType !== Node.ELEMENT_NODE)
      return [];
    const el = node;
    if (SKIP.has(el.localName))
      return [];
    if (aria(el, 'aria-hidden') === 'true')
      return hiddenIcon(el, frame);
    // A line break parts the words on either side of it.
    if (el.localName === 'br')
      return [SPACE];
    if (++nodes > limits.maxNodes) {
      truncated = true;
      return [];
    }
    const view = el.ownerDocument.defaultView;
    const style = view.getComputedStyle(el);
    if (!rendered(el) && style.display !== 'contents' && !(fallbackDepth > 0 && style.display !== 'none'))
      return [];
    // An element its page marked `hidden` that CSS lays out all the same but draws transparent
    // is seen by nobody: Choices.js keeps the <select> it replaces so, under its own widget.
    // Listed, it read as a second, working "Assignee" control, and typing went into it unseen.
    if (el.hidden && style.opacity === '0' && el !== rootElement)
      return [];
    // So is a field clipped to nothing and taken out of the tab order: Tom Select keeps the
    // <select> it replaces so (`ts-hidden-accessible`, tabindex -1) and moves its label to its
    // own combobox. Listed, it read as a second, unnamed combobox with every option.
    // So is one with no room inside for text (0 px across within its border, or a 0 px font),
    // out of the tab order: ion.rangeSlider keeps the input it replaces so (Shiny's sliders),
    // read-only, and it read as a text field to type the year in.
    if (el !== rootElement && replacedField(el, style))
      return [];
    const children = () => {
      // A meter's or progress bar's content is what browsers without one show: Chrome draws
      // the bar, and the value is on the element's line.
      if (el.localName === 'meter' || el.localName === 'progress')
        return [];
      // A canvas's fallback content is read only when it is made for assistive technology
      // (a role, a table, a control): "Your browser does not support canvas" is for browsers
      // that draw nothing, and no person sees it.
      if (el.localName === 'canvas') {
        if (!el.querySelector(CANVAS_FALLBACK))
          return [];
        fallbackDepth += 1;
        try {
          return readKids();
        } finally {
          fallbackDepth -= 1;
        }
      }
      return readKids();
    };
    const readKids = () => {
      const out = [];
      const kids = shownKids(el);
      // Text in an element that is `visibility: hidden` is not seen (CodeMirror's measuring
      // "xxxxxxxxxx"); an element inside it may be visible again, so those are still walked.
      const unseen = style.visibility !== 'visible';
      // What its ::before and ::after draw is read where it is drawn (`generated`), but for
      // an empty editor's placeholder.
      const before = unseen ? '' : generated(el, '::before', true);
      const placeholder = before && blankEditor(el);
      if (before && !placeholder)
        out.push({ text: before, [LEAD]: true, [TRAIL]: true });
      for (const kid of kids) {
        if (!(unseen && kid.nodeType === Node.TEXT_NODE))
          out.push(...walk(kid, frame));
      }
      const after = unseen ? '' : generated(el, '::after', true);
      if (after && !blankEditor(el))
        out.push({ text: after, [LEAD]: true, [TRAIL]: true });
      // Adjacent text runs (split by inline elements without a role, or inline code) read as
      // one; white space between them (a SPACE mark) becomes one space.
      const merged = [];
      let spaced = false;
      for (const item of out) {
        const last = merged[merged.length - 1];
        if (item === SPACE) {
          if (last && last.role === undefined)
            last[TRAIL] = true;
          else
            spaced = true;
          continue;
        }
        const apart = last?.[TOP] !== undefined && item[TOP] !== undefined && Math.abs(last[TOP] - item[TOP]) > 2;
        if (item.role === undefined && last && last.role === undefined && !apart) {
          last.text += last[TRAIL] || item[LEAD] ? ` ${item.text}` : item.text;
          last[TRAIL] = item[TRAIL];
        } else {
          merged.push(spaced && item.role === undefined ? { ...item, [LEAD]: true } : item);
        }
        spaced = false;
      }
      // White space that ended up alone (`<i> </i>`) still separates the text around it.
      if (merged.length === 0 && (spaced || out.includes(SPACE)))
        return [SPACE];
      return merged;
    };
    // The children of text that names `named` (a label, a caption, an aria-labelledby target),
    // whose own line says that name: the text the name already says is left out.
    const saidBy = (named, namedRole) => {
      const [name] = nameOf(named, namedRole);
      return children().filter(kid => kid.role !== undefined || kid === SPACE || !name.includes(kid.text));
    };
    const explicitRole = flat(aria(el, 'role')).split(' ')[0];
    let role = explicitRole || implicitRole(el);
    if (role === 'presentation')
      role = 'none';
    const root = el === rootElement;
    const canAct = actionable(el, style);
    // Inline code inside running text is part of the sentence: `Vec<T>` reads better, and far
    // shorter, as text than as a node of its own (a model has no use for naming it).
    if (role === 'code' && !explicitRole && !canAct && !root && el.localName === 'code' && !el.closest('pre')
        && !el.querySelector('a[href],button,input,select,textarea')) {
      const text = flat(el.textContent);
      return text ? [{ text: `\`${text}\``, [LEAD]: false, [TRAIL]: false }] : [];
    }
    // A generic element is shown only when a person can act on it, when it is labelled
    // (aria-label, aria-labelledby: its author named it), or as the root of a subtree snapshot.
    const labelled = aria(el, 'aria-label') !== null || el.hasAttribute('aria-labelledby');
    // An icon drawn as an <svg> with no name (TinyMCE's toolbar, most apps' buttons) says
    // nothing the element around it does not, and Playwright's snapshot leaves it out; one
    // large enough to be a chart or a diagram keeps its line and ref, to screenshot or read.
    if (el.localName === 'svg' && !explicitRole && !labelled && !canAct && !root && !nameOf(el, 'img')[0]) {
      const box = el.getBoundingClientRect();
      if (box.width * box.height <= ICON_MAX_PX * ICON_MAX_PX)
        return [];
    }
    // A canvas a few pixels wide draws nothing a person sees (a page's measuring canvas).
    if (role === 'canvas' && !explicitRole && !labelled && !canAct && !root) {
      const box = el.getBoundingClientRect();
      if (box.width < 8 || box.height < 8)
        return [];
    }
    // A <label> gives its control its name, and a click on it is a click on the control, so
    // the control's own line says both: the label is not a line of its own (rustdoc's
    // settings read every choice twice, `generic "dark"` around `radio "dark"`). Its text is
    // left out where the control's name already says it. A label whose control is not
    // rendered (a CSS-only toggle hides its box), or is drawn elsewhere with no box to click
    // (Material for MkDocs' palette switch: a zero-size radio, and an icon in a label for it
    // further on), is what a person clicks, and stays.
    if (el.localName === 'label' && el.control && rendered(el.control) && (hasBox(el.control) || el.contains(el.control)) &&
        !replacedField(el.control, view.getComputedStyle(el.control)) &&
        !explicitRole && !labelled && !root)
      return saidBy(el.control, implicitRole(el.control));
    // So is a fieldset's <legend>, a table's <caption> and a figure's <figcaption>: each names
    // the element around it, whose line says it (`group "Plan"`, `table "Prices"`).
    const caption = CAPTIONS[el.localName];
    if (caption && el.parentElement?.localName === caption && !explicitRole && !canAct && !labelled && !root)
      return saidBy(el.parentElement, roleOf(el.parentElement));
    // Text another element names itself by (`aria-labelledby`: a component's own label,
    // Shoelace's `<label id="label">` for the combobox it draws) is said on that element's
    // line, as a <label>'s is: left out where the name says it. Shown, it ran into the text
    // before it ("We never share it Plan").
    const namesOther = (role === 'generic' || role === 'none') && el.id && !explicitRole && !canAct && !labelled && !root
      ? labelledByThis(el) : null;
    if (namesOther)
      return saidBy(namesOther, roleOf(namesOther));
    if ((role === 'generic' || role === 'none') && !canAct && !labelled && !root) {
      const out = children();
      // A form-associated component a <label> names (`<label><ds-switch></ds-switch> Notify
      // me</label>`) passes that name on to the one unnamed control it draws.
      const labels = el.localName.includes('-') ? labelsOf(el) : [];
      const controls = labels.length ? out.filter(kid => kid.ref) : [];
      if (controls.length === 1 && !controls[0].name) {
        controls[0].name = labelsName(labels, el);
        controls[0].labelled = true;
      }
      // A box of its own (a block, a flex or grid item) is apart from the text around it on
      // the screen, so it is in the outline too: a framework's `<div>Mouse</div><div>$25</div>`,
      // written with no white space between, reads "Mouse $25", not "Mouse$25".
      if (!style.display.startsWith('inline') && style.display !== 'contents') {
        const [first, last] = [out.find(kid => kid !== SPACE), out.findLast(kid => kid !== SPACE)];
        if (first && first.role === undefined)
          first[LEAD] = true;
        if (last && last.role === undefined)
          last[TRAIL] = true;
        // A cell a virtualized grid places itself (react-virtualized's, in MLflow's run
        // comparison: `div`s with no role, each at its row's height) read all its rows as one
        // line, "1.122 0.79 0.061 0.142"; each row's cells now make a line of their own.
        if (style.position === 'absolute' && first === last && first && first.role === undefined)
          first[TOP] = el.getBoundingClientRect().top;
      }
      return out;
    }
    if (style.visibility !== 'visible' && !canAct && !root)
      return children();
    // An element its page says has no role (`role="presentation"`: a grid library's wrappers)
    // that is shown all the same, since a person can act on it or it is labelled, is a plain
    // box: `generic`, as Chrome exposes it. "none" is no role a locator or a model can use.
    if (role === 'none')
      role = 'generic';
    // Every element shown gets a ref, so whatever a model reads it can also name (a drop
    // zone, a region to read, an image to screenshot). But a checkbox or radio drawn with no
    // box (zero-size, a 1 px square) outside its labels cannot be clicked: what a person
    // clicks is a label for it (a line of its own then, above) or the page's own box beside
    // it, and its line says its state only, as in Playwright's snapshot. (One inside its
    // label is clicked through the label, as a design system draws it: it keeps its ref.)
    // A locator that names it (getByRole('radio', { name: '4 Stars' })) names the label a
    // snapshot gave a ref (`byLabel`).
    const boxless = boxlessControl(el);
    const ref = boxless && !root ? undefined : refFor(el, frame);
    const item = { role };
    if (boxless && !root) {
      const label = Array.from(el.labels || []).map(one => registry.refOf.get(one)).find(one => one && registry.byRef.get(one)?.deref());
      if (label)
        item.byLabel = label;
    }
    if (role === 'row' && el.hasAttribute('aria-rowindex')) {
      rowIndexOf.set(item, el.getAttribute('aria-rowindex'));
      indexedRows += 1;
    }
    const [name, nameFromContent, fromLabel] = nameOf(el, role);
    // Not printed: getByLabel finds any element a label names, as Playwright's does.
    if (fromLabel)
      item.labelled = true;
    if (name)
      item.name = name;
    else if (role === 'combobox' || role === 'listbox') {
      // A widget that replaces a labelled field it keeps hidden inside (Choices.js's
      // `<label for="who">Assignee</label>`, still the hidden <select>'s) is what that label
      // names for a person.
      const replaced = el.querySelector('select[hidden], input[hidden]');
      const labels = replaced ? labelsOf(replaced) : [];
      if (labels.length) {
        item.name = labelsName(labels, replaced);
        item.labelled = true;
      }
    } else if (NAME_FROM_CONTENT.has(role) && !el.matches('input, select, textarea')) {
      // Content that is only pictures (a logo link, an icon button) names the element too.
      // The outline shows that name on the pictures, as Playwright's does, so it is not
      // printed; a locator still finds the element by it (getByRole('link', { name: 'Home' })).
      const pictures = Array.from(el.querySelectorAll('img[alt], [aria-label], svg title'), picture =>
        flat(picture.getAttribute('alt') ?? picture.getAttribute('aria-label') ?? picture.textContent)).filter(Boolean);
      if (pictures.length)
        item.altName = clip(pictures.slice(0, 5).join(' '), 100);
      else {
        // An icon drawn by CSS names the element by its title, as Chrome reads a name from
        // content (Django admin's calendar link, `<span class="date-icon" title="Choose a
        // Date">`, read as a bare `link`): printed, as no line of its own says it.
        const titled = flat(Array.from(el.querySelectorAll('[title]'), icon => icon.getAttribute('title')).slice(0, 5).join(' '));
        if (titled)
          item.name = clip(titled, 100);
        else if (ICON_ROLES.has(role)) {
          const icon = iconOf(el);
          if (icon)
            item.icon = icon;
        }
      }
    }
    // What a field shows while empty: Playwright's snapshot prints it under the field when it
    // is not the field's name, and getByPlaceholder finds the field by it.
    const placeholder = el.matches('input, textarea') ? flat(el.getAttribute('placeholder'))
      : el.hasAttribute('contenteditable') && blankEditor(el) ? drawnPlaceholder(el) : '';
    if (placeholder)
      item.placeholder = clip(placeholder, 100);
    if (ref)
      item.ref = ref;
    if (limits.boxes)
      item.box = boxOf(el);
    if (canAct)
      item.actionable = true;
    const states = [];
    if (item.icon)
      states.push(`icon=${item.icon}`);
    if (el.disabled || aria(el, 'aria-disabled') === 'true')
      states.push('disabled');
    if (el.checked === true || aria(el, 'aria-checked') === 'true')
      states.push('checked');
    if (aria(el, 'aria-checked') === 'mixed' || el.indeterminate === true)
      states.push('checked=mixed');
    if ((role === 'option' && el.selected === true) || (SELECTABLE.has(role) && aria(el, 'aria-selected') === 'true'))
      states.push('selected');
    if (aria(el, 'aria-expanded'))
      states.push(`expanded=${aria(el, 'aria-expanded')}`);
    else if (el.localName === 'details')
      states.push(`expanded=${el.open}`);
    // A button that opens a popover (`popovertarget`) says whether it is open, as Chrome does.
    else if (el.popoverTargetElement)
      states.push(`expanded=${el.popoverTargetElement.matches(':popover-open')}`);
    if (aria(el, 'aria-pressed'))
      states.push(`pressed=${aria(el, 'aria-pressed')}`);
    // Whether a player plays: what a model's click on it did.
    if ((role === 'video' || role === 'audio') && !el.paused)
      states.push('playing');
    if (el.required)
      states.push('required');
    if (isFocused(el))
      states.push('active');
    if (role === 'heading')
      states.push(`level=${/^h[1-6]$/.test(el.localName) ? el.localName[1] : aria(el, 'aria-level') || 2}`);
    // A grid that draws only the rows in view (AG Grid's 500 rows, 16 drawn) says how many it
    // has, so a model does not take the rows it reads for all of them.
    if (role === 'grid' || role === 'table' || role === 'treegrid') {
      const rows = parseInt(aria(el, 'aria-rowcount') ?? '', 10);
      if (rows > 0)
        states.push(`rowcount=${rows}`);
    }
    if (states.length)
      item.states = states;
    if (el.localName === 'select') {
      const chosen = Array.from(el.selectedOptions, o => flat(o.label || o.textContent));
      if (role === 'combobox' && chosen.length)
        item.value = clip(chosen[0], 100);
    } else if (['textbox', 'searchbox', 'spinbutton', 'slider', 'combobox'].includes(role)) {
      // An editable element's text is its children, printed below it, not a value again: a
      // rich-text editor's document would otherwise be read twice.
      const raw = 'value' in el && typeof el.value === 'string' ? el.value : '';
      // Never put a password into a model's context; say only that one is there.
      if (raw && el.type === 'password')
        item.value = '••••••';
      // A text area's lines stay lines (an address, a message typed in); a field has one.
      else if (raw && el.localName === 'textarea')
        item.value = clip(raw.replace(/[^\S\n]+$/gm, '').replace(/^\n+|\s+$/g, ''), 200);
      else if (raw)
        item.value = clip(raw.replace(/\s+/g, ' '), 200);
    }
    // A value a person reads off a bar or a knob the page drew itself (an upload's progress, a
    // custom slider): its words (aria-valuetext), else its number, a progress as a percentage.
    if (item.value === undefined && ['progressbar', 'meter', 'slider', 'spinbutton'].includes(role)) {
      const words = flat(aria(el, 'aria-valuetext'));
      const native = el.localName === 'progress' || el.localName === 'meter';
      const now = native ? (el.localName === 'progress' && el.position === -1 ? NaN : el.value) : parseFloat(aria(el, 'aria-valuenow'));
      const low = native && el.localName === 'meter' ? el.min : parseFloat(aria(el, 'aria-valuemin') ?? '0');
      const high = native ? el.max : parseFloat(aria(el, 'aria-valuemax') ?? '100');
      if (words)
        item.value = clip(words, 100);
      else if (role === 'progressbar' && Number.isFinite(now) && high > low)
        item.value = `${Math.round(((now - low) / (high - low)) * 100)}%`;
      else if (Number.isFinite(now))
        item.value = String(now);
    }
    // A bare `#` goes nowhere (a script acts on the click: Django admin's calendar days, a
    // menu's toggles): its line would say nothing the role does not.
    if (role === 'link' && el.getAttribute('href') && el.getAttribute('href') !== '#')
      item.url = clip(el.getAttribute('href'), 200);
    if (role === 'iframe') {
      let inner = null;
      try {
        inner = el.contentDocument;
      } catch {
        inner = null;
      }
      if (limits.frame !== undefined) {
        // Inside a frame of another origin (read in its own world): frames are numbered by
        // the top document's world alone, so one more level is not walked.
        item.note = 'a frame inside a frame of another origin: its content is not in this snapshot';
      } else if (inner && inner.documentElement) {
        const number = frameNumber(el);
        item.children = walk(inner.body || inner.documentElement, number);
      } else {
        // Read by the extension in the frame's own world, where it can (other-frames.js).
        item.note = 'cross-origin frame: its content is not in this snapshot';
        item.otherOrigin = frameNumber(el);
      }
      return [item];
    }
    if (el.localName === 'select') {
      // A closed drop-down renders no option boxes, so they are listed from the element. A
      // list box (multiple, or a size above 1) shows its options as boxes a person clicks,
      // so those get refs, as Playwright MCP gives them.
      const options = Array.from(el.options);
      const boxes = role === 'listbox';
      item.children = options.slice(0, MAX_OPTIONS).map(o => ({
        role: 'option', name: clip(flat(o.label || o.textContent), 100),
        ...(boxes ? { ref: refFor(o, frame), ...(o.disabled ? {} : { actionable: true }) } : {}),
        ...(o.selected ? { states: ['selected'] } : {}),
      }));
      if (options.length > MAX_OPTIONS)
        item.children.push({ text: `… ${options.length - MAX_OPTIONS} more options` });
      return [item];
    }
    // A text area's text is its value; a player's content (sources, tracks, words for a
    // browser without one) is not shown.
    const rowsBefore = indexedRows;
    let kids = ['textarea', 'video', 'audio'].includes(el.localName) ? [] : children().filter(kid => kid !== SPACE);
    if (GRIDS.has(role) && indexedRows - rowsBefore > 1)
      kids = joinSplitRows(kids);
    // A knob's or a date segment's text is the value its line already says (React Aria's date
    // field: `spinbutton "month, Delivery date": 12 – December` above a line `text: 12`).
    if (VALUED.has(role) && item.value !== undefined) {
      const said = item.value.toLowerCase();
      kids = kids.filter(kid => kid.role !== undefined || !said.includes(kid.text.toLowerCase()));
    }
    // An empty output box (a `<pre>` a page fills later, a live region with nothing to say yet)
    // says nothing; it has a line once it has content.
    if (EMPTY_SAYS_NOTHING.has(role) && !kids.length && !item.name && item.value === undefined && !canAct && !labelled && !root)
      return [];
    // A clickable box around one element that has a line of its own (a web component's host
    // around its <button>, a `div[onclick]` around a link) says nothing that element does not:
    // the element stands in its place, as Playwright's snapshot unwraps such a box.
    // A name a label gave the box (a form-associated component, `<label><md-checkbox>
    // Gift wrap</label>`) goes to an unnamed element inside, which is what a person reads it on;
    // a component that passes its own `aria-label` on to its inner element says it once.
    // A box a person drags (draggable) stays: what is inside it would be dragged alone.
    if (role === 'generic' && !root && kids.length === 1 && kids[0].ref && el.getAttribute('draggable') !== 'true') {
      if (!item.name || nameFromContent || kids[0].name === item.name)
        return kids;
      if (!kids[0].name) {
        kids[0].name = item.name;
        if (fromLabel)
          kids[0].labelled = true;
        return kids;
      }
    }
    // A slider's thumb (the knob inside it that takes the focus: Quasar's, MUI's) says nothing
    // the slider's own line, with its value, does not.
    if (role === 'slider')
      kids = kids.filter(kid => !(kid.role === 'generic' && !kid.name && !kid.children));
    // A plain box inside a named element that only says the name again (the `<div>` that draws
    // a tab called "General" inside it) is left out, as Playwright leaves it out.
    if (item.name)
      kids = kids.filter(kid => !(kid.role === 'generic' && kid.name === item.name && !kid.children && !kid.states));
    // A block of code keeps its lines: flattened, a `// comment` swallows the code after it
    // and a model cannot tell where a statement ends (Playwright's snapshot flattens it).
    // Links in it (rustdoc's declarations link their types) follow its text, to be named.
    // So does a code editor's text (CodeMirror's line divs): a textbox the page edits itself,
    // whose lines its style keeps.
    // Monaco (VS Code's editor) draws its lines apart from the element that takes the typing
    // (an EditContext's `<div>`, a 1×1 text area before) and hides them from assistive
    // technology: its textbox read as empty. The lines it shows are the editor's text, said
    // with the lines shown when it scrolls.
    if (role === 'textbox' && (el.classList.contains('native-edit-context') || el.classList.contains('inputarea'))) {
      const shown = monacoLines(el);
      if (shown) {
        delete item.value;
        item.children = [{ text: shown }];
        return [item];
      }
    }
    if (role === 'textbox' && el.isContentEditable && kids.length && kids.every(kid => kid.role === undefined)) {
      const lines = codeLines(el, style);
      if (lines) {
        item.children = [{ text: lines }];
        return [item];
      }
    }
    if (role === 'code') {
      const inner = kids.length === 1 && kids[0].role === 'code' ? kids[0].children || [] : kids;
      const lines = inner.every(kid => kid.role === undefined || kid.role === 'link') ? codeLines(el, style) : null;
      if (lines) {
        item.children = [{ text: lines }, ...inner.filter(kid => kid.role !== undefined)];
        return [item];
      }
    }
    // <pre><code>…</code></pre> is one block of code, not a code inside a code.
    if (role === 'code' && kids.length === 1 && kids[0].role === 'code') {
      item.children = kids[0].children;
      return [item];
    }
    // A <pre> around its <code> and the page's own controls (Node's "copy" button, mdbook's
    // play button) is a wrapper, as Playwright reads a <pre> (generic): the code and the
    // controls are read where they are, not as a code inside a code.
    if (role === 'code' && !explicitRole && el.localName === 'pre' && !canAct && !labelled &&
        kids.some(kid => kid.role === 'code') && kids.some(kid => kid.role !== undefined && kid.role !== 'code'))
      return kids;
    // A plain box's name from content says again what the elements in it say (a component's
    // host around its combobox and its options: `generic "Shipping Standard Express"`).
    // So does a cell's or a header's whose content has a named line of its own (a link, a
    // button): `cell "adduser"` over `link "adduser"` says the package's name twice, and
    // Playwright's snapshot leaves the cell unnamed.
    if (nameFromContent && (kids.some(kid => BLOCKS.has(kid.role)) ||
        (role === 'generic' && kids.some(kid => kid.role !== undefined)) ||
        (TABLE_CELLS.has(role) && kids.some(kid => kid.role !== undefined && (kid.name || kid.value !== undefined))))) {
      // Not printed, but still its accessible name: getByRole('button', { name: 'Place
      // order' }) finds Streamlit's button, whose words are a paragraph inside it.
      item.altName = item.name;
      delete item.name;
      // An open tree item's own label comes before its branch: that is its name, as
      // Playwright's snapshot reads it (`treeitem "src"`, not a nameless item).
      const label = role === 'treeitem' ? kids.findIndex(kid => kid.role !== undefined) : 0;
      if (label > 0) {
        item.name = clip(flat(kids.slice(0, label).map(kid => kid.text).join(' ')), 100);
        kids = kids.slice(label);
      }
    }
    // Text already read as the name is not repeated below. A name its author gave
    // (aria-label: a teaser labelled "Search result", a cell labelled "Price") is not what
    // the element shows, so its text stays, unless the name already says it (a button named
    // by its list's label and itself, `aria-labelledby`: "Box size Small", showing "Small").
    else if (item.name && NAME_FROM_CONTENT.has(role) &&
        (nameFromContent || item.name.includes(flat(kids.map(kid => kid.role === undefined ? kid.text : '').join(' ')))))
      kids = kids.filter(kid => kid.role !== undefined);
    if (kids.length)
      item.children = kids;
    return [item];
  };
  let tree;
  // In a frame of another origin's own world, `limits.frame` is its number in the top
  // document's (its refs are f<frame>e<n>).
  const own = limits.frame ?? 0;
  if (rootElement) {
    // A subtree: its frame is the one its document belongs to (0 for the top document).
    let frame = own;
    const host = rootElement.ownerDocument.defaultView.frameElement;
    if (host && rootElement.ownerDocument !== document)
      frame = frameNumber(host);
    tree = walk(rootElement, frame);
  } else {
    const top = document.body || document.documentElement;
    tree = top ? walk(top, own) : [];
  }
  // The whitespace marks served the merging of text runs only. Each ref's role, name, holder
  // and place among its holder's elements of that role and name are noted on the way
  // (`registry.about`); a subtree's root keeps the holder and place it had.
  const nth = new Map();
  const strip = (items, holder) => {
    const kept = items.filter(item => item !== SPACE);
    for (const item of kept) {
      delete item[LEAD];
      delete item[TRAIL];
      delete item[TOP];
      if (item.ref) {
        const name = item.name ?? item.altName ?? '';
        const before = registry.about.get(item.ref);
        const key = `${holder}\n${item.role}\n${name}`;
        const place = holder === undefined && rootElement && before ? before[3] : nth.get(key) ?? 0;
        nth.set(key, place + 1);
        registry.about.set(item.ref, [item.role, name, holder ?? before?.[2], place]);
      }
      if (item.children)
        item.children = strip(item.children, item.ref ?? holder);
    }
    return kept;
  };
  tree = strip(tree);
  // An open modal dialog leaves the rest of the page inert: said first, a model reading a long
  // page in parts knows at once where it can act.
  // A page's own modal (`aria-modal`, over a backdrop: Bootstrap's) counts as one too, and so
  // does a component's, in its shadow root (Shoelace's dialog, Material's).
  const roots = [document, ...shadowRoots];
  const modal = rootElement ? null : roots.map(root => root.querySelector(':modal')).find(Boolean) ||
    roots.flatMap(root => Array.from(root.querySelectorAll('[aria-modal=true]'))).find(el => el.checkVisibility());
  const modalRef = modal ? registry.refOf.get(modal) : undefined;
  return {
    url: location.href, title: document.title, tree,
    ...(truncated ? { nodesTruncated: limits.maxNodes } : {}),
    ...(modal ? { modal: { ...(modalRef ? { ref: modalRef } : {}), name: nameOf(modal, 'dialog')[0] } } : {}),
  };
}

/**
 * The tree as outline text, one node a line, children indented two spaces.
 *
 * @param {object[]} tree from {@link captureTree}
 * @param {{depth?: number, interactive?: boolean}} [options] `depth` keeps that
 *   many levels (1 = the top level only) and says how much it left out below;
 *   `interactive` keeps only what has a ref (and the frames holding such
 *   elements), flattening the rest
 * @returns {string}
 */
export function formatOutline(tree, options = {}) {
  const { depth = Infinity, interactive = false } = options;
  const lines = [];
  const shown = interactive ? onlyInteractive(tree) : tree;
  // Text of several lines (a code block) is a YAML literal block below its line, each line
  // indented under it, so a reader (and browser_find, which goes by indentation) sees whose
  // lines they are.
  const withText = (line, text, indent) => {
    // A one-line text that reads as a block's start (a breadcrumb's lone `|`) is quoted.
    if (!text.includes('\n'))
      return [`${line}: ${/^[|>][-+\d]*$/.test(text) ? JSON.stringify(text) : text}`];
    const under = `${indent}    `;
    return [`${line}: |`, ...text.split('\n').map(row => (row ? `${under}${row}` : ''))];
  };
  const emit = (items, level) => {
    const indent = '  '.repeat(level);
    for (const item of items) {
      if (item.role === undefined) {
        lines.push(...withText(`${indent}- text`, item.text, indent));
        continue;
      }
      let line = `${indent}- ${item.role}`;
      const kids = item.children || [];
      // A name its one child says on the next line is not said twice: rustdoc's headings are
      // each a link of the same words (`- heading [ref=e7] [level=2]:` over `- link "Vec"`),
      // as Playwright MCP prints them; unless the child is past the depth shown.
      const saidBelow = kids.length === 1 && kids[0].role !== undefined && kids[0].name === item.name && level + 1 < depth;
      if (item.name && !saidBelow)
        line += ` ${JSON.stringify(item.name)}`;
      if (item.ref)
        line += ` [ref=${item.ref}]`;
      for (const state of item.states || [])
        line += ` [${state}]`;
      if (item.box)
        line += ` [box=${item.box.join(',')}]`;
      // Properties of the element's own line, printed below it: a link's URL, a field's
      // placeholder (where it is not the field's name), a note.
      const props = [
        item.url && `/url: ${item.url}`,
        item.placeholder !== undefined && item.placeholder !== item.name && `/placeholder: ${item.placeholder}`,
        item.note && `note: ${item.note}`,
      ].filter(Boolean);
      const onlyText = kids.length === 1 && kids[0].role === undefined && item.value === undefined && props.length === 0;
      if (onlyText) {
        lines.push(...withText(line, kids[0].text, indent));
        continue;
      }
      // A value of several lines (a text area's) is a literal block, as a code block's text.
      const block = item.value !== undefined && item.value.includes('\n');
      if (item.value !== undefined && !block)
        line += `: ${item.value}`;
      const more = kids.length > 0 || props.length > 0;
      if (!more) {
        lines.push(...(block ? withText(line, item.value, indent) : [line]));
        continue;
      }
      // A link's URL (or a note) is a property of its line, not a node below: a link at the
      // cut keeps it, rather than saying "0 more below".
      if (level + 1 >= depth && kids.length > 0) {
        lines.push(`${line} [${countNodes(kids)} more below: raise depth to see them]`);
        continue;
      }
      lines.push(...(block ? withText(line, item.value, indent) : [item.value === undefined ? `${line}:` : line]));
      for (const prop of props)
        lines.push(`${indent}  - ${prop}`);
      emit(kids, level + 1);
    }
  };
  emit(shown, 0);
  return lines.join('\n');
}

/** @param {object[]} items */
function countNodes(items) {
  let n = 0;
  for (const item of items)
    n += 1 + countNodes(item.children || []);
  return n;
}

/**
 * Only the nodes a person can act on (`actionable`), and iframes (so a frame's refs keep their
 * context); everything else gives way to its children. Names and values stay,
 * text goes.
 *
 * @param {object[]} items
 * @returns {object[]}
 */
export function onlyInteractive(items) {
  const out = [];
  for (const item of items) {
    if (item.role === undefined)
      continue;
    const kids = onlyInteractive(item.children || []);
    if (item.actionable || item.role === 'iframe') {
      const { children, ...rest } = item;
      // A control with no name that holds one of its own role that has one, and that this
      // view leaves out (it takes no clicks itself), is known by that name: Vuetify's select
      // is a nameless combobox around its input, the combobox its label names, and read
      // `combobox [ref=e74]` here.
      if (!rest.name && !rest.altName && !rest.icon) {
        const inner = namedBelow(children || [], rest.role);
        if (inner && !kids.some(kid => kid.ref === inner.ref))
          rest.name = inner.name;
      }
      // One whose name comes from content this view leaves out (its own words, or blocks
      // that take no clicks) says that name: Grid.js's sortable header read `columnheader
      // [ref=e81]: button "Sort column ascending"`, which column unsaid, and a button whose
      // words are a paragraph inside it read as a bare `button`.
      if (!rest.name && rest.altName && ((children || []).some(kid => kid.role === undefined && kid.text) ||
          !kids.some(kid => kid.name || kid.altName))) {
        rest.name = rest.altName;
        delete rest.altName;
      }
      out.push(kids.length ? { ...rest, children: kids } : rest);
    } else {
      out.push(...kids);
    }
  }
  return out;
}

/** The one element of `role` with a name below `items`, if exactly one has one. */
function namedBelow(items, role) {
  const found = [];
  const walk = nodes => {
    for (const node of nodes) {
      if (node.role === role && node.name)
        found.push(node);
      walk(node.children || []);
    }
  };
  walk(items);
  return found.length === 1 ? found[0] : null;
}

/**
 * The first lines of `text` that fit in `maxChars` (whole lines, so no ref is
 * cut in half), and how many were left out.
 *
 * @param {string} text
 * @param {number} maxChars
 * @returns {{text: string, cut: boolean, shownLines: number, totalLines: number}}
 */
export function cutLines(text, maxChars) {
  const lines = text === '' ? [] : text.split('\n');
  if (text.length <= maxChars)
    return { text, cut: false, shownLines: lines.length, totalLines: lines.length };
  let size = 0;
  let shown = 0;
  while (shown < lines.length && size + lines[shown].length + (shown ? 1 : 0) <= maxChars) {
    size += lines[shown].length + (shown ? 1 : 0);
    shown++;
  }
  return { text: lines.slice(0, shown).join('\n'), cut: true, shownLines: shown, totalLines: lines.length };
}
