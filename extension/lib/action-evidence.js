/**
 * What a person would see an action cause that a model, reading only the action's answer,
 * would not: the browser's own form check stopping a submit (a bubble over the field, which
 * is in no outline and changes nothing in the DOM), a message the page announces to
 * assistive technology (`role=alert`, `role=status`, `aria-live`, `<output>`: the "Username is
 * required" or "Saved" a page shows), and a field the page newly marks invalid
 * (`aria-invalid`). Without them a click on a form that did not go anywhere answers
 * `clicked: true`, and the model believes it was sent.
 *
 * `watchAction` runs in the tab's page before the action and `actionEvidence` after it; both
 * are shipped as source (page-scripts.js `pageExpression`), so each is self-contained. What the
 * first keeps between the two sits on the page's global object under a symbol, as the ref
 * registry does, and so do the functions that name what was open, which the second calls; a
 * navigation in between leaves nothing to report, and the page's URL then says what happened. Only the top document is watched (with, for what opens and closes, the
 * open shadow roots of its components): a form inside a frame checks itself where the top
 * document cannot hear it.
 */

/**
 * The elements whose text a page announces: alerts, statuses and what is marked live. Handed
 * to both page functions below, which are shipped as source and cannot share a constant.
 */
export const LIVE_REGIONS = '[role=alert],[role=status],[aria-live=assertive],[aria-live=polite],output';

/**
 * What an action can open that a model then acts in: dialogs, menus, the list of a combobox,
 * popovers. One that is shown after the action and was not before is said (`opened`), so a
 * click that opened a modal or a menu says so without a snapshot.
 */
export const OPENABLE = 'dialog,[role=dialog],[role=alertdialog],[aria-modal=true],[role=menu],[role=listbox],[popover]';

/**
 * Before an action: where the page is (as page-scripts.js `pageState`), and the watchers
 * `actionEvidence` reads.
 *
 * @param {string} live {@link LIVE_REGIONS}
 * @param {string} openable {@link OPENABLE}
 */
export function watchAction(live, openable) {
  // The controls whose state a person sees change (see actionEvidence's `changed`), and at
  // most how many are kept (a page of a thousand checkboxes is read in well under a ms).
  // What a person types into or sets: the fields an answer names (actionEvidence's `fields`).
  const FIELDS = 'input:not([type=hidden],[type=submit],[type=button],[type=reset],[type=image]), textarea, select, ' +
    '[contenteditable]:not([contenteditable=false]), [role=textbox], [role=searchbox], [role=combobox], [role=spinbutton], [role=slider]';
  const CONTROLS = 'input, select, textarea, [role=checkbox], [role=switch], [role=radio], [role=menuitemcheckbox], ' +
    '[role=menuitemradio], [role=spinbutton], [role=slider], [role=tab], [aria-pressed], th, [role=columnheader]';
  const MOST_CONTROLS = 2000;
  // A class that says its element is open or shown (`open`, `show`, `is-open`,
  // `mdc-menu-surface--open`, `visible`).
  const OPEN_CLASS = /(?:^|[-_])(?:open|opened|show|shown|visible|expanded)$/i;
  // What a list or table holds one of: what `listed` counts.
  const ITEMS = 'tr, li, [role=row], [role=listitem], [role=option], [role=treeitem], [role=article]';
  // The controls a person can find greyed out: whether each takes input is watched too, so
  // that a click or a key that lets one be used (Trac's "resolve as" radio enables the
  // resolution drop-down beside it; a form's Submit waits for a required field) or stops one
  // being used is said (actionEvidence's `changed`, `now enabled`).
  const ABLE = 'button, input:not([type=hidden]), select, textarea, [role=button], [role=checkbox], [role=radio], ' +
    '[role=switch], [role=combobox], [role=textbox], [role=menuitem], [role=tab], [role=option], [role=slider], ' +
    '[role=spinbutton], [role=link]';
  const key = Symbol.for('mcp-relay.watch');
  const earlier = window[key];
  if (earlier) {
    for (const [type, listener] of earlier.listeners)
      document.removeEventListener(type, listener, true);
    earlier.added?.disconnect();
  }
  // The text an announced element shows, as a screen reader reads it out: without what is
  // hidden from it (Quasar's notification says `check_circle Ordered…`, its icon font's word
  // before the message).
  const shown = el => {
    if (!el.isConnected || !el.checkVisibility())
      return '';
    // A component's part shows what the page slotted into it, which its innerText leaves out
    // (Shoelace's alert read "l for Ada", not "Ordered l for Ada").
    if (drawsSlotted(el))
      return drawnText(el);
    // Buttons and tabs side by side are boxes apart, which innerText runs together
    // (TiddlyWiki's control panel read "InfoAppearanceSettingsSaving").
    if (el.querySelector('button, [role=tab], [role=button]'))
      return drawnText(el);
    // An SVG element has no innerText (Swagger UI's live region is one): its text is read.
    return el.querySelector('[aria-hidden=true]') || el.innerText === undefined ? shownWords(el).replace(/\s+/g, ' ').trim() : el.innerText.trim();
  };
  // Whether `el` draws words that are not its own children: a shadow root's, a slot's.
  const drawsSlotted = el => Boolean(el.shadowRoot || el.querySelector('slot'));
  // The words of `el` as they are drawn (the flat tree: a component's shadow root, what the
  // page slotted into it), shown ones only, not what is hidden from screen readers, a block's
  // apart from the next (as innerText reads them), up to about 400 characters.
  function drawnText(el) {
    let words = '';
    const visit = node => {
      if (words.length > 400)
        return;
      if (node.nodeType === Node.TEXT_NODE) {
        if (node.parentElement?.checkVisibility())
          words += node.data;
        return;
      }
      if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE)
        return;
      if (node.nodeType === Node.ELEMENT_NODE && (node.getAttribute('aria-hidden') === 'true' || ['style', 'script', 'template', 'textarea', 'datalist'].includes(node.localName)))
        return;
      // A drop-down draws the option chosen, not its list.
      if (node.localName === 'select') {
        words += ` ${[...node.selectedOptions].map(option => option.label).join(', ')} `;
        return;
      }
      // (An inline box, a button, is apart from its neighbours as a block is.)
      const display = node.nodeType === Node.ELEMENT_NODE && node.localName !== 'slot' ? getComputedStyle(node).display : 'inline';
      const block = node.localName === 'br' || !display.startsWith('inline') || /^inline-(block|flex|grid|table)$/.test(display);
      if (block)
        words += ' ';
      const slotted = node.localName === 'slot' ? node.assignedNodes({ flatten: true }) : [];
      for (const kid of slotted.length ? slotted : node.shadowRoot ? node.shadowRoot.childNodes : node.childNodes)
        visit(kid);
      if (block)
        words += ' ';
    };
    visit(el);
    return words.replace(/\s+/g, ' ').trim();
  }
  // The text of `el` a person sees and a screen reader says, a text node a word apart, up to
  // about `most` characters.
  function shownWords(el, most = Infinity) {
    let words = '';
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    while (words.length < most && walker.nextNode()) {
      const parent = walker.currentNode.parentElement;
      if (parent?.checkVisibility() && !parent.closest('[aria-hidden=true]'))
        words += ` ${walker.currentNode.data}`;
    }
    return words;
  }
  // The document and every open shadow root in it, components' inside components': a
  // component's dialog or list box (Shoelace's, Material's) is drawn inside its own root.
  // One pass over the page's elements: a few ms on a page of 16,000, as rustdoc's `Vec`.
  const rootsNow = () => {
    const found = [document];
    for (let at = 0; at < found.length; at++) {
      for (const el of found[at].querySelectorAll('*')) {
        if (el.shadowRoot)
          found.push(el.shadowRoot);
      }
    }
    return found;
  };
  const roots = rootsNow();
  // The page's DOM watcher (settle.js) hears the shadow roots too while the action settles,
  // and settling waits for their animations (`roots`), as for the document's.
  const domWatch = window[Symbol.for('mcp-relay.lastMutation')];
  for (const root of roots.slice(1))
    domWatch?.observer?.observe(root, domWatch.options);
  // How a field, a dialog or a list is named, made here and kept on the watch for
  // actionEvidence: what closed is named as it was while open (react-select takes its menu's
  // controller away with the menu).
  const clip = (text, most) => {
    const flat = String(text || '').replace(/[\u200b\u2060\ufeff]/g, '').replace(/\s+/g, ' ').trim();
    return flat.length > most ? `${flat.slice(0, most - 1)}…` : flat;
  };
  const refOf = el => window[Symbol.for('mcp-relay.refs')]?.refOf.get(el);
  // Names given to popups by the element that opened them (see `opener`), kept while the
  // document lives so that one closes under the name it opened with.
  const openedBy = window[Symbol.for('mcp-relay.openedBy')] ??= new WeakMap();
  // What a label says of the field it labels: its shown words less the field's own, as
  // Chrome names a field its label wraps (Datasette's `<label>X column <select>…` read
  // `combobox "X column product count(*)"`, every option's words in the name).
  const labelSays = (label, el) => {
    if (!label.contains(el))
      return label.innerText.trim();
    let words = '';
    const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const parent = walker.currentNode.parentElement;
      if (!el.contains(parent) && parent?.checkVisibility())
        words += ` ${walker.currentNode.data}`;
    }
    return words.replace(/\s+/g, ' ').trim();
  };
  // `bare`: no stand-in for a field with no name (its id, its tag), as a line saying what
  // changed names it: Bokeh gives every field the id "input".
  const field = (el, bare = false) => {
    const tree = el.getRootNode();
    const labelled = el.getAttribute('aria-labelledby')?.split(/\s+/)
      .map(id => (tree.getElementById ? tree : document).getElementById(id)?.innerText || '').join(' ');
    // A picker's field is labelled by the labels of the hidden input it stands for (snapshot.js).
    const hidden = el.labels?.length ? null : el.previousElementSibling;
    const standsFor = hidden?.localName === 'input' && hidden.type === 'hidden' && hidden.id
      ? [...(tree.querySelectorAll?.(`label[for="${CSS.escape(hidden.id)}"]`) ?? [])] : [];
    const ownLabel = el.getAttribute('aria-label');
    const name = (ownLabel === 'null' || ownLabel === 'undefined' ? '' : ownLabel) || labelled
      // (A label's own `aria-label` is what it says, as Chrome reads it: Element Plus's table
      // labels each row's box so, with no words, and its boxes read `Changed: checkbox`.)
      || [...(el.labels?.length ? el.labels : standsFor)].map(label => label.getAttribute('aria-label') || labelSays(label, el) || drawnText(label)).join(' ').trim()
      // (Its title before its placeholder, as the snapshot names it: Trac's select-all box,
      // `title="Toggle group"`, read as its name attribute, "toggle_group".)
      || el.getAttribute('title') || el.getAttribute('placeholder') || el.getAttribute('name') || (bare ? '' : el.id || el.localName);
    const ref = refOf(el);
    return { field: clip(name, 80), ...(ref ? { ref } : {}) };
  };
  // The words of a message box without its buttons' ("Close", "×") or what is hidden from
  // screen readers.
  const messageOf = el => {
    let words = '';
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    while (words.length < 200 && walker.nextNode()) {
      const parent = walker.currentNode.parentElement;
      const apart = parent?.closest('button, [role=button], [aria-hidden=true]');
      if (parent?.checkVisibility() && !(apart && el.contains(apart)))
        words += ` ${walker.currentNode.data}`;
    }
    return words;
  };
  const described = (outer, showing) => {
    // A popover with no role of its own that holds a menu, list box or dialog, or is drawn
    // for a component that is one (Material's menu, a list box, draws its items in one), is
    // that.
    const ROLES = '[role=menu],[role=listbox],[role=dialog],[role=alertdialog]';
    const bare = !outer.getAttribute('role') && outer.localName !== 'dialog';
    const drawnFor = outer.getRootNode().host;
    const el = (bare && (outer.querySelector(ROLES) || (drawnFor?.matches(ROLES) && drawnFor))) || outer;
    const own = el.getAttribute('role');
    const role = own || (el.localName !== 'dialog' && el.hasAttribute('popover') ? 'popover' : 'dialog');
    // Ids are looked up where the element is: its shadow root, for a component's.
    const root = el.getRootNode();
    const home = root.getElementById ? root : document;
    const labelled = el.getAttribute('aria-labelledby')?.split(/\s+/)
      .map(id => home.getElementById(id)?.textContent || '').join(' ');
    // A dialog without a label of its own is known by its heading.
    const heading = /dialog/.test(role) ? el.querySelector('h1,h2,h3,h4,h5,h6,[role=heading]')?.textContent : '';
    // A list or menu without a name of its own is the one of the field or button it belongs
    // to (react-select's listbox is the "Country" combobox's), or, drawn inside a component
    // (Material's menu), the one of the field that controls the component.
    const controller = node => (node?.id && node.getRootNode().querySelector
      ? node.getRootNode().querySelector(`[aria-controls~="${CSS.escape(node.id)}"],[aria-owns~="${CSS.escape(node.id)}"]`)
      : null);
    const owner = controller(el) || controller(root.host);
    // An alert dialog with no name nor heading is its message (Streamlit's toast, "Order
    // saved", read `Opened: alertdialog` before), or what it points to as its description.
    const pointed = role === 'alertdialog' && el.getAttribute('aria-describedby')?.split(/\s+/)
      .map(id => home.getElementById(id)?.textContent || '').join(' ');
    const message = role === 'alertdialog' ? pointed || messageOf(el) : '';
    const name = clip(el.getAttribute('aria-label') || labelled || heading || (owner ? field(owner, true).field : '') ||
        openedBy.get(el) || openedBy.get(outer) || message || '', 80);
    const ref = refOf(el) || refOf(outer);
    // Modal too: one over a page that hid the rest of itself while it is open (Radix's dialog
    // and menu set `aria-hidden` on the other children of <body>, and no aria-modal).
    const hidesRest = () => Array.from(document.body?.children ?? []).some(kid => kid.getAttribute('aria-hidden') === 'true' &&
      !kid.contains(outer) && kid.checkVisibility() && kid.getBoundingClientRect().height > 2);
    const modal = showing && (outer.matches(':modal') || el.matches(':modal') || el.getAttribute('aria-modal') === 'true' || hidesRest());
    // A menu or list box just shown says what it offers, its first items by name, so a model
    // can choose one (getByRole('menuitem', { name })) without reading the page again.
    // Its own items, not a submenu's; at most 8 named (this runs in the page: no constants
    // from outside).
    const ITEMS = { menu: '[role=menuitem],[role=menuitemcheckbox],[role=menuitemradio]', listbox: '[role=option]' };
    const itemCss = showing ? ITEMS[role] : undefined;
    // A component's list box shows the options the page slotted into it (Shoelace's select).
    const offered = itemCss
      ? [
          ...[...el.querySelectorAll(itemCss)].filter(item => item.closest('[role=menu],[role=listbox]') === el),
          ...[...el.querySelectorAll('slot')].flatMap(slot => slot.assignedElements({ flatten: true }))
            .flatMap(kid => [kid, ...kid.querySelectorAll(itemCss)]).filter(kid => kid.matches(itemCss)),
        ].filter(item => item.checkVisibility() && item.getAttribute('aria-disabled') !== 'true')
      : [];
    const items = offered.slice(0, 8).map(item => clip(item.getAttribute('aria-label') || item.innerText || item.textContent, 40)).filter(Boolean);
    return {
      role, ...(name ? { name } : {}), ...(modal ? { modal: true } : {}), ...(showing && ref ? { ref } : {}),
      ...(items.length ? { items, count: offered.length } : {}),
    };
  };
  // What an element the action pressed says, as a screen reader reads it: its aria-label, else
  // its shown text without what is hidden from screen readers (an icon font's ligature
  // Streamlit hides, `keyboard_arrow_right`). `shownFirst`: its shown words before its
  // aria-label, for a header that toggles a part, whose label says what a press does and
  // changes with it (Quasar's expansion read `Expanded: "Collapse \"Advanced options\""`).
  const spokenName = (el, shownFirst = false) => {
    // A component's button shows the words the page slotted into it (Shoelace's "Account").
    const words = drawsSlotted(el) ? drawnText(el) : shownWords(el, 200);
    return clip(shownFirst ? words.trim() || el.getAttribute('aria-label') : el.getAttribute('aria-label') || words, 80);
  };
  const openerOf = event => event.composedPath().find(node => node instanceof Element &&
      ((node.hasAttribute('aria-haspopup') && node.getAttribute('aria-haspopup') !== 'false') || node.hasAttribute('aria-expanded'))) ?? null;
  // What the action pressed that shows or hides a part of the page (an accordion's header,
  // a <details>' summary, a disclosure button), and whether it was expanded before the
  // page's own handlers ran (these listeners capture, so they run first).
  const expandedOf = el => (el.localName === 'summary' ? Boolean(el.parentElement?.open) : el.getAttribute('aria-expanded') === 'true');
  const toggleOf = event => {
    const el = event.composedPath().find(node => node instanceof Element &&
        (node.hasAttribute('aria-expanded') || (node.localName === 'summary' && node.parentElement?.localName === 'details')));
    return el ? { el, was: expandedOf(el) } : null;
  };
  // What a control holds, as a person reads it off the page: checked or not, its value, its
  // selected option. `null` for what is not said (a password's characters, a file input's
  // files, which browser_file_upload answers for).
  const holds = el => {
    const role = el.getAttribute('role');
    if (el.localName === 'input') {
      if (el.type === 'checkbox' || el.type === 'radio')
        return el.indeterminate ? 'mixed' : el.checked ? 'checked' : 'unchecked';
      return ['password', 'file', 'hidden', 'submit', 'button', 'reset', 'image'].includes(el.type) ? null : el.value;
    }
    if (el.localName === 'select')
      return [...el.selectedOptions].map(option => option.label).join(', ');
    if (el.localName === 'textarea')
      return el.value;
    if (el.hasAttribute('aria-pressed'))
      return { true: 'pressed', mixed: 'mixed' }[el.getAttribute('aria-pressed')] ?? 'not pressed';
    if (role === 'tab')
      return el.getAttribute('aria-selected') === 'true' ? 'selected' : 'not selected';
    if (role === 'spinbutton' || role === 'slider')
      return el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow');
    // A column's header says how the table is sorted by it (a click on antd's "Stock" sorts).
    if (el.localName === 'th' || role === 'columnheader') {
      const how = el.getAttribute('aria-sort');
      return how && how !== 'none' ? `sorted ${how}` : 'not sorted';
    }
    return { true: 'checked', mixed: 'mixed' }[el.getAttribute('aria-checked')] ?? 'unchecked';
  };
  // In the document and its components' shadow roots: Panel's (Bokeh's) checkbox is drawn
  // inside one, and its click said nothing of what it checked.
  // Each part is read on its own (see actionEvidence's `part`): what a part could not read
  // before the action, the answer names as not read.
  const unread = [];
  const part = (what, read) => {
    try {
      read();
    } catch (error) {
      unread.push({ what, error: clip(error?.message ?? error, 120) });
    }
  };
  const values = new Map();
  // Which item a control in a table's row stands for: the row's first cell with words. A
  // framework that draws a list again into the rows it has (Element Plus's table, after a row
  // was deleted) puts the next item's switch where the deleted one's was, which read as
  // `Changed: switch: now checked`: a control whose row now stands for another item is not said.
  const rowKeys = new Map();
  const rowKey = el => {
    const row = el.closest('tr, [role=row]');
    if (!row)
      return null;
    for (const cell of row.querySelectorAll('td, th, [role=cell], [role=gridcell], [role=rowheader]')) {
      const words = (cell.textContent || '').replace(/\s+/g, ' ').trim();
      if (words)
        return words.slice(0, 80);
    }
    return '';
  };
  // Whether a control takes no input: disabled (itself or by its fieldset) or marked so.
  const offLimits = el => el.matches(':disabled') || el.getAttribute('aria-disabled') === 'true';
  const able = new Map();
  part('controls the action changed', () => {
    // One pass with a selector of tags and bare attributes, each element then sorted by the
    // two lists: on rustdoc's `Vec` page (16,021 elements) a query of the controls' list alone
    // took 3.4 ms (medians of 31), of both lists 6.5; this pass, for both, 2.5.
    for (const el of roots.flatMap(root => [...root.querySelectorAll('button, input, select, textarea, th, [role], [aria-pressed]')])) {
      if (values.size < MOST_CONTROLS && el.matches(CONTROLS)) {
        // A mark an earlier action left (its evidence never read: it led to another page) is old.
        delete el[Symbol.for('mcp-relay.setByAction')];
        values.set(el, holds(el));
        const key = rowKey(el);
        if (key !== null)
          rowKeys.set(el, key);
      }
      if (able.size < MOST_CONTROLS && el.matches(ABLE))
        able.set(el, offLimits(el));
    }
  });
  const watch = {
    unread,
    href: location.href,
    values,
    holds,
    rowKeys,
    rowKey,
    able,
    offLimits,
    roots: roots.slice(1),
    // Whether the action adds elements anywhere (so perhaps a component with a shadow root
    // of its own): only then are the roots looked for again afterwards, a pass over the
    // whole page (a few ms on rustdoc's `Vec` page) that most actions do not need.
    grew: false,
    added: new MutationObserver(records => watch.heard(records)),
    // Elements the action put on the page or showed (a `hidden` taken away, a `display: none`
    // or `visibility: hidden` style replaced), at most 100: what `appeared` looks among.
    appeared: new Set(),
    // What the action took off the page (at most 2,000 nodes), so that what it puts back as it
    // was (a framework drawing a list again, a row moved by a sort) is not news.
    removed: [],
    // Lists the action put rows or items in or took them out of, each with those it took out
    // that were there before it (at most 300 lists), and the rows and items it showed or hid
    // by an attribute, each with whether it was hidden before (at most 2,000).
    listed: new Map(),
    restyled: new Map(),
    // What the action itself put on the page, to tell what it took away of that (a search's
    // results after the first keys, drawn again after the last) from what was there before.
    born: new WeakSet(),
    tookOff: new WeakSet(),
    // Elements whose text the action replaced (`status.textContent = 'Saved'`: words, not a
    // separator's " | "), at most 100, and the text nodes it rewrote, with what they said.
    retexted: new Set(),
    rewrote: new Map(),
    since: performance.now(),
    heard: records => {
      for (const record of records) {
        if (record.type === 'childList') {
          if (record.addedNodes.length)
            watch.grew = true;
          for (const node of record.removedNodes) {
            watch.tookOff.add(node);
            if (watch.removed.length < 2000)
              watch.removed.push(node);
          }
          // Rows and items that were there before the action taken out of a list, by the
          // list (a search drawing its results again on each key): with those it put in,
          // how many it showed before.
          for (const node of record.removedNodes) {
            if (node.nodeType === Node.ELEMENT_NODE && !watch.born.has(node) && node.matches(ITEMS) &&
                (watch.listed.size < 300 || watch.listed.has(record.target)))
              watch.listed.set(record.target, (watch.listed.get(record.target) ?? new Set()).add(node));
          }
          if (record.target.nodeType === Node.ELEMENT_NODE && watch.listed.size < 300 && !watch.listed.has(record.target) &&
              [...record.addedNodes].some(node => node.nodeType === Node.ELEMENT_NODE && node.matches(ITEMS)))
            watch.listed.set(record.target, new Set());
          if (watch.retexted.size < 100 && [...record.addedNodes].some(node => node.nodeType === Node.TEXT_NODE && /[\p{L}\p{N}]/u.test(node.data)))
            watch.retexted.add(record.target);
          for (const node of record.addedNodes) {
            // (One taken off and put back is moved: a list sorted.)
            if (!watch.tookOff.has(node))
              watch.born.add(node);
            if (node.nodeType === Node.ELEMENT_NODE && watch.appeared.size < 100)
              watch.appeared.add(node);
          }
        } else if (record.type === 'characterData') {
          // A text node the action rewrote in place (React's `{status}`, "Idle" → "Saved"),
          // unless it rewrote itself in the 2 s before the action too (a clock ticking): the
          // page's DOM watcher (settle.js) keeps when it last changed before this.
          if (watch.rewrote.has(record.target))
            continue;
          const seen = domWatch?.texts?.get(record.target);
          const before = seen && (seen.at < watch.since ? seen.at : seen.prior);
          watch.rewrote.set(record.target, record.oldValue ?? '');
          const parent = record.target.parentElement;
          if (parent && !(before > watch.since - 2000) && watch.retexted.size < 100 && /[\p{L}\p{N}]/u.test(record.target.data))
            watch.retexted.add(parent);
        } else {
          // (An attribute's record.) A row or item shown or hidden in its list (a filter
          // hiding the rows it does not match), whichever it is now.
          // (Hidden before by its first record's old value: a `hidden` attribute, a style's
          // `display: none`, a class that says so, as `hidden` or `d-none` do.)
          if (watch.restyled.size < 2000 && record.target.matches(ITEMS) && !watch.restyled.has(record.target)) {
            const old = record.oldValue ?? '';
            watch.restyled.set(record.target, record.attributeName === 'hidden' ? record.oldValue !== null
              : record.attributeName === 'style' ? /display:\s*none/.test(old) : /(^|\s)(\S*hid\S*|d-none|filtered\S*)(\s|$)/i.test(old));
          }
          // What a `hidden` or a style hid is shown, and what a class that says so opens
          // (flatpickr's calendar, there from the start, shown by `open`; Bootstrap's menus by
          // `show`): a click in the date field read only `clicked: true`.
          const opened = record.attributeName === 'class' && [...record.target.classList]
            .some(name => OPEN_CLASS.test(name) && !(record.oldValue ?? '').split(/\s+/).includes(name));
          if (watch.appeared.size < 100 && (opened || (record.attributeName === 'hidden' ? record.oldValue !== null
            : record.attributeName === 'style' && /display:\s*none|visibility:\s*hidden/.test(record.oldValue ?? ''))))
            watch.appeared.add(record.target);
        }
      }
    },
    failed: new Set(),
    submits: 0,
    typed: false,
    // A page's own checkValidity() fires `invalid` too (to enable a button as fields fill),
    // and stops nothing: only a submit the action attempted counts.
    attempted: false,
    live: new Map(),
    invalid: new Set(document.querySelectorAll('[aria-invalid=true]')),
    // What said it had a part open (a menu's button, a date field with its picker): one that
    // no longer does closed that part, which is no news of its own (actionEvidence's `gone`).
    expanded: new Set(document.querySelectorAll('[aria-expanded=true]')),
    open: new Set(),
    namers: { clip, field, described, rootsNow, openedBy, spokenName, shown, messageOf },
    // The element the action pressed or clicked that says it opens a popup (a menu bar's
    // "Kernel", a drop-down's button: `aria-haspopup`, `aria-expanded`): a menu or list with
    // no name of its own, nor a controller naming it, is known by it (JupyterLab's menus read
    // `Opened: menu` before).
    opener: null,
    // What the action's click landed on and what holds it, as drawn (its composed path): a
    // component's button is in its own shadow root, and the click's target at the document
    // is the component (Shoelace's `sl-button`).
    pressed: null,
    around: null,
    hiddenFields: null,
    fieldsCss: FIELDS,
    itemsCss: ITEMS,
    toggle: null,
    expandedOf,
    named: new Map(),
    listeners: [
      ['invalid', event => {
        if (watch.failed.size < 20)
          watch.failed.add(event.target);
      }],
      // The browser's check of a submit focuses the first field it found wrong, right after
      // its `invalid` (a page's script calling requestSubmit() is an attempt no click or
      // Enter shows); a field focused before its check, to be typed in, is not that.
      ['focusin', event => {
        if (watch.failed.has(event.target))
          watch.attempted = true;
      }],
      ['submit', () => {
        watch.submits += 1;
      }],
      // Text typed or deleted in a field (not a checkbox's click): what it takes off the page
      // is a list of suggestions redrawn as the words change, not news.
      ['beforeinput', () => {
        watch.typed = true;
      }],
      ['mousedown', event => {
        watch.opener ??= openerOf(event);
      }],
      ['click', event => {
        watch.pressed ??= event.composedPath().filter(node => node instanceof Element);
        // What the few elements around the one clicked showed before the page's handlers ran
        // (these listeners capture): a part a click shows or hides by a class, with no
        // `aria-expanded` to say so (Trac's "Modify Ticket", a jQuery fold), is told by what
        // they show after it. Up to 5 levels, none of more than 20,000 characters.
        watch.around ??= watch.pressed.filter(el => el !== document.body && el !== document.documentElement).slice(0, 5)
          .filter(el => el.textContent.length <= 20_000 && el.innerText !== undefined).map(el => ({ el, text: el.innerText }));
        // And the fields around it not shown yet (at most 200): a drop-down's form a click
        // opens (sqlite-web's "+ Table", a Bootstrap drop-down holding a field) says them.
        watch.hiddenFields ??= [...(watch.around.at(-1)?.el.querySelectorAll(FIELDS) ?? [])].filter(el => !el.checkVisibility()).slice(0, 200);
        watch.opener ??= openerOf(event);
        watch.toggle ??= toggleOf(event);
        const button = event.composedPath().find(node => node instanceof HTMLButtonElement || node instanceof HTMLInputElement);
        if (button?.form && ['submit', 'image'].includes(button.type))
          watch.attempted = true;
      }],
      ['keydown', event => {
        watch.opener ??= openerOf(event);
        if (event.key === 'Enter' || event.key === ' ')
          watch.toggle ??= toggleOf(event);
        if (event.key === 'Enter' && event.target instanceof HTMLInputElement && event.target.form)
          watch.attempted = true;
      }],
    ],
  };
  part('what the page announced', () => {
    for (const el of roots.flatMap(root => [...root.querySelectorAll(live)]))
      watch.live.set(el, shown(el));
  });
  part('dialogs, menus and lists opened or closed', () => {
    for (const el of roots.flatMap(root => [...root.querySelectorAll(openable)]).filter(one => one.checkVisibility()))
      watch.open.add(el);
    for (const el of watch.open)
      watch.named.set(el, described(el, false));
  });
  // Capturing: `invalid` does not bubble, and a page may stop a submit's propagation.
  for (const [type, listener] of watch.listeners)
    document.addEventListener(type, listener, true);
  for (const root of roots)
    watch.added.observe(root, {
      childList: true, subtree: true, attributeFilter: ['hidden', 'style', 'class'], attributeOldValue: true, characterData: true, characterDataOldValue: true,
    });
  window[key] = watch;
  return { url: location.href, title: document.title, readyState: document.readyState };
}

/**
 * After an action: where the page is, and what `watchAction` saw. `formBlocked` lists the
 * fields the browser's check found wrong (its own message, as the bubble shows it) when the
 * action attempted a submit (a submit button clicked, an Enter in a form's field, or the
 * browser's check moving the focus to a field it found wrong) and no form was sent;
 * `markedInvalid` the fields the page marked invalid since, with the message it points them
 * to; `pageSays` each announced message that appeared or changed; `opened` each dialog, menu,
 * list or popover shown since and `closed` each one no longer shown (not one inside another
 * said, at most 3 each; one drawn again as it was is neither). Fields carry their ref when
 * the last snapshot gave them one.
 *
 * @param {string} live {@link LIVE_REGIONS}
 * @param {string} openable {@link OPENABLE}
 */
export function actionEvidence(live, openable) {
  const state = { url: location.href, title: document.title, readyState: document.readyState };
  const key = Symbol.for('mcp-relay.watch');
  const watch = window[key];
  // The nearest element the click landed on, or one around it as drawn, that is `css`.
  const pressedIn = css => watch?.pressed?.find(el => el.matches(css)) ?? null;
  const words = (text, most) => {
    const flat = String(text || '').replace(/[\u200b\u2060\ufeff]/g, '').replace(/\s+/g, ' ').trim();
    return flat.length > most ? `${flat.slice(0, most - 1)}…` : flat;
  };
  // Each part of the answer is read on its own. A page that makes one throw (a prototype it
  // patched, an element nothing here foresaw: Swagger UI's live region, an SVG with no
  // innerText, threw, and every line of the answer went with it) costs the answer that part,
  // which it names as not read, and no other. What watchAction could not read before the
  // action is named too.
  const unread = [...(watch?.unread ?? [])];
  const part = (what, read) => {
    try {
      read();
    } catch (error) {
      if (!unread.some(one => one.what === what))
        unread.push({ what, error: words(error?.message ?? error, 120) });
    }
  };
  if (!watch) {
    // A new page (the action led to it): the fields it marks invalid as it arrives
    // (`aria-invalid="true"`), with the message each points to, are what a form the server
    // refused comes back saying. Django's admin answers a refused save with the same form,
    // "Please correct the errors below.", and `Enter a valid time.` under the field; the
    // answer said only that the page changed. The watch's namers went with the old page.
    // (Said so: a form sent to the page's own URL comes back as a new page at the same
    // address, Trac's "Remove selected items", which read as if nothing had happened.)
    const arrived = { ...state, newDocument: true };
    part('fields the page marked invalid', () => {
      const marked = [...document.querySelectorAll('[aria-invalid=true]')].filter(el => el.checkVisibility()).slice(0, 10);
      if (marked.length) {
        arrived.markedInvalid = marked.map(el => {
          const name = el.getAttribute('aria-label') || [...(el.labels || [])].map(label => label.innerText).join(' ')
            || el.getAttribute('placeholder') || el.getAttribute('name') || el.id || el.localName;
          const ids = `${el.getAttribute('aria-errormessage') || ''} ${el.getAttribute('aria-describedby') || ''}`;
          const message = words(ids.split(/\s+/).filter(Boolean).map(id => document.getElementById(id)?.innerText || '').join(' '), 300);
          return { field: words(name, 80), ...(message ? { message } : {}) };
        });
      }
    });
    // The message a page the action led to greets with: what a save answers ("Page 'Driving
    // Wagtail' created.": Wagtail's role=status list; "The product … was changed
    // successfully.": Django's admin's `ul.messagelist`, which has no role), shown at the top
    // where a person looks first. Only an alert or a status, or Django's list: a region merely
    // marked live holds a part of the page that keeps itself current, and one drawn for
    // screen readers alone (a box a pixel wide: "Loading…") is not what a person sees there.
    // Words hidden from a screen reader (an icon font's) are left out.
    // (As the page lays it out: a link inside a message reads as part of its sentence, and
    // Django's messages, `<li>`s with nothing between them, read apart.)
    const said = el => {
      let text = el.innerText;
      for (const hidden of el.querySelectorAll('[aria-hidden=true]')) {
        // (An icon drawn as SVG has no innerText.)
        const word = (hidden.innerText ?? '').trim();
        if (word)
          text = text.replace(word, ' ');
      }
      return words(text, 300);
    };
    part('what the page announced', () => {
      const says = [];
      for (const el of document.querySelectorAll('[role=alert],[role=status],ul.messagelist')) {
        const box = el.getBoundingClientRect();
        const text = el.checkVisibility() && box.width > 1 && box.height > 1 ? said(el) : '';
        // A message says something in words; a status of one or two is a badge on the page
        // (MLflow marks a run's state, `Finished`, and each tag, `team : relay`, role=status).
        if (text.split(' ').length < 3 || says.some(row => row.text.includes(text)) || arrived.markedInvalid?.some(row => row.message === text))
          continue;
        says.push({ role: el.getAttribute('role') === 'alert' ? 'alert' : 'status', text });
        if (says.length === 3)
          break;
      }
      if (says.length)
        arrived.pageSays = says;
    });
    if (unread.length)
      arrived.unread = unread;
    return arrived;
  }
  delete window[key];
  for (const [type, listener] of watch.listeners)
    document.removeEventListener(type, listener, true);
  // Records not yet handed to the observer's callback count too.
  watch.heard(watch.added.takeRecords());
  watch.added.disconnect();
  const STRUCTURE = ['table', 'ul', 'ol', 'dl', 'section', 'article', 'main', 'nav', 'aside', 'form', 'header', 'footer'];
  // The role a changed control's line names it by, as the outline does.
  const controlKind = el => {
    const role = el.getAttribute('role');
    if (el.localName === 'th' && !role)
      return 'columnheader';
    if (role)
      return el.hasAttribute('aria-pressed') && role !== 'switch' ? 'toggle button' : role;
    if (el.hasAttribute('aria-pressed'))
      return 'toggle button';
    if (el.localName === 'select')
      return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (el.localName === 'textarea')
      return 'textbox';
    return { checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton', search: 'searchbox' }[el.type] ?? 'textbox';
  };
  // The namers watchAction made, so a list or dialog that closed is named as it was.
  const { clip, field, described, openedBy, spokenName, shown, messageOf } = watch.namers;
  const pointedTo = el => {
    const ids = `${el.getAttribute('aria-errormessage') || ''} ${el.getAttribute('aria-describedby') || ''}`;
    return clip(ids.split(/\s+/).filter(Boolean).map(id => {
      const target = document.getElementById(id);
      return target ? shown(target) : '';
    }).filter(Boolean).join(' '), 300);
  };
  const evidence = { ...state };
  part("whether the browser's own check stopped a form", () => {
    if (!watch.attempted || watch.submits)
      return;
    const fields = [...watch.failed].filter(el => el.isConnected && !el.validity?.valid).slice(0, 10);
    if (fields.length)
      evidence.formBlocked = fields.map(el => ({ ...field(el), message: clip(el.validationMessage, 300) }));
  });
  part('fields the page marked invalid', () => {
    const marked = [...document.querySelectorAll('[aria-invalid=true]')]
      // After a submit the page refused, fields it marked before too: antd keeps "Please choose a
      // category" under its field, and a second Save said nothing, as if it had gone.
      .filter(el => (watch.attempted || !watch.invalid.has(el)) && el.checkVisibility()).slice(0, 10);
    if (marked.length)
      evidence.markedInvalid = marked.map(el => {
        const message = pointedTo(el);
        return { ...field(el), ...(message ? { message } : {}) };
      });
  });
  const known = new Set((evidence.markedInvalid || []).map(row => row.message));
  // A new view: another URL, but for a link to an anchor on the page (Trac's "#no3", which
  // unfolds the part it heads): the page is the same one, and what it shows is news.
  // (A hash that is not valid percent-encoding, `#100%`, is looked up as written.)
  const idOf = hash => {
    try {
      return decodeURIComponent(hash);
    } catch {
      return hash;
    }
  };
  const anchor = location.href.split('#')[0] === watch.href.split('#')[0] && location.hash.length > 1 &&
    document.getElementById(idOf(location.hash.slice(1)));
  // Nor a hash of settings (`#g.mark=bar&g.x_column=product`, datasette-vega's chart, drawn
  // by the click that wrote it): the page keeps its view, and what it drew is news.
  const settings = location.href.split('#')[0] === watch.href.split('#')[0] && /^#[^/!][^/]*=/.test(location.hash);
  const routed = location.href !== watch.href && !anchor && !settings;
  const floats = el => {
    for (let node = el; node && node !== document.body; node = node.parentElement) {
      if (['fixed', 'sticky'].includes(getComputedStyle(node).position))
        return true;
    }
    return false;
  };
  // The document and its components' shadow roots (found again when the action added
  // elements: it may have added a component).
  let rootsFound = null;
  const rootsAfter = () => rootsFound ??= watch.grew ? watch.namers.rootsNow() : [document, ...watch.roots];
  let liveNow = [];
  part('what the page announced', () => {
    const says = [];
    // A component's alert is in its shadow root (Shoelace's).
    liveNow = rootsAfter().flatMap(root => [...root.querySelectorAll(live)]);
    for (const el of liveNow) {
      const text = shown(el);
      // A region inside another that changed is already in that one's text.
      if (!text || watch.live.get(el) === text || known.has(clip(text, 300)) || says.some(row => row.whole.includes(text)))
        continue;
      // A message is an alert or a status (a toast is often one put on the page just now); any
      // other element marked live is a part of the page that keeps itself current, whose text
      // is news only when it changes, and not when it is a region, a table or a log (Swagger
      // UI's responses table is a live region a click on an operation shows).
      const own = el.getAttribute('role');
      const message = own === 'alert' || own === 'status' || (!own && el.localName === 'output');
      // An action that moved a single-page app to another view (its URL changed: MLflow's run
      // page) drew that view's statuses with it, which are its content (a run's `Finished`
      // badge); a status that came with it is news only when it floats over the page, as a
      // toast does ("Saved").
      if (routed && own !== 'alert' && !watch.live.has(el) && !floats(el))
        continue;
      // (So is one that holds a table: antd's table wrapper, live, said the whole table again
      // on each sort.)
      const structural = (own ? !['none', 'presentation', 'generic'].includes(own) : STRUCTURE.includes(el.localName)) ||
        Boolean(el.querySelector('table,[role=table],[role=grid],[role=treegrid]'));
      if (!message && (structural || !watch.live.has(el)))
        continue;
      const role = message && own ? own : el.getAttribute('aria-live') === 'assertive' ? 'alert' : 'status';
      says.push({ role, whole: text });
      if (says.length === 5)
        break;
    }
    if (says.length)
      evidence.pageSays = says.map(({ role, whole }) => ({ role, text: clip(whole, 300) }));
  });
  // Controls whose state the action changed, as a person sees them change: the checkbox a
  // click checked (Streamlit's, under its label), the quantity a "+" raised, the field a
  // "Copy address" filled, the tab now selected. A radio or tab that lost its selection is
  // said by the one that gained it. Fields carry their ref. What the action set itself (typed
  // into, filled, chosen: page-scripts.js and form-fields.js mark it) is left out, as its own
  // answer says it; so is, after an action that sets values, the field focused (`focused`: one
  // a drawn drop-down or a component led the typing to; action-reports.js drops it).
  // Each tab the action selected, with its row, for the panel it shows (see below).
  const tabsSelected = [];
  part('controls the action changed', () => {
    const changed = [];
    let moreChanged = 0;
    const setByAction = Symbol.for('mcp-relay.setByAction');
    for (const [el, was] of watch.values) {
      // What the action set itself (typed into, filled, chosen), its own answer says.
      if (el[setByAction]) {
        delete el[setByAction];
        continue;
      }
      // One hidden from screen readers is the page's own copy of a value it draws elsewhere
      // (MUI's select keeps its value in an aria-hidden input: `Changed: textbox: "" → "pro"`).
      if (!el.isConnected || el.closest('[aria-hidden=true]'))
        continue;
      const now = watch.holds(el);
      if (now === was || now === null)
        continue;
      if (watch.rowKeys.has(el) && watch.rowKey(el) !== watch.rowKeys.get(el))
        continue;
      // A drop-down's search field emptied as the focus left it, while the drop-down shows the
      // pick beside it (Vuetify's autocomplete: its input holds "Japan" while it is searched,
      // then the pick is drawn apart from it), still holds the pick: `Changed: combobox
      // "Country": "Japan" → ""` read as if it had been cleared.
      if (now === '' && was && el.getAttribute('role') === 'combobox' && el.parentElement?.innerText.includes(was))
        continue;
      const seen = el.checkVisibility() || [...(el.labels || [])].some(label => label.checkVisibility());
      if (!seen)
        continue;
      const kind = controlKind(el);
      // (A column no longer sorted by is said by the one now sorted by.)
      if (((kind === 'radio' || kind === 'tab' || kind === 'menuitemradio') && now !== 'checked' && now !== 'selected') ||
          (kind === 'columnheader' && now === 'not sorted'))
        continue;
      const native = ['input', 'select', 'textarea'].includes(el.localName);
      const named = native ? field(el, true) : { ...field(el, true), field: spokenName(el) || field(el, true).field };
      // A hidden checkbox with no name, shown only by an icon's label, is a style sheet's
      // switch for a panel or an overlay (MkDocs Material opens its search so: `Changed:
      // checkbox: now checked` on a click in the search box), which is no control a person
      // reads.
      if (!named.field && !el.checkVisibility())
        continue;
      if (changed.length === 5) {
        moreChanged += 1;
        continue;
      }
      const toggles = ['checked', 'unchecked', 'mixed', 'pressed', 'not pressed', 'selected', 'not selected'].includes(now) ||
        /sorted/.test(now);
      changed.push({
        kind, ...named, to: clip(now, 100), ...(toggles ? {} : { from: clip(was ?? '', 100) }),
        ...(el === document.activeElement ? { focused: true } : {}),
      });
      if (kind === 'tab' && now === 'selected')
        tabsSelected.push({ el, row: changed.at(-1) });
    }
    // Controls the action let a person use, or stopped them using, named as the outline names
    // them: a button by its words.
    for (const [el, was] of watch.able) {
      if (!el.isConnected || el.closest('[aria-hidden=true]'))
        continue;
      const now = watch.offLimits(el);
      if (now === was || !el.checkVisibility())
        continue;
      if (changed.length === 5) {
        moreChanged += 1;
        continue;
      }
      const role = el.getAttribute('role');
      const pressed = el.localName === 'button' || (el.localName === 'input' && ['submit', 'button', 'reset', 'image'].includes(el.type));
      const kind = role || (pressed ? 'button' : controlKind(el));
      const own = pressed || (role && !['combobox', 'textbox', 'spinbutton', 'slider'].includes(role));
      const named = field(el, true);
      changed.push({
        kind, ...named, ...(own ? { field: (el.localName === 'input' ? el.value : spokenName(el)) || named.field } : {}),
        to: now ? 'disabled' : 'enabled',
      });
    }
    if (changed.length) {
      evidence.changed = changed;
      if (moreChanged)
        evidence.changedMore = moreChanged;
    }
  });
  let newlyOpen = [];
  // Each element `opened` says, by its line: a dialog's words, fields and buttons are added.
  const openedAs = new Map();
  part('dialogs, menus and lists opened or closed', () => {
    // Dialogs, menus, lists and popovers shown since (`opened`) and gone since (`closed`), in
    // the document and its components' shadow roots.
    const roots = rootsAfter();
    // Inside, as the page is drawn (across shadow roots and through slots): a component's
    // list inside a dialog is the dialog's.
    const inside = (outer, el) => {
      for (let node = el; node; node = node.assignedSlot || node.parentNode || node.host) {
        if (node === outer)
          return true;
      }
      return false;
    };
    const outermost = (list, el) => {
      if (list.length < 3 && !list.some(one => inside(one, el)))
        list.push(el);
    };
    // Each dialog, menu, list or popover shown now that was not before.
    newlyOpen = roots.flatMap(root => [...root.querySelectorAll(openable)]).filter(el => !watch.open.has(el) && el.checkVisibility());
    const opened = [];
    for (const el of newlyOpen)
      outermost(opened, el);
    const closed = [];
    for (const el of watch.open) {
      if (!el.isConnected || !el.checkVisibility())
        outermost(closed, el);
    }
    // One the page drew again (removed, then put back as it was) neither opened nor closed.
    const same = (a, b) => a.role === b.role && a.name === b.name;
    // One with no name of its own is named by what says it opens one (`opener`), else by the
    // button or menu item the click pressed, when that is not inside it: a
    // submenu's label says nothing of what it opens (ProseMirror's "Heading" read `Opened:
    // menu: "Level 1", …`).
    const button = pressedIn('button,[role=button],[role=menuitem]');
    // (Neither is an element around it: VitePress's whole search box is a `role=button` with
    // `aria-haspopup`, and its results read `Opened: listbox "# Protocol # Protocol Handshake
    // …"`, all its words.)
    const openedWith = el => [watch.opener, button].find(by => by && !el.contains(by) && !by.contains(el)) ?? null;
    const shownNow = opened.map(el => {
      const one = described(el, true);
      openedAs.set(one, el);
      const by = openedWith(el);
      if (!one.name && by && ['menu', 'listbox', 'popover'].includes(one.role)) {
        const name = spokenName(by);
        if (name) {
          openedBy.set(el, name);
          one.name = name;
        }
      }
      return one;
  });
  const goneNow = closed.map(el => watch.named.get(el) ?? described(el, false));
  const reallyOpened = shownNow.filter(one => !goneNow.some(gone => same(one, gone)));
  const reallyClosed = goneNow.filter(gone => !shownNow.some(one => same(one, gone)));
  if (reallyOpened.length)
    evidence.opened = reallyOpened;
  if (reallyClosed.length)
    evidence.closed = reallyClosed;
  });
  // What the action put up over the page with no role to say what it is (Node-RED's
  // "Successfully deployed" notification and its welcome tour, a site's own modal or toast):
  // an element it added or showed that floats (itself or a box around it `position: fixed`, or
  // absolute above the page, `z-index` 1 or more) in a box smaller than most of the window (an
  // app drawn in one fixed full-window box floats all of it), with words, not inside what
  // `opened` or `pageSays` already say. At most 2, the outermost, each cut at 200 characters.
  // Playwright MCP's answers show it in the snapshot that follows every action.
  const area = innerWidth * innerHeight;
  // A ref for what an answer says appeared or shows, the one a snapshot gave it or a new one
  // as a snapshot would give it (snapshot.js `give`), so that a model can name it next: a
  // snapshot of it alone (`browser_snapshot {target}`), Datasette's column menu's links.
  const handle = el => {
    const registry = window[Symbol.for('mcp-relay.refs')];
    return registry?.refOf.get(el) ?? registry?.give?.(el) ?? null;
  };
  // The fields a part the action put up holds, as a person sees them (what each is, its
  // name, what it holds, which has the focus), each with a ref to type into next: TiddlyWiki's
  // "new tiddler" put up its editor, read `Page now shows: "Draft of 'New Tiddler' add Type:
  // Add a new field:add"`, nothing of its title field, focused, nor of its text and tags. At
  // most 6 named, `fieldCount` counts them all; a password's value is not said.
  const FIELDS = watch.fieldsCss;
  const KINDS = { checkbox: 'checkbox', radio: 'radio', number: 'spinbutton', range: 'slider', search: 'searchbox' };
  const fieldsIn = el => fieldsOf([...el.querySelectorAll(FIELDS)]);
  // The elements inside `el` that `css` names, a person sees and a name says, with that name
  // (a button input's by its value): what a dialog or a box put up over the page offers.
  const pressablesIn = (el, css) => [...el.querySelectorAll(css)]
    .filter(one => one.checkVisibility() && !one.closest('[aria-hidden=true]'))
    .map(one => ({ one, name: one.localName === 'input' ? one.value : spokenName(one) }))
    .filter(({ name }) => name);
  // What a box put up over the page offers to press, by role and name with the ref each is
  // named by next (Datasette's column menu, four links, read as one run of words whose
  // links a model had to take a snapshot to name), and the box's words less those names.
  // At most 6; a box offering more keeps all its words and says how many it offers.
  const controlsIn = (el, text) => {
    const PRESSED = 'a[href], button, [role=button], [role=link], [role^=menuitem]';
    const found = pressablesIn(el, `${PRESSED}, input[type=submit], input[type=button]`)
      .filter(({ one }) => !one.parentElement?.closest(PRESSED));
    if (!found.length)
      return { text };
    let rest = text;
    for (const { name } of found.slice(0, 6)) {
      const at = rest.indexOf(name);
      if (at >= 0)
        rest = `${rest.slice(0, at)} ${rest.slice(at + name.length)}`;
    }
    const controls = found.slice(0, 6).map(({ one, name }) => {
      const kind = one.getAttribute('role') ?? (one.localName === 'a' ? 'link' : 'button');
      const ref = handle(one);
      return { kind, name, ...(ref ? { ref } : {}) };
    });
    return {
      text: found.length > 6 ? text : rest.replace(/\s+/g, ' ').trim(),
      controls,
      ...(found.length > 6 ? { controlCount: found.length } : {}),
    };
  };
  const fieldsOf = list => {
    let focused = document.activeElement;
    while (focused?.shadowRoot?.activeElement)
      focused = focused.shadowRoot.activeElement;
    // Not a field put where no scrolling reaches (above or left of the page's start): Node-RED
    // keeps a user name and a password field 1,800 px above its edit tray, a trap for the
    // browser's autofill, and its tray's first fields read `textbox; textbox; textbox`.
    // (What the page and the boxes around the field are scrolled by brings it back.)
    const reachable = one => {
      const box = one.getBoundingClientRect();
      if (box.width <= 4 || box.height <= 4)
        return false;
      let [down, across] = [scrollY, scrollX];
      for (let holder = one.parentElement; holder; holder = holder.parentElement) {
        down += holder.scrollTop;
        across += holder.scrollLeft;
      }
      return box.bottom + down > 0 && box.right + across > 0;
    };
    const found = list.filter(one => one.isConnected && one.checkVisibility() &&
      !one.parentElement?.closest(FIELDS) && reachable(one));
    const fields = found.slice(0, 6).map(one => {
      const kind = one.getAttribute('role') || (one.localName === 'select' ? (one.multiple ? 'listbox' : 'combobox')
        : one.localName === 'input' ? KINDS[one.type] ?? 'textbox' : 'textbox');
      // What a text field, a drop-down or a knob holds (a box the page edits itself shows its
      // words in the part's own text).
      const valued = one.matches('input, textarea, select') || ['spinbutton', 'slider'].includes(kind);
      const holding = one.type === 'password' || !valued ? null : watch.holds(one);
      const value = typeof holding === 'string' && !['checkbox', 'radio'].includes(kind) ? clip(holding, 60) : '';
      const name = field(one, true).field;
      const ref = handle(one);
      return {
        kind, ...(name && name !== value ? { name } : {}), ...(ref ? { ref } : {}), ...(value ? { value } : {}),
        ...(['checkbox', 'radio'].includes(kind) && holding === 'checked' ? { checked: true } : {}),
        ...(one === focused ? { focused: true } : {}),
      };
    });
    return fields.length ? { fields, ...(found.length > fields.length ? { fieldCount: found.length } : {}) } : {};
  };
  // The element `node` is drawn in: a slotted element's slot, a shadow root's top element's
  // host (a component's parts float, hold and are held as drawn).
  const drawnParent = node => node.assignedSlot ?? node.parentElement ?? node.getRootNode().host ?? null;
  // Whether `outer` holds `el` as it is drawn: a slotted element is inside the component's
  // part that shows it (Shoelace's alert and the message the page wrote into it).
  const drawnIn = (outer, el) => {
    for (let node = el; node; node = drawnParent(node)) {
      if (node === outer)
        return true;
    }
    return false;
  };
  const floatingBox = el => {
    // Up the tree as it is drawn: a slotted element into its slot, a shadow root's into its
    // host (Shoelace's tooltip floats in a box of its component's own root).
    for (let node = el, level = 0; node && node !== document.body && level < 12; node = drawnParent(node), level++) {
      const look = getComputedStyle(node);
      if (look.position === 'fixed' || (look.position === 'absolute' && parseInt(look.zIndex, 10) >= 1)) {
        const box = node.getBoundingClientRect();
        return box.width * box.height < area * 0.6 ? node : null;
      }
    }
    return null;
  };
  const said = [...newlyOpen, ...(evidence.pageSays ? liveNow : [])];
  const pressed = pressedIn('button,a,[role],[aria-label]');
  const pressedName = pressed ? spokenName(pressed) : '';
  // Whether `text` is among what the action took off the page or rewrote: drawn again as it
  // was (a framework's re-render), not news.
  const squeezed = text => String(text || '').replace(/\s+/g, '').toLowerCase();
  let took = null;
  const wasThere = text => {
    took ??= squeezed([...watch.removed.filter(node => !watch.born.has(node)).map(node => node.textContent), ...watch.rewrote.values()].join(''));
    return took.includes(squeezed(text));
  };
  // What the elements around the one clicked show now against before (`watch.around`): the
  // innermost whose shown text changed by 15 characters or more, with the words it added
  // and those it lost (a part a class unfolded or folded). Once per answer.
  let folds;
  const unfolding = () => {
    if (folds !== undefined)
      return folds;
    folds = null;
    for (const { el, text } of watch.around ?? []) {
      if (!el.isConnected)
        continue;
      const now = el.innerText;
      if (Math.abs(now.length - text.length) < 15)
        continue;
      // Word by word: a block shown between two inline ones moves them to lines of their
      // own, so lines do not compare ("Product name Save product", then "Product name",
      // "Please enter a product name", "Save product"). Walked side by side; where they part,
      // the nearer of the next match either way (within 400 words) says what was added or
      // lost. A drop-down's options, which innerText lists, are not what it shows (its
      // fields say that).
      const options = new Set([...el.querySelectorAll('option')].map(option => option.label.trim()));
      const words = value => value.split('\n').filter(line => !options.has(line.trim())).join(' ').split(/\s+/).filter(Boolean);
      const [was, is] = [words(text), words(now)];
      const [added, lost] = [[], []];
      const ahead = (list, word, from) => {
        const at = list.indexOf(word, from);
        return at >= 0 && at - from <= 400 ? at : -1;
      };
      for (let i = 0, j = 0; i < was.length || j < is.length;) {
        if (i === was.length) {
          added.push(...is.slice(j));
          break;
        }
        if (j === is.length) {
          lost.push(...was.slice(i));
          break;
        }
        if (was[i] === is[j]) {
          i++;
          j++;
          continue;
        }
        const inNow = ahead(is, was[i], j);
        const inWas = ahead(was, is[j], i);
        if (inNow >= 0 && (inWas < 0 || inNow - j <= inWas - i)) {
          added.push(...is.slice(j, inNow));
          j = inNow;
        } else if (inWas >= 0) {
          lost.push(...was.slice(i, inWas));
          i = inWas;
        } else {
          lost.push(was[i++]);
          added.push(is[j++]);
        }
      }
      const [gained, went] = [added.join(' '), lost.join(' ')];
      folds = { el, ...(gained.length >= 15 ? { added: gained } : {}), ...(went.length >= 15 ? { lost: went } : {}) };
      break;
    }
    return folds;
  };
  // What a dialog the action opened says and offers, as a person reads it before choosing:
  // its words (without its buttons'), its fields and its buttons, each with a ref to act on
  // next. Vuetify's "Delete order?" dialog (a card with no heading nor label) read `Opened:
  // dialog (modal …)` and nothing of what it asked, nor of its "Cancel" and "Delete".
  part('what an opened dialog holds', () => {
    for (const one of evidence.opened ?? []) {
      const el = openedAs.get(one);
      if (!el || !/dialog/.test(one.role))
        continue;
      // (Without its name, which its line says before: Element Plus's message box read
      // `dialog "Warning" …: "Warning Delete Alan Turing? …"`.)
      let words = messageOf(el).replace(/\s+/g, ' ').trim();
      if (one.name && words.startsWith(one.name))
        words = words.slice(one.name.length).trim();
      const text = clip(words, 200);
      if (text)
        one.text = text;
      // (A ref for the dialog too, for a snapshot of it alone.)
      one.ref ??= handle(el) ?? undefined;
      Object.assign(one, fieldsIn(el));
      const buttons = pressablesIn(el, 'button, [role=button], input[type=submit], input[type=button]').slice(0, 5)
        .map(({ one, name }) => {
          const ref = handle(one);
          return { name, ...(ref ? { ref } : {}) };
        });
      if (buttons.length)
        one.buttons = buttons;
    }
  });
  // What `appeared` said, so that `shows` does not say it again.
  const overPage = [];
  part('what appeared over the page', () => {
    const appeared = [];
    // A box with no size of its own stands for what floats inside it: TiddlyWiki's search
    // results drop down from a wrapper 0 px high, and were not said (the first few hundred
    // elements inside it looked at).
    const floatsIn = el => {
      const box = el.getBoundingClientRect();
      if (box.width >= 20 && box.height >= 10)
        return [el];
      return [...el.querySelectorAll('*')].slice(0, 300).filter(kid => {
        const inner = kid.getBoundingClientRect();
        return inner.width >= 20 && inner.height >= 10 && ['absolute', 'fixed'].includes(getComputedStyle(kid).position);
      });
    };
    // (Not a field's label, nor what is hidden from screen readers: Vuetify shows a second,
    // floating copy of a field's label above it, `aria-hidden`, once it is focused or filled,
    // and typing a name read `Appeared over the page: "Customer"`.)
    const candidates = [...new Set([...watch.appeared].filter(el => el.isConnected && el.checkVisibility()).flatMap(floatsIn))]
      .filter(el => el.localName !== 'label' && !el.closest('[aria-hidden=true]'));
    for (const el of candidates) {
      if (appeared.length === 2)
        break;
      if (candidates.some(other => other !== el && drawnIn(other, el)) || said.some(one => drawnIn(one, el) || drawnIn(el, one)))
        continue;
      const box = el.getBoundingClientRect();
      // (A drop-down in it as the option it shows, which its fields say, not its list:
      // flatpickr's calendar read "January February March … December Sun Mon …".)
      let whole = box.width >= 20 && box.height >= 10 ? shown(el) : '';
      for (const select of el.querySelectorAll('select'))
        whole = whole.replace(select.innerText, ' ');
      const text = clip(whole, 200);
      // (Drawn again as it was, TiddlyWiki's match count on each redraw of its sidebar, is
      // not news.)
      if (text.length < 3 || !floatingBox(el) || wasThere(shown(el)))
        continue;
      // A tooltip that says the name of what the action pressed, which the answer's `element`
      // says (MUI's icon button showed `Appeared over the page: "Refund A-1002"` on a click);
      // one a hover shows is what the hover was for.
      if (pressedName && text === pressedName && (el.closest('[role=tooltip]') || el.querySelector('[role=tooltip]')))
        continue;
      const ref = handle(el);
      appeared.push({ ...controlsIn(el, text), ...(ref ? { ref } : {}), ...fieldsIn(el) });
      overPage.push(el);
    }
    if (appeared.length)
      evidence.appeared = appeared;
  });
  // How `toggled` names what shows or hides a part: by its shown words, a field (a date field
  // that opens its picker) by its label, as a field is named (Vuetify's "Delivery date" read
  // `Expanded: [ref=e81]`); with the ref a snapshot gave it.
  const headerNamed = el => {
    const name = el.matches('input, textarea, select') ? field(el, true).field : spokenName(el, true);
    const ref = window[Symbol.for('mcp-relay.refs')]?.refOf.get(el);
    return { ...(name ? { name } : {}), ...(ref ? { ref } : {}) };
  };
  // A part of the page the action showed or hid by its header (an accordion, "Details"), said
  // unless a dialog, menu or list it opened or closed says it already.
  part('parts shown or hidden', () => {
    const toggle = watch.toggle;
    if (toggle && toggle.el.isConnected && !evidence.opened && !evidence.closed) {
      const now = watch.expandedOf(toggle.el);
      if (now !== toggle.was) {
        // The fields the part it showed holds (around what was pressed, not shown before).
        const shownFields = now ? fieldsOf(watch.hiddenFields ?? []) : {};
        // What the part it controls (`aria-controls`) now shows, with a ref to read or act in
        // it: the picker a date field opened (Vuetify's calendar) was said by nothing.
        const opensPart = now ? (toggle.el.getAttribute('aria-controls') ?? '').split(/\s+/).filter(Boolean)
          .map(id => toggle.el.getRootNode().getElementById?.(id) ?? document.getElementById(id)).find(el => el?.checkVisibility()) : null;
        const partText = opensPart ? clip(shown(opensPart).replace(/\s+/g, ' '), 150) : '';
        const partRef = partText ? handle(opensPart) : null;
        evidence.toggled = {
          expanded: now, ...headerNamed(toggle.el),
          ...(partText ? { part: { text: partText, ...(partRef ? { ref: partRef } : {}) } } : {}),
          ...(shownFields.fields || !opensPart ? shownFields : fieldsIn(opensPart)),
        };
      }
    }
  });
  // The panel a tab now selected shows (`aria-controls`, else the tab panel it labels), its
  // words, ref and fields, as a person sees the panel the click brought: Trac's and Django's
  // tabs read only `Changed: tab "Details": now selected`, and the fields the panel holds
  // took a snapshot to name.
  part('the panel a tab shows', () => {
    for (const { el, row } of tabsSelected.slice(0, 1)) {
      const tree = el.getRootNode();
      const byId = id => tree.getElementById?.(id) ?? document.getElementById(id);
      const panel = (el.getAttribute('aria-controls') ?? '').split(/\s+/).filter(Boolean).map(byId)
        .find(one => one?.checkVisibility()) ??
        (el.id ? [...(tree.querySelectorAll?.('[role=tabpanel]') ?? [])]
          .find(one => one.getAttribute('aria-labelledby')?.split(/\s+/).includes(el.id) && one.checkVisibility()) : null);
      if (!panel)
        continue;
      const text = clip(shown(panel).replace(/\s+/g, ' '), 150);
      const ref = handle(panel);
      if (text)
        row.part = { text, ...(ref ? { ref } : {}) };
      Object.assign(row, fieldsIn(panel));
    }
  });
  // The lists and tables `listed` says, whose rows `shows` does not say again.
  const listedIn = [];
  // Lists and tables whose rows or items a person sees grow or shrink by two or more, or
  // empty (a filter typed, a facet clicked, "Load more"): how many they show now and before,
  // and the first few. Typing into a table's filter read only `typed: true`, though it hid
  // ten of twelve rows. Not a list a dialog, menu or list box said opened or closed holds
  // (its own line says its items), nor on a new view.
  part('lists grown or shrunk', () => {
    if (routed)
      return;
    const ITEMS = watch.itemsCss;
    const lists = new Map();
    // (Taken out and not put back in it: a list sorted takes every row out and puts it back.)
    // (Put back: moved in it, a row dragged to another place, a list sorted.)
    for (const [list, gone] of watch.listed)
      lists.set(list, { removed: [...gone].filter(node => node.parentElement !== list).length,
        moved: [...gone].some(node => node.parentElement === list), shown: 0, hidden: 0 });
    for (const [item, wasHidden] of watch.restyled) {
      const list = item.parentElement;
      if (!list || watch.born.has(item) || wasHidden !== item.checkVisibility())
        continue;
      const tally = lists.get(list) ?? { removed: 0, moved: false, shown: 0, hidden: 0 };
      tally[wasHidden ? 'shown' : 'hidden'] += 1;
      lists.set(list, tally);
    }
    const grown = [];
    listedIn.length = 0;
    for (const [list, { removed, moved, shown: unveiled, hidden }] of lists) {
      if (grown.length === 2)
        break;
      // (Nor the chips a drop-down shows of what it holds, beside its own search field, which
      // its answer or `changed` says: Select2's multiple read `List now shows 3 items (1
      // before): "× Alaska", "× Delaware", …` after a pick.)
      if (!list.isConnected || !list.checkVisibility?.() || said.some(one => one.contains(list)) ||
          list.closest('[role=combobox]') || list.querySelector(FIELDS))
        continue;
      const items = [...list.children].filter(one => one.matches(ITEMS));
      const seen = items.filter(one => one.checkVisibility());
      // (What it put in and shows, what it took out, and what it showed or hid in place.)
      const addedSeen = items.filter(one => watch.born.has(one) && one.checkVisibility()).length;
      const before = seen.length - addedSeen + removed - unveiled + hidden;
      const now = seen.length;
      // The same rows in another order (a row dragged, SortableJS's; a sort that moves the
      // rows it has) is said as that, with the first few as they stand now: a drag that
      // reordered a list answered only `dragged: true`.
      const reordered = moved && now === before && now > 1;
      if (!reordered && (now === before || (Math.abs(now - before) < 2 && now > 0) || before < 0))
        continue;
      const table = list.closest('table, [role=grid], [role=table], [role=treegrid]');
      const holder = table ?? list;
      // (Nor a table or list the action put on the page whole, nor one inside what it put up
      // over the page, which `shows` and `appeared` say: Node-RED's info panel, drawn anew on
      // each pick, read `Table now shows 3 rows (0 before)` beside its own `Appeared` line.)
      const bornWith = el => {
        for (let at = el; at; at = at.parentElement) {
          if (watch.born.has(at))
            return true;
        }
        return false;
      };
      if ((before === 0 && bornWith(holder)) || overPage.some(one => one.contains(holder) || holder.contains(one)))
        continue;
      const rows = Boolean(table) || items.some(one => one.matches('tr, [role=row]'));
      // (Those it added, when it grew: what "Load more" brought, not the first rows again.)
      const fresh = seen.filter(one => (watch.born.has(one) || watch.restyled.get(one) === true) && !wasThere(one.innerText));
      const first = (now > before && fresh.length ? fresh : seen).slice(0, 3).map(one => clip(rows && one.children.length > 1
        ? [...one.children].map(cell => cell.innerText.trim()).filter(Boolean).join(' | ') : one.innerText, 80)).filter(Boolean);
      const ref = handle(holder);
      listedIn.push(holder);
      grown.push({
        kind: table ? 'table' : 'list', items: rows ? 'rows' : 'items', now, before, ...(reordered ? { reordered } : {}),
        ...(first.length ? { first } : {}), ...(ref ? { ref } : {}),
      });
    }
    if (grown.length)
      evidence.listed = grown;
  });
  // What the action put in the page's flow, or wrote there (in the flow, or in a box that
  // floats and was there: a toast shown by a class, its words written then, MkDocs
  // Material's "Copied to clipboard"; a sticky cart's count), that a person sees appear where
  // they look: "Ordered 1 large pizza" under the button (Mesop's answer said only `clicked:
  // true`), a row a "More" added, a hint under a field. Not what the page drew again as it was
  // (its words were among what the action took away: a framework's re-render, rows a sort
  // moved), nor what another line says (a dialog or menu opened, a message announced,
  // something over the page, the part a header or a tab shows, which its own line names), nor
  // what the action typed or chose itself, nor a new view (the URL says it). At most 2, the
  // outermost, each cut at 150 characters.
  part('what the page now shows', () => {
    // A new view, or the part a header or a tab showed, which its own line names.
    if (routed || evidence.toggled || evidence.changed?.some(row => row.kind === 'tab' && row.to === 'selected'))
      return;
    // The part a pressed header or tab controls (`aria-controls`), or a <details>' content.
    const controlled = [watch.toggle?.el, pressed].flatMap(el => (el?.getAttribute?.('aria-controls') ?? '').split(/\s+/))
      .filter(Boolean).map(id => document.getElementById(id)).filter(Boolean);
    const details = watch.toggle?.el?.localName === 'summary' ? [watch.toggle.el.parentElement] : [];
    // A drop-down's own box, pressed to choose from it: the chips of what it holds now are
    // its value, which `selected` says (the nearest box around what was pressed holding a
    // combobox, a line or two high; the chips are beside the combobox's own input, Quasar's
    // and react-select's, or inside it, Shoelace's).
    const FIELD = '[role=combobox], select';
    // (One shown before the action: a button that shows a form with a drop-down in it, in a
    // box a line high around both, is no drop-down's box, and what it showed was not said.)
    const hiddenBefore = new Set(watch.hiddenFields ?? []);
    const holder = (watch.pressed ?? []).find(el => (el.matches(FIELD) && !hiddenBefore.has(el)) ||
      [...el.querySelectorAll(FIELD)].some(one => !hiddenBefore.has(one)) || el.shadowRoot?.querySelector(FIELD));
    const ownBox = holder?.matches(FIELD) ? drawnParent(holder) : holder;
    const apart = [...said, ...controlled, ...details, ...overPage, ...listedIn, ...(ownBox && ownBox.getBoundingClientRect().height <= 120 ? [ownBox] : [])];
    // A few words a script wrote inline in a sentence are read with their sentence: "Total:
    // $5", not "$5" (not an element put in the page: a component's is inline too, and holds
    // its own words, Mesop's; Django's date shortcuts, put back as they were, are not news).
    const block = el => {
      let at = el;
      if (!watch.retexted.has(el) || [...watch.appeared].some(added => drawnIn(added, el)))
        return el;
      for (let level = 0; level < 3 && at.parentElement && at.parentElement !== document.body &&
          getComputedStyle(at).display === 'inline' && at.textContent.trim().length < 20 &&
          at.parentElement.textContent.trim().length <= 150; level++)
        at = at.parentElement;
      return at;
    };
    // The field focused, when it was there before the action (one that came with what the
    // action added, a new form section, is news).
    let typedIn = document.activeElement;
    while (typedIn?.shadowRoot?.activeElement)
      typedIn = typedIn.shadowRoot.activeElement;
    if (!typedIn?.matches?.('input,textarea,[contenteditable]:not([contenteditable=false])') ||
        [...watch.appeared].some(added => drawnIn(added, typedIn)))
      typedIn = null;
    // A code editor typed into (a text area a few pixels across or clipped to that, or an
    // element that is its own editor) draws the text typed around it, its lines and their
    // numbers: its box is the editor's own drawing (Datasette's SQL editor, CodeMirror, read `Page now shows: "1 select
    // status, …"`). Up to the first box of some size, then on while a box around it is not
    // much bigger. A plain field's neighbours ("Username available") are news.
    let editor = null;
    if (typedIn) {
      const size = el => el.getBoundingClientRect();
      const tiny = box => box.width <= 4 || box.height <= 4;
      // (CodeMirror 5's text area is as wide as the editor, in a box 3 px by 0 that clips it.)
      const clipped = tiny(size(typedIn)) || (drawnParent(typedIn) && tiny(size(drawnParent(typedIn))));
      if (typedIn.isContentEditable || clipped) {
        editor = clipped ? drawnParent(typedIn) : typedIn;
        while (editor && tiny(size(editor)))
          editor = drawnParent(editor);
        for (let around = editor && drawnParent(editor); around && around !== document.body; around = drawnParent(around)) {
          const inner = size(editor);
          const outer = size(around);
          if (outer.width > inner.width * 1.5 || outer.height > inner.height * 1.5)
            break;
          editor = around;
        }
      }
    }
    const candidates = [...new Set([...watch.appeared, ...watch.retexted].filter(el => el instanceof Element).map(block))]
      .filter(el => el.isConnected && el.checkVisibility() && !el.isContentEditable && !el.closest('[aria-hidden=true],input,textarea,select') &&
        !apart.some(one => drawnIn(one, el) || drawnIn(el, one)) && (!floatingBox(el) || !watch.appeared.has(el)) &&
        !(editor && drawnIn(editor, el)));
    // What another line says in words already: the message under a field marked invalid.
    const told = [
      ...(evidence.appeared ?? []).map(one => one.text), ...(evidence.pageSays ?? []).map(one => one.text),
      ...[...(evidence.markedInvalid ?? []), ...(evidence.formBlocked ?? [])].map(one => one.message ?? ''),
    ].filter(Boolean);
    // The largest first: what a person's eye goes to (TiddlyWiki's new editor, before the
    // line its sidebar added for it).
    const sizeOf = el => {
      const box = el.getBoundingClientRect();
      return box.width * box.height;
    };
    candidates.sort((one, other) => sizeOf(other) - sizeOf(one));
    // The first picture in an element at least 60 by 40 px (not an icon or a spinner).
    const drawingIn = el => {
      const sized = kid => {
        const box = kid.getBoundingClientRect();
        return box.width >= 60 && box.height >= 40;
      };
      const one = [el, ...el.querySelectorAll('canvas, svg, img, video')].find(kid =>
        kid.matches('canvas, svg, img, video') && !kid.parentElement?.closest('svg') && kid.checkVisibility() && sized(kid));
      if (!one)
        return null;
      const box = one.getBoundingClientRect();
      const name = one.getAttribute('aria-label') || one.getAttribute('alt') || one.querySelector(':scope > title')?.textContent || '';
      const ref = handle(one);
      return {
        drawing: { kind: one.localName === 'svg' ? 'img' : one.localName, size: `${Math.round(box.width)}×${Math.round(box.height)}` },
        ...(name.trim() ? { name: clip(name, 80) } : {}), ...(ref ? { ref } : {}),
      };
    };
    const shows = [];
    for (const el of candidates) {
      if (shows.length === 2)
        break;
      if (candidates.some(other => other !== el && drawnIn(other, el)))
        continue;
      const box = el.getBoundingClientRect();
      // (A drop-down's options are not what it shows: Django's new inline row read
      // "--------- 1 2 3 4 5 Remove".)
      let whole = box.width >= 4 && box.height >= 4 ? shown(el) : '';
      for (const select of el.querySelectorAll('select'))
        whole = whole.replace(select.innerText, ' ');
      const text = clip(whole, 150);
      if (text.length < 3) {
        // A drawing with no words: a chart the click drew (Datasette's "Bar" drew a canvas
        // and its answer said only the radio), by its kind and size, with the ref an element
        // screenshot of it takes.
        const drawing = drawingIn(el);
        if (drawing)
          shows.push({ el, ...drawing });
        continue;
      }
      if (wasThere(whole) || told.some(one => one.includes(text)))
        continue;
      const ref = handle(el);
      shows.push({ el, text, ...(ref ? { ref } : {}), ...(watch.appeared.has(el) ? fieldsIn(el) : {}) });
    }
    // A part the click showed by a class (its words added to what the elements around it
    // show): the innermost of those whose shown text changed, by the words it added.
    // (Not a drop-down's own box, its chips grown by a pick, nor what holds it or another part
    // said apart, nor what typing drew: Quasar's multi-select read `Page now shows: "Backup
    // cancel SSO"`.)
    const unfolded = watch.typed ? null : unfolding();
    const near = el => one => drawnIn(one, el) || drawnIn(el, one);
    if (shows.length < 2 && unfolded?.added && !shows.some(one => one.el && near(unfolded.el)(one.el)) &&
        !apart.some(near(unfolded.el)) && !(editor && near(unfolded.el)(editor))) {
      // (Its fields that were not shown before: the form it unfolded, Trac's; not every field
      // of a form whose messages a click on its button showed, antd's "Please enter a
      // product name".)
      const ref = handle(unfolded.el);
      const unveiled = (watch.hiddenFields ?? []).filter(one => drawnIn(unfolded.el, one));
      shows.push({ text: clip(unfolded.added, 150), ...(ref ? { ref } : {}), ...fieldsOf(unveiled) });
    }
    for (const one of shows)
      delete one.el;
    if (shows.length)
      evidence.shows = shows;
  });
  // What a click or key took off the page for good, as a person sees it go: the row a
  // "Delete" removed, the editor "Cancel" closed (TiddlyWiki's deleted draft answered only
  // `clicked: true`, and whether it went could not be told without reading the page again).
  // The largest part taken away whose words are nowhere on the page now (not drawn again:
  // a framework's re-render, a list sorted), with words, cut at 150 characters; not when
  // another line says what went (a dialog, menu or list closed, a part collapsed, a tab's
  // panel left, a list shrunk), nor with a new view, nor what typing took away (suggestions
  // replaced as the words change).
  part('what the page no longer shows', () => {
    if (routed || watch.typed || evidence.closed || evidence.opened || evidence.toggled || evidence.appeared ||
        evidence.listed || evidence.changed?.some(row => row.kind === 'tab' && row.to === 'selected'))
      return;
    // (Nor a part that closed as what opened it says it did: Vuetify's menu and date picker,
    // boxes with no role, read `Page no longer shows: "Export CSV Settings"` after a pick or
    // an Escape, their buttons' `aria-expanded` false again.)
    // It is said so instead: `Collapsed: [ref=e4]`.
    const closer = [...watch.expanded].find(el => el.isConnected && el.getAttribute('aria-expanded') !== 'true');
    if (closer) {
      if (closer.checkVisibility())
        evidence.toggled = { expanded: false, ...headerNamed(closer) };
      return;
    }
    // (Nor a list, menu or dialog taken away with the box around it: MUI's and Radix's
    // selects take their list away in a popover that has no role, `Page no longer shows:
    // "Free Pro — $12/month …"` after a pick. What the action put up over the page instead,
    // `appeared`, says what replaced what went: CKEditor's link balloon, "Edit link Unlink",
    // gave way to its form.)
    const gone = watch.removed.filter(node => node.nodeType === Node.ELEMENT_NODE && !node.isConnected &&
      !node.matches(`${openable},[role=tooltip],script,style,template`) && !node.querySelector(`${openable},[role=option],[role=menuitem]`) &&
      /[\p{L}\p{N}]/u.test(node.textContent));
    // (A part a class folded away, still on the page but no longer shown, by the words the
    // elements around the one clicked no longer show.)
    const folded = unfolding()?.lost;
    if (!gone.length) {
      if (folded)
        evidence.gone = [{ text: clip(folded, 150) }];
      return;
    }
    const flat = text => String(text || '').replace(/\s+/g, ' ').trim();
    // (Each one's length read once: the one kept so far was read again at every step.)
    const [largest] = gone.map(node => [node, flat(node.textContent).length])
      .reduce((most, one) => (one[1] > most[1] ? one : most));
    // (Its words: a detached element has no layout to read them as drawn, so its text nodes,
    // each apart from the next, but a script's or a style's.)
    const texts = [];
    const walker = document.createTreeWalker(largest, NodeFilter.SHOW_TEXT);
    while (walker.nextNode() && texts.length < 200) {
      if (!walker.currentNode.parentElement?.closest('script, style, template'))
        texts.push(walker.currentNode.data);
    }
    const words = flat(texts.join(' '));
    const now = rootsAfter().map(root => (root === document ? document.body?.textContent : root.textContent) ?? '').join(' ').replace(/\s+/g, '');
    if (words.length < 3 || now.includes(words.replace(/\s+/g, '')))
      return;
    // (Nor one drawn again in another order, its words still shown piece by piece: Grid.js
    // draws its whole table anew on a sort, which read `Page no longer shows: "Project Lead
    // Status Relay Ada Lovelace open …"`. Not a row or an item, nor a part of a few words: a
    // row deleted whose cells' words other rows show too, "shipped", "Edit", "Delete", is gone.)
    const pieces = texts.map(text => text.replace(/\s+/g, '')).filter(text => text.length >= 3).slice(0, 40);
    if (!largest.matches(watch.itemsCss) && pieces.length >= 8 &&
        pieces.filter(piece => now.includes(piece)).length >= 0.75 * pieces.length)
      return;
    evidence.gone = [{ text: clip(words, 150) }];
  });
  if (unread.length)
    evidence.unread = unread;
  return evidence;
}
