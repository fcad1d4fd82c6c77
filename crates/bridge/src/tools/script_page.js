// Playwright's `page` in scripts (code.rs): the part of Playwright's Page and Locator API that
// models write in Playwright MCP's `browser_run_code_unsafe`, made of this session's own tools.
// Every step is one of the tool calls a model could make itself (`browser_click` with a
// locator as `target`, `browser_evaluate`, …), so it goes through the same session, owner
// checks, audit log and bounds; nothing here reaches the browser any other way.
//
// Evaluated once per script with `tools` (the script's own) and `raw(name, args)`, which calls
// a tool as `tools` does but hands back its whole text (never cut into parts), so a value read
// from the page arrives whole. Returns `[page, globals]`: `globals` are what Playwright MCP's
// scripts have beside `page` that needs no way out (timers as waits, URL, base64).
(function (tools, raw) {
  "use strict";
  // page.url() is synchronous in Playwright: the URL the last answer named.
  let knownUrl = "about:blank";
  const remember = function (result) {
    const data = result && result.data;
    if (data && typeof data === "object") {
      const changed = data.pageChanged && data.pageChanged.url;
      const url = typeof changed === "string" ? changed : data.url;
      if (typeof url === "string") knownUrl = url;
    }
    return result;
  };
  const call = async function (name, args) {
    return remember(await raw(name, args));
  };
  const source = function (fn) {
    return typeof fn === "function" ? fn.toString() : String(fn);
  };
  const literal = function (value) {
    return value === undefined ? "undefined" : JSON.stringify(value);
  };
  // A page function's value comes back as JSON in a string, so it arrives as it was (a
  // number stays a number, a string is not taken for page text).
  const evaluate = async function (body, target) {
    const fn = target === undefined
      ? "async () => JSON.stringify({ v: await (" + body + ")() })"
      : "async (element) => JSON.stringify({ v: await (" + body + ")(element) })";
    const args = target === undefined ? { function: fn } : { function: fn, target: target };
    const result = await call("browser_evaluate", args);
    return JSON.parse(result.text).v;
  };
  // What Playwright's innerText reads (textContent where there is no layout, as in an SVG).
  const INNER_TEXT = "(element) => element.innerText ?? element.textContent";
  // `body` called with every element `target` names (a getBy… locator's matches), in one call:
  // the extension resolves the locator to all its elements (browser_evaluate's `each`, kept
  // out of its schema for scripts), and each value comes back as `evaluate`'s do.
  const evaluateEach = async function (body, target) {
    const fn = "async (element) => JSON.stringify({ v: await (" + body + ")(element) })";
    const result = await call("browser_evaluate", { function: fn, target: target, each: true });
    return JSON.parse(result.text).map((json) => JSON.parse(json).v);
  };
  // `fn` of page.evaluate / locator.evaluate with its argument: a function is called (with the
  // element first, for a locator); a string is an expression, called if it is a function.
  const applied = function (fn, arg, withElement) {
    const head = withElement ? "(element) => " : "() => ";
    const args = withElement ? "element, " + literal(arg) : literal(arg);
    if (typeof fn === "function") return head + "(" + source(fn) + ")(" + args + ")";
    return head + "{ const f = (" + String(fn) + "); return typeof f === 'function' ? f(" + args + ") : f; }";
  };
  const unsupported = function (what, instead) {
    return new Error(what + " is not available in this bridge's scripts" + (instead ? "; " + instead : ""));
  };
  // page.screenshot({ path }) and locator.screenshot({ path }): the image saved where the
  // bridge runs, as browser_take_screenshot's `filename` saves one (never over a file this
  // session did not write). A script receives no image itself, so a path is needed, and the
  // value is undefined rather than Playwright's Buffer.
  const savedScreenshot = async function (what, options, target) {
    const o = options || {};
    if (typeof o.path !== "string" || o.path === "") {
      throw unsupported(what + " without a path", "scripts receive no images: give { path: 'shot.png' } to save it where the bridge runs, or return and call browser_take_screenshot");
    }
    if (o.clip) throw unsupported(what + " with clip", "take an element's: locator(…).screenshot({ path })");
    const args = { filename: o.path };
    if (o.type !== undefined) args.type = o.type;
    if (o.fullPage === true) args.fullPage = true;
    if (target !== undefined) args.target = target;
    const result = await call("browser_take_screenshot", args);
    // Over the relay's HTTP /mcp no file is kept where the tools run: the image was not saved.
    const unsaved = /^Not saved to .*$/m.exec(result.text || "");
    if (unsaved) throw new Error(unsaved[0]);
    return undefined;
  };

  // How a locator is named to the tools: `source` is Playwright's locator text as `target`
  // takes it (getByRole(…).nth(1), role=…, text=…); a CSS locator is kept as `stages` (each a
  // selector within the elements the stage before found, its text filters and pick), so that
  // finding, counting and reading happen in the page in one call.
  const quoted = function (value) {
    if (value instanceof RegExp) return "/" + value.source + "/" + value.flags;
    return JSON.stringify(String(value));
  };
  const ENGINE = /^(?:(?:internal:)?(?:role|text|label|css|nth)=|xpath=|\/\/)|\s>>\s/;

  // Used both here (a getBy… locator's filter, read through the tools) and in the page (a CSS
  // locator's, handed over as source), so the two read a filter and a pick alike.
  // Whether an element's text passes `filter({hasText, hasNotText})`, as Playwright reads it:
  // a regex tests it; a string is a part of it, case and runs of white space aside.
  const passes = function (filters, text) {
    const norm = (t) => String(t || "").replace(/\s+/g, " ").trim().toLowerCase();
    return filters.every((f) => {
      const hit = f.regex ? new RegExp(f.regex.source, f.regex.flags).test(text) : norm(text).includes(norm(f.text));
      return f.not ? !hit : hit;
    });
  };
  // `first()`, `last()` or `nth(i)` (from the end when negative) of `list`; all of it for none.
  const picked = function (list, pick) {
    if (pick === undefined) return list;
    const at = pick === "first" ? 0 : pick === "last" ? list.length - 1 : pick < 0 ? list.length + pick : pick;
    return list[at] === undefined ? [] : [list[at]];
  };

  const cssPage = {
    // The elements a CSS locator names (run in the page): each stage's selector within the
    // elements found so far (none: those elements themselves), its text filters, its pick.
    list: "(stages) => { " +
      "const passes = " + passes + "; const picked = " + picked + "; " +
      "let list = [document]; " +
      "for (const { css, filters, pick } of stages) { " +
      "if (css !== null) { const seen = new Set(); for (const root of list) for (const el of root.querySelectorAll(css)) seen.add(el); list = Array.from(seen); } " +
      "list = picked(list.filter((el) => passes(filters, el.innerText ?? el.textContent)), pick); } " +
      "return list; }",
    // A selector for one element that no other element matches: its id, or its path of
    // :nth-child steps from the nearest ancestor with an id (or the root).
    path: "(el) => { const steps = []; " +
      "for (let at = el; at && at.nodeType === 1; at = at.parentElement) { " +
      "if (at.id && document.querySelectorAll('#' + CSS.escape(at.id)).length === 1) { steps.unshift('#' + CSS.escape(at.id)); break; } " +
      "if (!at.parentElement) { steps.unshift(at.localName); break; } " +
      "steps.unshift(at.localName + ':nth-child(' + (Array.prototype.indexOf.call(at.parentElement.children, at) + 1) + ')'); } " +
      "return steps.join(' > '); }",
  };

  // `() => LIST(stages).map(body)`: a CSS locator's elements, each read by `body`, in one call.
  const listOf = function (stages) {
    return "(" + cssPage.list + ")(" + literal(stages) + ")";
  };
  const inPage = function (stages, body) {
    return "() => " + listOf(stages) + (body ? ".map(" + body + ")" : "");
  };

  class Locator {
    constructor(spec) {
      this._spec = spec;
    }
    // The spec with its last CSS stage changed by `change` (a copy), or a new stage after it
    // when `fresh` says that one is done.
    _stage(fresh, change) {
      const stages = this._spec.stages.slice();
      const last = stages[stages.length - 1];
      const next = fresh(last) ? { css: null, filters: [], pick: undefined } : Object.assign({}, last, { filters: last.filters.slice() });
      change(next);
      if (fresh(last)) stages.push(next); else stages[stages.length - 1] = next;
      return new Locator({ stages: stages });
    }
    // --- Narrowing -------------------------------------------------------------------------
    _with(more) {
      return new Locator(Object.assign({}, this._spec, more));
    }
    _chain(step, what) {
      const s = this._spec;
      if (s.stages) {
        // Within the elements one CSS selector names (a frame's, through frameLocator): the
        // extension resolves `locator(css).getBy…` against its outline, inside them.
        const css = this._plainCss();
        if (css !== undefined) return new Locator({ source: "locator(" + JSON.stringify(css) + ")." + step, filters: [] });
        throw unsupported(what + " after a chained, filtered or picked locator(css)", "start from page." + what.replace(/\(.*$/, "") + "(…), or from one locator(css)");
      }
      if (s.engine) throw unsupported(what + " after a selector engine", "use page.getBy…(…) chains");
      if (s.filters.length) throw unsupported(what + " after filter()", "filter last");
      return this._with({ source: s.source + "." + step });
    }
    _pick(which) {
      const s = this._spec;
      if (s.stages) return this._stage((last) => last.pick !== undefined, (stage) => { stage.pick = which; });
      if (s.filters.length) return this._with({ pick: which });
      if (s.engine) return this._with({ source: s.source + " >> nth=" + (which === "first" ? 0 : which === "last" ? -1 : which) });
      return this._with({ source: s.source + "." + (which === "first" ? "first()" : which === "last" ? "last()" : "nth(" + which + ")") });
    }
    first() { return this._pick("first"); }
    last() { return this._pick("last"); }
    nth(index) { return this._pick(index); }
    filter(options) {
      const o = options || {};
      const added = [];
      const add = function (value, not) {
        added.push(value instanceof RegExp
          ? { regex: { source: value.source, flags: value.flags }, not: not }
          : { text: String(value), not: not });
      };
      if (o.hasText !== undefined) add(o.hasText, false);
      if (o.hasNotText !== undefined) add(o.hasNotText, true);
      for (const key of Object.keys(o)) {
        if (key !== "hasText" && key !== "hasNotText") throw unsupported("filter({" + key + "})", "filter({hasText}) and filter({hasNotText}) are");
      }
      const s = this._spec;
      if (s.stages) return this._stage((last) => last.pick !== undefined, (stage) => { stage.filters.push(...added); });
      if (s.pick !== undefined) throw unsupported("filter() after first(), last() or nth() of a getBy… locator", "filter first");
      return this._with({ filters: s.filters.concat(added) });
    }
    locator(selector) {
      const s = this._spec;
      if (s.stages && !ENGINE.test(selector)) {
        const stages = s.stages.concat([{ css: String(selector).replace(/^css=/, ""), filters: [], pick: undefined }]);
        return new Locator({ stages: stages });
      }
      throw unsupported("locator(…) inside a getBy… locator or with a selector engine", "use CSS within CSS, page.locator('form').locator('.submit'), or a getBy… chain");
    }
    contentFrame() { return frameOf(this); }
    frameLocator(selector) {
      if (this._plainCss() === undefined) throw unsupported("frameLocator(…) after a chained, filtered or picked locator", "page.frameLocator(css)");
      return frameOf(new Locator({ stages: [{ css: this._plainCss() + " " + String(selector).replace(/^css=/, ""), filters: [], pick: undefined }] }));
    }
    getByRole(role, options) { return this._chain(byRole(role, options), "getByRole(…)"); }
    getByText(text, options) { return this._chain(byText("getByText", text, options), "getByText(…)"); }
    getByLabel(text, options) { return this._chain(byText("getByLabel", text, options), "getByLabel(…)"); }
    getByPlaceholder(text, options) { return this._chain(byText("getByPlaceholder", text, options), "getByPlaceholder(…)"); }
    getByAltText(text, options) { return this._chain(byText("getByAltText", text, options), "getByAltText(…)"); }
    getByTitle(text, options) { return this._chain(byText("getByTitle", text, options), "getByTitle(…)"); }
    getByTestId() { throw unsupported("getByTestId(…) inside another locator", "use page.getByTestId(…)"); }
    toString() {
      const s = this._spec;
      if (!s.stages) return s.source;
      return s.stages.map((stage) => (stage.css === null ? "" : ".locator(" + JSON.stringify(stage.css) + ")") +
        stage.filters.map((f) => ".filter(" + JSON.stringify(f) + ")").join("") +
        (stage.pick === undefined ? "" : "." + (typeof stage.pick === "number" ? "nth(" + stage.pick + ")" : stage.pick + "()"))).join("").slice(1);
    }

    // --- What the tools are given ----------------------------------------------------------
    // The selector of a plain CSS locator (one selector, no filter, no pick), which `target`
    // takes as it is; undefined for any other.
    _plainCss() {
      const stages = this._spec.stages;
      return stages && stages.length === 1 && stages[0].pick === undefined && !stages[0].filters.length
        ? stages[0].css
        : undefined;
    }
    // The `target` of one element: the locator as written where the extension resolves it
    // itself (strict, as Playwright: several matches are refused with their refs); a CSS
    // selector for exactly the element otherwise.
    async _target() {
      const s = this._spec;
      const css = this._plainCss();
      if (css !== undefined) return css;
      if (!s.stages && !s.filters.length) return s.source;
      const targets = await this._targets();
      if (targets.length !== 1) {
        throw new Error(targets.length === 0
          ? "No element matches " + this + "; take a snapshot (browser_snapshot) or use browser_find"
          : this + " matches " + targets.length + " elements; name one (Playwright's locators are strict): add .first(), .last() or .nth(i)");
      }
      return targets[0];
    }
    // One `target` per element the locator names.
    async _targets() {
      const s = this._spec;
      if (s.stages) return evaluate(inPage(s.stages, cssPage.path));
      if (!s.filters.length) {
        const count = await countOf(s.source);
        const targets = [];
        for (let i = 0; i < count; i++) targets.push(this._nthOfSource(i));
        return targets;
      }
      // The filter reads every match's text in one call; each kept one is named by its place.
      const texts = await evaluateEach(INNER_TEXT, s.source);
      const kept = [];
      texts.forEach((text, i) => { if (passes(s.filters, text)) kept.push(this._nthOfSource(i)); });
      return picked(kept, s.pick);
    }
    // The `target` of the i-th element the unfiltered locator names.
    _nthOfSource(i) {
      const s = this._spec;
      return new Locator({ source: s.source, filters: [], engine: s.engine })._pick(i)._spec.source;
    }
    // `body` of every element the locator names, in one call.
    async _values(body) {
      const s = this._spec;
      if (s.stages) return evaluate(inPage(s.stages, body));
      if (!s.filters.length) return evaluateEach(body, s.source);
      const rows = await evaluateEach("async (element) => [(" + INNER_TEXT + ")(element), await (" + body + ")(element)]", s.source);
      return picked(rows.filter((row) => passes(s.filters, row[0])), s.pick).map((row) => row[1]);
    }
    // Reads the one element with `body`. A chained, filtered or picked CSS locator is found
    // and read in the page in one call (a plain selector reads its first match, as `target`
    // does); anything else through its `target`.
    async _read(body) {
      const s = this._spec;
      if (s.stages && this._plainCss() === undefined) {
        const named = JSON.stringify(String(this));
        return evaluate("() => { const list = " + listOf(s.stages) + "; " +
          "if (list.length !== 1) throw new Error((list.length ? " + named + " + ' matches ' + list.length + " +
          "' elements; name one (Playwright\\'s locators are strict): add .first(), .last() or .nth(i)' : 'No element matches ' + " + named + ")); " +
          "return (" + body + ")(list[0]); }");
      }
      return evaluate(body, await this._target());
    }

    // --- Reading ---------------------------------------------------------------------------
    async count() {
      const s = this._spec;
      if (s.stages) return evaluate(inPage(s.stages) + ".length");
      if (!s.filters.length) return countOf(s.source);
      return (await this._values("() => 0")).length;
    }
    async all() {
      const n = await this.count();
      const out = [];
      for (let i = 0; i < n; i++) out.push(this.nth(i));
      return out;
    }
    async allTextContents() { return this._values("(element) => element.textContent"); }
    async allInnerTexts() { return this._values(INNER_TEXT); }
    textContent() { return this._read("(element) => element.textContent"); }
    innerText() { return this._read(INNER_TEXT); }
    innerHTML() { return this._read("(element) => element.innerHTML"); }
    inputValue() {
      return this._read("(element) => { if (!('value' in element)) throw new Error('Not an <input>, <textarea> or <select> element'); return element.value; }");
    }
    getAttribute(name) { return this._read("(element) => element.getAttribute(" + literal(name) + ")"); }
    isChecked() { return this._read("(element) => element.checked ?? element.getAttribute('aria-checked') === 'true'"); }
    isDisabled() { return this._read("(element) => element.disabled === true || element.getAttribute('aria-disabled') === 'true'"); }
    async isEnabled() { return !(await this.isDisabled()); }
    isEditable() { return this._read("(element) => !element.disabled && !element.readOnly && (element.isContentEditable || 'value' in element)"); }
    async isVisible() {
      // As in Playwright, a locator that names nothing is not visible rather than an error.
      if ((await this.count()) === 0) return false;
      return this.first()._read("(element) => element.checkVisibility ? element.checkVisibility() : !!element.getClientRects().length");
    }
    async isHidden() { return !(await this.isVisible()); }
    boundingBox() {
      return this._read("(element) => { const r = element.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; }");
    }
    evaluate(fn, arg) { return this._read(applied(fn, arg, true)); }
    async evaluateAll(fn, arg) {
      const s = this._spec;
      if (s.stages) return evaluate("() => (" + source(fn) + ")(" + listOf(s.stages) + ", " + literal(arg) + ")");
      // A getBy… locator: the extension hands the function every element it names, once
      // (browser_evaluate's `all`); its text filters and pick are applied there first, by the
      // same functions as a CSS locator's.
      const body = "async (elements) => { const passes = " + passes + "; const picked = " + picked + "; " +
        "const kept = picked(elements.filter((el) => passes(" + literal(s.filters) + ", (" + INNER_TEXT + ")(el))), " + literal(s.pick) + "); " +
        "return JSON.stringify({ v: await (" + source(fn) + ")(kept, " + literal(arg) + ") }); }";
      const result = await call("browser_evaluate", { function: body, target: s.source, all: true });
      return JSON.parse(result.text).v;
    }
    async ariaSnapshot() {
      return (await call("browser_snapshot", { target: await this._target() })).text;
    }
    async waitFor(options) {
      const o = options || {};
      const state = o.state || "visible";
      const timeout = o.timeout === undefined ? DEFAULT_TIMEOUT : o.timeout;
      const started = Date.now();
      for (;;) {
        const n = await this.count();
        let met;
        if (state === "attached") met = n > 0;
        else if (state === "detached") met = n === 0;
        else if (state === "hidden") met = n === 0 || !(await this.isVisible());
        else met = n > 0 && (await this.isVisible());
        if (met) return;
        // Date reads whole seconds here, so the bound is counted in polls as well.
        if (Date.now() - started > timeout + 1000) throw new Error("Timeout " + timeout + "ms exceeded waiting for " + this + " to be " + state);
        await tools.browser_wait_for({ time: POLL_SECONDS });
      }
    }

    // --- Acting ----------------------------------------------------------------------------
    async click(options) {
      const o = options || {};
      const args = { target: await this._target() };
      if (o.button) args.button = o.button;
      if (o.modifiers) args.modifiers = o.modifiers;
      if (o.clickCount === 2) args.doubleClick = true;
      else if (o.clickCount) args.clickCount = o.clickCount;
      await call("browser_click", args);
    }
    async dblclick(options) { await this.click(Object.assign({}, options, { clickCount: 2 })); }
    async fill(value) { await call("browser_type", { target: await this._target(), text: String(value) }); }
    async clear() { await this.fill(""); }
    async pressSequentially(text) { await call("browser_type", { target: await this._target(), text: String(text), slowly: true }); }
    async type(text) { await this.pressSequentially(text); }
    async press(key) {
      await this._read("(element) => element.focus()");
      await call("browser_press_key", { key: key });
    }
    async hover() { await call("browser_hover", { target: await this._target() }); }
    async focus() { await this._read("(element) => element.focus()"); }
    async blur() { await this._read("(element) => element.blur()"); }
    async scrollIntoViewIfNeeded() { await this._read("(element) => element.scrollIntoView({ block: 'center', inline: 'center' })"); }
    async setChecked(checked) {
      if ((await this.isChecked()) !== !!checked) await this.click();
      if ((await this.isChecked()) !== !!checked) throw new Error("Clicking " + this + " did not change its state");
    }
    async check() { await this.setChecked(true); }
    async uncheck() { await this.setChecked(false); }
    async selectOption(values) {
      const list = (Array.isArray(values) ? values : [values]).map(function (v) {
        return v !== null && typeof v === "object" ? (v.value !== undefined ? v.value : v.label) : v;
      });
      const result = await call("browser_select_option", { target: await this._target(), values: list.map(String) });
      const data = result.data || {};
      return Array.isArray(data.selected) ? data.selected : list.map(String);
    }
    async selectText() { await this._read("(element) => { if (element.select) element.select(); else { const r = document.createRange(); r.selectNodeContents(element); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } }"); }
    async dispatchEvent(type) { await this._read("(element) => element.dispatchEvent(new Event(" + literal(type) + ", { bubbles: true }))"); }
    async screenshot(options) { return savedScreenshot("locator.screenshot()", options, await this._target()); }
    // Paths, read where the bridge runs (relative ones from its working directory), as
    // browser_file_upload reads them; a file's bytes given in the script, or clearing the
    // input, have no tool to carry them.
    async setInputFiles(files) {
      const list = Array.isArray(files) ? files : [files];
      if (list.length === 0) throw unsupported("setInputFiles([]) (clearing the input)", "set the files it should hold");
      if (!list.every(function (file) { return typeof file === "string"; })) {
        throw unsupported("setInputFiles() with a file's contents ({ name, mimeType, buffer })", "give paths of files where the bridge runs");
      }
      await call("browser_file_upload", { paths: list, target: await this._target() });
    }
    dragTo(other) {
      return (async () => {
        await call("browser_drag", { startTarget: await this._target(), endTarget: await other._target() });
      })();
    }
  }

  const DEFAULT_TIMEOUT = 10000;
  const POLL_SECONDS = 0.25;

  const byRole = function (role, options) {
    const o = options || {};
    const parts = [];
    if (o.name !== undefined) parts.push("name: " + quoted(o.name));
    for (const key of ["exact", "checked", "disabled", "selected", "expanded", "pressed"]) {
      if (typeof o[key] === "boolean") parts.push(key + ": " + o[key]);
    }
    if (typeof o.level === "number") parts.push("level: " + o.level);
    return "getByRole(" + JSON.stringify(String(role)) + (parts.length ? ", { " + parts.join(", ") + " }" : "") + ")";
  };
  const byText = function (method, text, options) {
    const exact = options && options.exact === true && !(text instanceof RegExp);
    return method + "(" + quoted(text) + (exact ? ", { exact: true }" : "") + ")";
  };
  // How many elements a getBy… locator names, now (as Playwright's count, which does not wait
  // for one to appear as an action does): a read of each match, or the extension's refusal
  // naming their count ("… matches 3000 elements …") or none ("No element matches …").
  const countOf = async function (target) {
    try {
      const result = await call("browser_evaluate", { function: "(element) => 1", target: target, each: true });
      return JSON.parse(result.text).length;
    } catch (e) {
      const several = /matches (\d+) elements/.exec(e.message);
      if (several) return Number(several[1]);
      if (/No element matches/.test(e.message)) return 0;
      throw e;
    }
  };
  const urlParts = function (href) {
    const m = /^([a-z][a-z0-9+.-]*:)(?:\/\/([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$/i.exec(href) || [];
    const host = m[2] || "";
    return Object.freeze({
      href: href, protocol: m[1] || "", host: host, hostname: host.replace(/:\d+$/, ""),
      port: (/:(\d+)$/.exec(host) || [])[1] || "", pathname: m[3] || "", search: m[4] || "",
      hash: m[5] || "", origin: (m[1] || "") + "//" + host, toString: function () { return href; },
    });
  };
  const fromSelector = function (selector) {
    const s = String(selector);
    return ENGINE.test(s)
      ? new Locator({ source: s, filters: [], engine: true })
      : new Locator({ stages: [{ css: s.replace(/^css=/, ""), filters: [], pick: undefined }] });
  };
  const fromCall = function (step) {
    return new Locator({ source: step, filters: [] });
  };
  // Playwright's FrameLocator (page.frameLocator(css), locator(css).contentFrame()): the
  // getBy… locators of a same-origin frame's page, found inside the frame element, which the
  // outline reads into; and CSS in the frame's document, `frameLocator(css).locator(css)` as
  // the extension takes it in a target (a strict locator, as Playwright's).
  const frameOf = function (frame) {
    const css = frame._plainCss();
    const named = function () {
      if (css === undefined) throw unsupported("a frame named by a chained, filtered or picked locator", "name the frame with one CSS selector, e.g. page.frameLocator('iframe#pay')");
    };
    const inside = function (what) {
      return function () {
        named();
        return frame[what].apply(frame, arguments);
      };
    };
    const locator = function (selector) {
      named();
      if (ENGINE.test(selector)) throw unsupported("frameLocator(…).locator(…) with a selector engine", "use CSS, or getBy… inside the frame");
      const inner = String(selector).replace(/^css=/, "");
      return new Locator({ source: "frameLocator(" + JSON.stringify(css) + ").locator(" + JSON.stringify(inner) + ")", filters: [] });
    };
    const refused = function (what) {
      return function () { throw unsupported("frameLocator(…)." + what, "a frame's elements are found with locator(css), getByRole, getByText, getByLabel, getByPlaceholder, getByAltText or getByTitle inside it, or by their refs (f1e3) from browser_snapshot"); };
    };
    return Object.freeze({
      getByRole: inside("getByRole"), getByText: inside("getByText"), getByLabel: inside("getByLabel"),
      getByPlaceholder: inside("getByPlaceholder"), getByAltText: inside("getByAltText"), getByTitle: inside("getByTitle"),
      locator: locator, frameLocator: refused("frameLocator(…)"),
      first: refused("first()"), last: refused("last()"), nth: refused("nth()"), owner: function () { return frame; },
    });
  };

  const keyboard = {
    press: async function (key) { await call("browser_press_key", { key: key }); },
    down: function () { throw unsupported("keyboard.down()", "use keyboard.press('Shift+A')"); },
    up: function () { throw unsupported("keyboard.up()", "use keyboard.press('Shift+A')"); },
    // Into the focused element, as a paste would put it.
    insertText: async function (text) {
      await evaluate("() => document.execCommand('insertText', false, " + literal(String(text)) + ")");
    },
    // A key press per character, into the focused element, in one call (browser_press_key's
    // `text`, kept out of its schema for scripts).
    type: async function (text) {
      if (String(text) !== "") await call("browser_press_key", { text: String(text) });
    },
  };
  const mouse = {
    click: async function (x, y, options) {
      const o = options || {};
      const args = { x: x, y: y };
      if (o.button) args.button = o.button;
      if (o.clickCount === 2) args.doubleClick = true;
      await call("browser_click", args);
    },
    dblclick: async function (x, y) { await call("browser_click", { x: x, y: y, doubleClick: true }); },
  };

  const page = {
    goto: async function (url) {
      const result = await call("browser_navigate", { url: String(url) });
      const data = result.data || {};
      const failed = data.httpError && typeof data.httpError === "object" ? data.httpError : null;
      // The document's status is known when it is an error; below 400 it reads 200.
      return Object.freeze({
        url: function () { return data.url || knownUrl; },
        ok: function () { return !failed; },
        status: function () { return failed ? failed.status : 200; },
        statusText: function () { return failed ? failed.statusText : "OK"; },
      });
    },
    url: function () { return knownUrl; },
    // Run before a script that reads page.url() (code.rs), so that it knows the URL of the
    // page it starts on: one call, and none on a session with no page yet.
    __readUrl: async function () {
      try {
        knownUrl = await evaluate("() => location.href");
      } catch (ignored) {
        // No tab yet: about:blank, as a new Playwright page starts.
      }
    },
    title: function () { return evaluate("() => document.title"); },
    content: function () {
      return evaluate("() => (document.doctype ? '<!DOCTYPE ' + document.doctype.name + '>' : '') + document.documentElement.outerHTML");
    },
    goBack: async function () { await call("browser_navigate_back", {}); return null; },
    goForward: async function () { await call("browser_navigate_forward", {}); return null; },
    reload: async function () {
      const here = await evaluate("() => location.href");
      await call("browser_navigate", { url: here });
      return null;
    },
    evaluate: function (fn, arg) { return evaluate(applied(fn, arg, false)); },
    $eval: function (selector, fn, arg) { return fromSelector(selector).first().evaluate(fn, arg); },
    $$eval: function (selector, fn, arg) { return fromSelector(selector).evaluateAll(fn, arg); },
    waitForTimeout: async function (ms) {
      // browser_wait_for waits at most 30 s a call.
      let left = Number(ms) / 1000;
      while (left > 0) {
        const step = Math.min(left, 30);
        await tools.browser_wait_for({ time: step });
        left -= step;
      }
    },
    // A navigation here answers once the page has settled (load, network and DOM quiet).
    waitForLoadState: async function () {},
    waitForURL: async function (wanted, options) {
      const o = options || {};
      const timeout = o.timeout === undefined ? DEFAULT_TIMEOUT : o.timeout;
      const started = Date.now();
      const matches = function (href) {
        if (wanted instanceof RegExp) return wanted.test(href);
        // The engine has no URL class: the predicate gets the parts Playwright's URL has.
        if (typeof wanted === "function") return !!wanted(urlParts(href));
        const text = String(wanted);
        if (!text.includes("*")) return href === text;
        const pattern = text.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*\*/g, "\u0000").replace(/\*/g, "[^/]*").replace(/\u0000/g, ".*");
        return new RegExp("^" + pattern + "$").test(href);
      };
      for (;;) {
        const href = await evaluate("() => location.href");
        knownUrl = href;
        if (matches(href)) return;
        if (Date.now() - started > timeout + 1000) throw new Error("Timeout " + timeout + "ms exceeded waiting for the URL to match " + wanted + " (it is " + href + ")");
        await tools.browser_wait_for({ time: POLL_SECONDS });
      }
    },
    waitForSelector: async function (selector, options) {
      const found = fromSelector(selector);
      await found.waitFor(options);
      return (options && (options.state === "hidden" || options.state === "detached")) ? null : found.first();
    },
    locator: function (selector) { return fromSelector(selector); },
    frameLocator: function (selector) { return frameOf(fromSelector(selector)); },
    getByRole: function (role, options) { return fromCall(byRole(role, options)); },
    getByText: function (text, options) { return fromCall(byText("getByText", text, options)); },
    getByLabel: function (text, options) { return fromCall(byText("getByLabel", text, options)); },
    getByPlaceholder: function (text, options) { return fromCall(byText("getByPlaceholder", text, options)); },
    getByAltText: function (text, options) { return fromCall(byText("getByAltText", text, options)); },
    getByTitle: function (text, options) { return fromCall(byText("getByTitle", text, options)); },
    getByTestId: function (id) { return page.locator("[data-testid=" + JSON.stringify(String(id)) + "]"); },
    click: function (selector, options) { return fromSelector(selector).click(options); },
    dblclick: function (selector, options) { return fromSelector(selector).dblclick(options); },
    fill: function (selector, value) { return fromSelector(selector).fill(value); },
    type: function (selector, text) { return fromSelector(selector).pressSequentially(text); },
    press: function (selector, key) { return fromSelector(selector).press(key); },
    hover: function (selector) { return fromSelector(selector).hover(); },
    focus: function (selector) { return fromSelector(selector).focus(); },
    check: function (selector) { return fromSelector(selector).check(); },
    uncheck: function (selector) { return fromSelector(selector).uncheck(); },
    selectOption: function (selector, values) { return fromSelector(selector).selectOption(values); },
    textContent: function (selector) { return fromSelector(selector).first().textContent(); },
    innerText: function (selector) { return fromSelector(selector).first().innerText(); },
    innerHTML: function (selector) { return fromSelector(selector).first().innerHTML(); },
    inputValue: function (selector) { return fromSelector(selector).first().inputValue(); },
    getAttribute: function (selector, name) { return fromSelector(selector).first().getAttribute(name); },
    isVisible: function (selector) { return fromSelector(selector).isVisible(); },
    isHidden: function (selector) { return fromSelector(selector).isHidden(); },
    isChecked: function (selector) { return fromSelector(selector).first().isChecked(); },
    isEnabled: function (selector) { return fromSelector(selector).first().isEnabled(); },
    isDisabled: function (selector) { return fromSelector(selector).first().isDisabled(); },
    setViewportSize: async function (size) { await call("browser_resize", { width: size.width, height: size.height }); },
    viewportSize: function () { return null; },
    emulateMedia: async function (options) { await call("browser_emulate_media", options || {}); },
    bringToFront: async function () {},
    screenshot: function (options) { return savedScreenshot("page.screenshot()", options); },
    pdf: function () { throw unsupported("page.pdf()", "call browser_pdf_save"); },
    keyboard: keyboard,
    mouse: mouse,
  };
  // An error names the script's line where the step was asked for: a step that awaited before
  // its tool call has lost the script's frame from its stack, so the stack of the call into
  // `page` is put in its place.
  const traced = function (fn) {
    return function (...args) {
      const origin = new Error("");
      const named = function (e) {
        if (e instanceof Error && !/\bcode:\d/.test(String(e.stack))) {
          try { e.stack = origin.stack; } catch (ignored) { /* a frozen error keeps its own */ }
        }
        return e;
      };
      let result;
      try {
        result = fn.apply(this, args);
      } catch (e) {
        throw named(e);
      }
      return result && typeof result.then === "function"
        ? result.then(undefined, function (e) { throw named(e); })
        : result;
    };
  };
  for (const key of Object.getOwnPropertyNames(Locator.prototype)) {
    if (key !== "constructor" && !key.startsWith("_") && typeof Locator.prototype[key] === "function") {
      Locator.prototype[key] = traced(Locator.prototype[key]);
    }
  }
  for (const holder of [page, keyboard, mouse]) {
    for (const key of Object.keys(holder)) {
      if (typeof holder[key] === "function") holder[key] = traced(holder[key]);
    }
  }
  const known = Object.keys(page).filter((key) => key !== "keyboard" && key !== "mouse" && !key.startsWith("__")).sort();
  // Anything else of Playwright's Page is refused by name, with what is here, rather than
  // failing as "not a function".
  Object.freeze(keyboard);
  Object.freeze(mouse);
  const proxied = new Proxy(Object.freeze(page), {
    get: function (target, key) {
      if (typeof key !== "string" || key in target || key === "then" || key === "toJSON") return target[key];
      throw unsupported("page." + key, "page here has " + known.join(", ") + ", keyboard (press, type, insertText) and mouse (click, dblclick)");
    },
  });

  // --- The globals Playwright MCP's scripts have that need no way out ------------------------
  // Given to browser_run_code_unsafe's scripts only (code_execution's global object stays as
  // it is documented). A timer is a browser_wait_for, so a wait is a tool call, bounded as one.
  const timers = new Map();
  let lastTimer = 0;
  const setTimeout = function (fn, ms, ...args) {
    const id = ++lastTimer;
    timers.set(id, true);
    const wait = Math.max(0, Number(ms) || 0) / 1000;
    const waited = wait > 0 ? page.waitForTimeout(wait * 1000) : Promise.resolve();
    waited.then(function () {
      if (!timers.delete(id)) return;
      if (typeof fn === "function") fn(...args);
    });
    return id;
  };
  const clearTimeout = function (id) {
    timers.delete(id);
  };

  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const btoa = function (text) {
    const s = String(text);
    let out = "";
    for (let i = 0; i < s.length; i += 3) {
      const codes = [s.charCodeAt(i), s.charCodeAt(i + 1), s.charCodeAt(i + 2)];
      if (codes.some((c) => c > 255)) throw new Error("btoa: the string has characters outside Latin-1");
      const n = (codes[0] << 16) | ((codes[1] || 0) << 8) | (codes[2] || 0);
      out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] +
        (i + 1 < s.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < s.length ? B64[n & 63] : "=");
    }
    return out;
  };
  const atob = function (data) {
    const s = String(data).replace(/[\t\n\f\r ]/g, "").replace(/=+$/, "");
    if (/[^A-Za-z0-9+/]/.test(s) || s.length % 4 === 1) throw new Error("atob: not base64");
    let out = "";
    for (let i = 0; i < s.length; i += 4) {
      const n = (B64.indexOf(s[i]) << 18) | (B64.indexOf(s[i + 1]) << 12) |
        ((i + 2 < s.length ? B64.indexOf(s[i + 2]) : 0) << 6) | (i + 3 < s.length ? B64.indexOf(s[i + 3]) : 0);
      out += String.fromCharCode((n >> 16) & 255);
      if (i + 2 < s.length) out += String.fromCharCode((n >> 8) & 255);
      if (i + 3 < s.length) out += String.fromCharCode(n & 255);
    }
    return out;
  };

  class URLSearchParams {
    constructor(init) {
      this._pairs = [];
      if (init instanceof URLSearchParams) this._pairs = init._pairs.map((p) => p.slice());
      else if (init && typeof init === "object") {
        for (const [k, v] of (Array.isArray(init) ? init : Object.entries(init))) this._pairs.push([String(k), String(v)]);
      } else if (init !== undefined) {
        for (const part of String(init).replace(/^\?/, "").split("&")) {
          if (!part) continue;
          const at = part.indexOf("=");
          const decode = (t) => decodeURIComponent(t.replace(/\+/g, " "));
          this._pairs.push(at < 0 ? [decode(part), ""] : [decode(part.slice(0, at)), decode(part.slice(at + 1))]);
        }
      }
    }
    get(name) { const p = this._pairs.find((q) => q[0] === String(name)); return p ? p[1] : null; }
    getAll(name) { return this._pairs.filter((q) => q[0] === String(name)).map((q) => q[1]); }
    has(name) { return this._pairs.some((q) => q[0] === String(name)); }
    append(name, value) { this._pairs.push([String(name), String(value)]); }
    set(name, value) {
      const at = this._pairs.findIndex((q) => q[0] === String(name));
      this.delete(name);
      this._pairs.splice(at < 0 ? this._pairs.length : at, 0, [String(name), String(value)]);
    }
    delete(name) { this._pairs = this._pairs.filter((q) => q[0] !== String(name)); }
    forEach(fn) { for (const [k, v] of this._pairs) fn(v, k, this); }
    keys() { return this._pairs.map((p) => p[0])[Symbol.iterator](); }
    values() { return this._pairs.map((p) => p[1])[Symbol.iterator](); }
    entries() { return this._pairs.map((p) => p.slice())[Symbol.iterator](); }
    [Symbol.iterator]() { return this.entries(); }
    get size() { return this._pairs.length; }
    toString() {
      const encode = (t) => encodeURIComponent(t).replace(/%20/g, "+");
      return this._pairs.map(([k, v]) => encode(k) + "=" + encode(v)).join("&");
    }
  }

  // Enough of the WHATWG URL for scripts: absolute URLs, and relative ones against a base.
  const URL_PARTS = /^([a-z][a-z0-9+.-]*:)(?:\/\/(?:([^:@/?#]*)(?::([^@/?#]*))?@)?([^:/?#]*)(?::(\d*))?)?([^?#]*)(\?[^#]*)?(#.*)?$/i;
  const withoutDots = function (path) {
    const out = [];
    for (const segment of path.split("/").slice(1)) {
      if (segment === "..") { if (out.length) out.pop(); } else if (segment !== ".") out.push(segment);
    }
    const last = path.split("/").pop();
    return "/" + out.join("/") + (last === "." || last === ".." ? "/" : "");
  };
  class URL {
    constructor(url, base) {
      let text = String(url).trim();
      if (!URL_PARTS.test(text) || !/^[a-z][a-z0-9+.-]*:/i.test(text)) {
        if (base === undefined) throw new TypeError("Invalid URL: " + text);
        const b = new URL(base);
        if (text.startsWith("//")) text = b.protocol + text;
        else if (text.startsWith("/")) text = b.origin + text;
        else if (text.startsWith("?")) text = b.origin + b.pathname + text;
        else if (text.startsWith("#")) text = b.origin + b.pathname + b.search + text;
        else if (text === "") text = b.origin + b.pathname + b.search;
        else text = b.origin + b.pathname.replace(/[^/]*$/, "") + text;
      }
      const m = URL_PARTS.exec(text);
      if (!m) throw new TypeError("Invalid URL: " + text);
      this.protocol = m[1].toLowerCase();
      this.username = m[2] || "";
      this.password = m[3] || "";
      this.hostname = (m[4] || "").toLowerCase();
      const defaults = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443" };
      this.port = m[5] && m[5] !== defaults[this.protocol] ? m[5] : "";
      const special = this.protocol in defaults || this.protocol === "file:";
      this.pathname = special ? withoutDots(m[6] || "/") : m[6] || "";
      this.searchParams = new URLSearchParams(m[7] || "");
      this._search = m[7] && m[7] !== "?" ? m[7] : "";
      this._parsed = this.searchParams.toString();
      this.hash = m[8] && m[8] !== "#" ? m[8] : "";
    }
    get host() { return this.hostname + (this.port ? ":" + this.port : ""); }
    get origin() { return this.protocol + "//" + this.host; }
    // As written, until searchParams is changed.
    get search() {
      const q = this.searchParams.toString();
      if (q === this._parsed) return this._search;
      return q ? "?" + q : "";
    }
    get href() {
      const auth = this.username ? this.username + (this.password ? ":" + this.password : "") + "@" : "";
      return this.protocol + "//" + auth + this.host + this.pathname + this.search + this.hash;
    }
    toString() { return this.href; }
    toJSON() { return this.href; }
  }

  const globals = Object.freeze({ setTimeout, clearTimeout, URL, URLSearchParams, atob, btoa });
  return [proxied, globals];
})
