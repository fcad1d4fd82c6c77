/**
 * Playwright's ways of naming an element, for the `selector` (the bridge's `target`) of every
 * element command: its locators as a model writes them (`getByRole('link', { name: 'Docs' })`,
 * chained, with `.first()` or `.nth(1)`), and its selector engines (`role=button[name="Save"]`,
 * `text=Save`, `internal:role=…`, `>>`). Playwright MCP takes them in `target` and prints them in
 * its answers, so models write them.
 *
 * They are resolved against the snapshot's own tree (snapshot.js), with its roles and names, so
 * a locator finds what the outline shows and the command then acts on that node's ref. As in
 * Playwright, a locator must name one element: several matches are refused with their refs.
 *
 * Plain CSS never reaches this (see {@link isLocator}); `xpath=` and `//` are resolved on the
 * page (`findElementThen`).
 *
 * Pure: no `chrome.*`, no DOM, so Node tests it on trees.
 */

/** A step of a locator: what it keeps of the nodes the step before kept (or of the page). */
/**
 * @typedef {{kind: 'role', role: string, name?: Matcher, icon?: string, level?: number, states?: Record<string, boolean>}
 *   | {kind: 'text', text: Matcher}
 *   | {kind: 'label', text: Matcher}
 *   | {kind: 'placeholder', text: Matcher}
 *   | {kind: 'alt', text: Matcher}
 *   | {kind: 'title', text: Matcher}
 *   | {kind: 'pick', which: 'first' | 'last' | number}
 *   | {kind: 'filter', hasText?: Matcher, hasNotText?: Matcher, has?: Step[], hasNot?: Step[]}} Step
 * @typedef {{exact: boolean, text?: string, regex?: {source: string, flags: string}}} Matcher
 */

/** Roles a label names (`getByLabel`): the form controls. */
const LABELLED = new Set(['textbox', 'searchbox', 'combobox', 'listbox', 'checkbox', 'radio', 'switch', 'spinbutton', 'slider']);

/** How many matches a refusal lists. */
const LISTED = 5;

/**
 * Whether `selector` is one of Playwright's locators or selector engines rather than CSS. None
 * of these is valid CSS, so a CSS selector is never taken for one.
 *
 * @param {string} selector
 */
export function isLocator(selector) {
  const s = selector.trim();
  return /^(?:page\.)?(?:getBy(?:Role|Text|Label|Placeholder|AltText|Title|TestId)|locator|frameLocator)\s*\(/.test(s) ||
      /^(?:internal:)?(?:role|text|label)=/.test(s) || /^css=/.test(s) || /\s>>\s/.test(s) || outlineStep(s.split(/\s+>>\s+/)[0]) !== null;
}

/**
 * An element as the outline prints it, role and quoted name (`button "Save"`, `- link "Docs"`),
 * copied by a model from a snapshot's line: the element of that role with exactly that name.
 * (A type selector followed by a string is no CSS, so no selector is taken for one.)
 */
const OUTLINE_LINE = /^(?:-\s+)?([a-z]+)\s+("(?:[^"\\]|\\.)*")$/;

/**
 * A nameless control as the outline tells it by its icon, `button [icon=delete]` (snapshot.js
 * `iconOf`): the element of that role showing that icon. (Read as CSS, it asked for an element
 * with an `icon` attribute inside a button, which no page has: Vuetify's row of delete buttons
 * named so matched nothing.)
 */
const ICON_LINE = /^(?:-\s+)?([a-z]+)\s+\[icon=([^\]\s][^\]]*)\]$/;

/** The step an outline line stands for, or null. */
function outlineStep(part) {
  const line = OUTLINE_LINE.exec(part);
  if (line)
    return { kind: 'role', role: line[1], name: { exact: true, text: JSON.parse(line[2]) } };
  const icon = ICON_LINE.exec(part);
  return icon ? { kind: 'role', role: icon[1], icon: icon[2] } : null;
}

/** An error a model can act on: `message` says what was wrong with the locator. */
export class LocatorError extends Error {}

/** A locator that names nothing yet: what may come a moment later (a suggestion list, a panel). */
export class NothingMatches extends LocatorError {}

/**
 * The locator as steps, or the CSS it stands for. Inside a frame (`frameLocator(css)`, or
 * `locator(css).contentFrame()`): `getBy…` steps `within` the frame's CSS, or CSS in the frame's
 * document (`{frame, css, pick?}`). CSS with a pick (`locator(css).nth(1)`, `css >> nth=1`) is
 * `{frame: null, css, pick}`: one of its matches in the page's document.
 *
 * @param {string} selector
 * @returns {{steps: Step[], within?: string} | {css: string} | {frame: string | null, css: string, pick?: Step}}
 * @throws {LocatorError}
 */
export function parseLocator(selector) {
  const s = selector.trim();
  if (/^(?:page\.)?(?:getBy|locator\s*\(|frameLocator\s*\()/.test(s))
    return fromCalls(s);
  const parts = s.split(/\s+>>\s+/);
  const steps = [];
  for (const [index, part] of parts.entries()) {
    const step = engineStep(part.trim());
    if ('css' in step) {
      // CSS, or CSS >> nth=… (one of its matches by its place).
      const nth = parts.length === 2 && index === 0 ? engineStep(parts[1].trim()) : null;
      if (nth?.kind === 'pick')
        return { frame: null, css: step.css, pick: nth };
      if (parts.length > 1)
        throw new LocatorError(`"${part}" (CSS) cannot be chained with >> here, but for a pick (>> nth=1); use a ref from browser_snapshot`);
      return { css: step.css };
    }
    if (index === 0 && step.kind === 'pick')
      throw new LocatorError(`"${part}" needs a locator before it`);
    steps.push(step);
  }
  return { steps };
}

/** One `>>` part: `role=…`, `text=…`, `label=…`, `nth=…`, `css=…` (with or without `internal:`). */
function engineStep(part) {
  const outlined = outlineStep(part);
  if (outlined)
    return outlined;
  const engine = /^(?:internal:)?(role|text|label|nth|css|attr|testid)=([\s\S]*)$/.exec(part);
  if (!engine)
    return { css: part };
  const [, name, body] = engine;
  switch (name) {
    case 'css':
      return { css: body };
    case 'nth': {
      const n = Number(body);
      if (!Number.isInteger(n))
        throw new LocatorError(`nth=${body} needs a whole number`);
      return { kind: 'pick', which: n < 0 ? 'last' : n };
    }
    case 'text':
      return { kind: 'text', text: engineText(body) };
    case 'label':
      return { kind: 'label', text: engineText(body) };
    case 'role': {
      const role = /^([a-z]+)/.exec(body);
      if (!role)
        throw new LocatorError(`role=${body} needs a role, such as role=button[name="Save"]`);
      const step = { kind: 'role', role: role[1] };
      const attrs = body.slice(role[1].length);
      const attr = /\[\s*([a-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\]]*)\s*([is])?\s*\]/g;
      for (const [, key, raw, flag] of attrs.matchAll(attr)) {
        const value = raw.startsWith('"') ? JSON.parse(raw) : raw.trim();
        if (key === 'name')
          step.name = { exact: flag === 's', text: value };
        else if (key === 'level')
          step.level = Number(value);
      }
      return step;
    }
    default:
      throw new LocatorError(`${part} is not supported here; use a ref from browser_snapshot`);
  }
}

/** `Save`, `"Save"` (exact), `"Save"i` / `"Save"s`, or `/save/i`. */
function engineText(body) {
  const regex = /^\/(.*)\/([a-z]*)$/.exec(body);
  if (regex)
    return { exact: false, regex: { source: regex[1], flags: regex[2] } };
  const quoted = /^("(?:[^"\\]|\\.)*")([is])?$/.exec(body);
  if (quoted)
    return { exact: quoted[2] !== 'i', text: JSON.parse(quoted[1]) };
  return { exact: false, text: body };
}

/**
 * `getByRole('link', { name: 'Docs' }).first()` and its kin as steps.
 *
 * @param {string} source
 */
function fromCalls(source) {
  const tokens = tokenize(source);
  let at = 0;
  const next = () => tokens[at++];
  const peek = () => tokens[at];
  const expect = (type, what) => {
    const token = next();
    if (!token || token.type !== type || (what !== undefined && token.value !== what))
      throw new LocatorError(`could not read the locator ${JSON.stringify(source)} near ${token ? JSON.stringify(String(token.value)) : 'its end'}`);
    return token;
  };
  const value = () => {
    const token = next();
    if (!token)
      throw new LocatorError(`the locator ${JSON.stringify(source)} ends too soon`);
    if (['string', 'number', 'regex'].includes(token.type))
      return token;
    if (token.type === 'word' && (token.value === 'true' || token.value === 'false'))
      return { type: 'bool', value: token.value === 'true' };
    // A locator inside the options (filter's `has: page.getByRole('button')`): its steps.
    if (token.type === 'word') {
      at--;
      return { type: 'locator', value: innerLocator() };
    }
    if (token.type === 'punct' && token.value === '{') {
      const object = {};
      while (peek() && !(peek().type === 'punct' && peek().value === '}')) {
        const key = next();
        if (!key || !['word', 'string'].includes(key.type))
          throw new LocatorError(`could not read the options of ${JSON.stringify(source)}`);
        expect('punct', ':');
        object[key.value] = value();
        if (peek()?.type === 'punct' && peek().value === ',')
          next();
      }
      expect('punct', '}');
      return { type: 'object', value: object };
    }
    throw new LocatorError(`could not read the locator ${JSON.stringify(source)} near ${JSON.stringify(String(token.value))}`);
  };
  /** `page.`, where a chain may start with it. */
  const skipPage = () => {
    if (peek()?.type === 'word' && peek().value === 'page') {
      next();
      expect('punct', '.');
    }
  };
  /** One call of a chain: its method's name and its arguments. */
  function call() {
    const method = expect('word').value;
    expect('punct', '(');
    const args = [];
    while (peek() && !(peek().type === 'punct' && peek().value === ')')) {
      args.push(value());
      if (peek()?.type === 'punct' && peek().value === ',')
        next();
    }
    expect('punct', ')');
    return { method, args };
  }
  /** A chain of getBy… calls inside another locator's options (`has:`), as its steps. */
  function innerLocator() {
    skipPage();
    const inner = [];
    for (;;) {
      const { method, args } = call();
      const step = callStep(method, args, source);
      if ('css' in step || step.kind === 'text')
        throw new LocatorError(`inside filter(…), has: takes getByRole, getByLabel, getByPlaceholder, getByAltText or getByTitle (with .first(), .filter(…)), not ${method}(…)`);
      if (inner.length === 0 && (step.kind === 'pick' || step.kind === 'filter'))
        throw new LocatorError(`has: in ${JSON.stringify(source)} needs a locator before .${method}(…)`);
      inner.push(step);
      if (!(peek()?.type === 'punct' && peek().value === '.'))
        return inner;
      next();
    }
  }
  skipPage();
  const steps = [];
  let css;
  /** The CSS of the frame the locator went into, if it did. */
  let frame;
  for (;;) {
    const { method, args } = call();
    if (method === 'frameLocator' || method === 'contentFrame') {
      // Into a frame: frameLocator(css) at the start, or locator(css).contentFrame().
      const starts = method === 'frameLocator' ? steps.length === 0 && css === undefined : steps.length === 0 && css !== undefined;
      if (!starts || frame !== undefined)
        throw new LocatorError(`${method}(…) goes into a frame only as frameLocator(css) at the start or locator(css).contentFrame(); use a ref from browser_snapshot`);
      if (method === 'frameLocator' && args[0]?.type !== 'string')
        throw new LocatorError(`frameLocator(…) needs the frame's CSS selector in ${JSON.stringify(source)}`);
      frame = method === 'frameLocator' ? args[0].value.replace(/^css=/, '') : css;
      css = undefined;
    } else {
      const step = callStep(method, args, source);
      if ('css' in step) {
        if (steps.length || css !== undefined)
          throw new LocatorError(`${method}(…) can only start a locator${frame !== undefined ? ' in a frame' : ''} here; use a ref from browser_snapshot`);
        css = step.css;
      } else {
        steps.push(step);
      }
    }
    if (!peek() || (peek().type === 'punct' && peek().value === ';'))
      break;
    expect('punct', '.');
  }
  if (frame !== undefined) {
    // CSS in the frame's document, at most one pick after it; or getBy… inside the frame.
    if (css !== undefined) {
      if (steps.length > 1 || steps.some(step => step.kind !== 'pick'))
        throw new LocatorError(`${JSON.stringify(source)}: in a frame, locator(css) can be followed by .first(), .last() or .nth() only; use getBy… inside the frame, or a ref from browser_snapshot`);
      return { frame, css, ...(steps.length ? { pick: steps[0] } : {}) };
    }
    if (steps.length === 0)
      throw new LocatorError(`${JSON.stringify(source)} names a frame, not an element in it: add .locator(css) or a getBy… call`);
    return { steps, within: frame };
  }
  // locator(css).filter(…): the selector's matches themselves, those the filter keeps, and
  // what follows taken from them.
  if (css !== undefined && steps[0]?.kind === 'filter')
    return { frame: null, css, steps };
  // locator(css).first() (or .last(), .nth(i)): one of the selector's matches, by its place.
  if (css !== undefined && steps[0]?.kind === 'pick') {
    if (steps.length > 1)
      throw new LocatorError(`${JSON.stringify(source)}: after locator(css).${steps[0].which === 'first' ? 'first()' : steps[0].which === 'last' ? 'last()' : 'nth(…)'} only that pick is understood here; use a ref from browser_snapshot`);
    return { frame: null, css, pick: steps[0] };
  }
  // locator(css).getBy…(…): the steps are taken inside the elements the selector names.
  if (css !== undefined)
    return steps.length ? { steps, within: css } : { css };
  if (steps[0]?.kind === 'pick' || steps[0]?.kind === 'filter')
    throw new LocatorError(`${JSON.stringify(source)} needs a locator before .first(), .last(), .nth() or .filter()`);
  return { steps };
}

/** One call of a locator chain as a step (or the CSS of `locator(…)` and `getByTestId(…)`). */
function callStep(method, args, source) {
  const text = (index = 0) => {
    const arg = args[index];
    if (!arg || !['string', 'regex'].includes(arg.type))
      throw new LocatorError(`${method}(…) needs a text or a regular expression in ${JSON.stringify(source)}`);
    const exact = args[index + 1]?.type === 'object' && args[index + 1].value.exact?.value === true;
    return arg.type === 'regex' ? { exact: false, regex: arg.value } : { exact, text: arg.value };
  };
  switch (method) {
    case 'getByRole': {
      if (args[0]?.type !== 'string')
        throw new LocatorError(`getByRole(…) needs a role, such as getByRole('button', { name: 'Save' })`);
      const step = { kind: 'role', role: args[0].value };
      const options = args[1]?.type === 'object' ? args[1].value : {};
      if (options.name) {
        const exact = options.exact?.value === true;
        step.name = options.name.type === 'regex' ? { exact: false, regex: options.name.value } : { exact, text: String(options.name.value) };
      }
      if (options.level)
        step.level = Number(options.level.value);
      // The states the outline shows: [checked], [disabled], [selected], [expanded=true], [pressed=true].
      for (const state of ['checked', 'disabled', 'selected', 'expanded', 'pressed']) {
        if (options[state]?.type === 'bool')
          (step.states ??= {})[state] = options[state].value;
      }
      return step;
    }
    case 'getByText':
      return { kind: 'text', text: text() };
    case 'getByLabel':
      return { kind: 'label', text: text() };
    case 'getByPlaceholder':
      return { kind: 'placeholder', text: text() };
    case 'getByAltText':
      return { kind: 'alt', text: text() };
    case 'getByTitle':
      return { kind: 'title', text: text() };
    case 'getByTestId':
      if (args[0]?.type !== 'string')
        throw new LocatorError('getByTestId(…) needs the test id');
      return { css: `[data-testid=${JSON.stringify(args[0].value)}]` };
    case 'locator':
      if (args[0]?.type !== 'string')
        throw new LocatorError('locator(…) needs a selector');
      return { css: args[0].value.replace(/^css=/, '') };
    case 'filter': {
      // Playwright's filter: the elements whose text has (or has not) these words, or that
      // hold (or do not hold) an element a locator names. `visible` is what the outline shows.
      const options = args[0]?.type === 'object' ? args[0].value : null;
      if (!options)
        throw new LocatorError(`filter(…) needs its options, such as filter({ hasText: 'Product 2' }), in ${JSON.stringify(source)}`);
      const step = { kind: 'filter' };
      for (const key of ['hasText', 'hasNotText']) {
        const option = options[key];
        if (option && !['string', 'regex'].includes(option.type))
          throw new LocatorError(`filter({ ${key} }) takes a text or a regular expression in ${JSON.stringify(source)}`);
        if (option)
          step[key] = option.type === 'regex' ? { exact: false, regex: option.value } : { exact: false, text: option.value };
      }
      for (const key of ['has', 'hasNot']) {
        const option = options[key];
        if (option && option.type !== 'locator')
          throw new LocatorError(`filter({ ${key} }) takes a locator, such as page.getByRole('button'), in ${JSON.stringify(source)}`);
        if (option)
          step[key] = option.value;
      }
      const unknown = Object.keys(options).filter(key => !['hasText', 'hasNotText', 'has', 'hasNot', 'visible'].includes(key));
      if (unknown.length)
        throw new LocatorError(`filter(…) takes hasText, hasNotText, has, hasNot and visible, not ${unknown.join(', ')}`);
      return step;
    }
    case 'first':
      return { kind: 'pick', which: 'first' };
    case 'last':
      return { kind: 'pick', which: 'last' };
    case 'nth': {
      const n = args[0]?.type === 'number' ? args[0].value : NaN;
      if (!Number.isInteger(n))
        throw new LocatorError('nth(…) needs a whole number');
      return { kind: 'pick', which: n < 0 ? 'last' : n };
    }
    default:
      throw new LocatorError(`${method}(…) is not supported here; use getByRole, getByText, getByLabel, ` +
          'getByPlaceholder, getByAltText, getByTitle, getByTestId, locator, filter, first, last or nth, or a ref from browser_snapshot');
  }
}

/** Words, strings, numbers, regular expressions and punctuation of a locator chain. */
function tokenize(source) {
  const tokens = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '\'' || c === '"' || c === '`') {
      let j = i + 1;
      let text = '';
      while (j < source.length && source[j] !== c) {
        if (source[j] === '\\' && j + 1 < source.length) {
          const escaped = source[j + 1];
          text += { n: '\n', t: '\t' }[escaped] ?? escaped;
          j += 2;
        } else {
          text += source[j++];
        }
      }
      if (j >= source.length)
        throw new LocatorError(`a string in ${JSON.stringify(source)} is not closed`);
      tokens.push({ type: 'string', value: text });
      i = j + 1;
    } else if (c === '/' && !['word', 'string', 'number'].includes(tokens.at(-1)?.type) &&
        !(tokens.at(-1)?.type === 'punct' && tokens.at(-1).value === ')')) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && (source[j] !== '/' || inClass)) {
        if (source[j] === '\\')
          j++;
        else if (source[j] === '[')
          inClass = true;
        else if (source[j] === ']')
          inClass = false;
        j++;
      }
      if (j >= source.length)
        throw new LocatorError(`a regular expression in ${JSON.stringify(source)} is not closed`);
      const flags = /^[a-z]*/.exec(source.slice(j + 1))[0];
      tokens.push({ type: 'regex', value: { source: source.slice(i + 1, j), flags } });
      i = j + 1 + flags.length;
    } else if (/[0-9-]/.test(c)) {
      const number = /^-?\d+(?:\.\d+)?/.exec(source.slice(i));
      if (!number)
        throw new LocatorError(`could not read ${JSON.stringify(source)} near ${JSON.stringify(c)}`);
      tokens.push({ type: 'number', value: Number(number[0]) });
      i += number[0].length;
    } else if (/[A-Za-z_$]/.test(c)) {
      const word = /^[A-Za-z_$][\w$]*/.exec(source.slice(i))[0];
      tokens.push({ type: 'word', value: word });
      i += word.length;
    } else if ('.(),{}:;'.includes(c)) {
      tokens.push({ type: 'punct', value: c });
      i++;
    } else {
      throw new LocatorError(`could not read ${JSON.stringify(source)} near ${JSON.stringify(c)}`);
    }
  }
  return tokens;
}

/**
 * Whether `text` matches: a regular expression tests it; `exact` wants all of it (case and
 * all), otherwise a part of it in any case, as Playwright's locators match (white space read
 * as one space, trimmed). Self-contained: `getByText` runs it on the page too (its source is
 * handed to `textMatches` in page-scripts.js).
 *
 * @param {Matcher} matcher
 * @param {string | undefined} text
 */
export function matchesText(matcher, text) {
  if (text === undefined)
    return false;
  // Without the characters the outline leaves out (snapshot.js `UNSEEN`), so a name read there
  // finds its element.
  const normal = value => String(value ?? '').replace(/[\u200b\u2060\ufeff]/g, '').replace(/\s+/g, ' ').trim();
  const plain = normal(text);
  if (matcher.regex)
    return new RegExp(matcher.regex.source, matcher.regex.flags.replace(/[gy]/g, '')).test(plain);
  const wanted = normal(matcher.text);
  return matcher.exact ? plain === wanted : plain.toLowerCase().includes(wanted.toLowerCase());
}

/**
 * The nodes of `tree` that `steps` keep, in document order. `getByText` is not among them: text
 * is found on the page, where the element holding it is (`textMatches` in page-scripts.js), since
 * the tree leaves out elements without a role.
 *
 * @param {object[]} tree the snapshot's tree (snapshot.js `captureTree`)
 * @param {Step[]} steps from {@link parseLocator}, none of them `text`
 * @param {Set<string>} [scope] only nodes with these refs are found by the first step (the
 *   elements inside what `locator(css)` named)
 * @param {object[]} [start] the nodes the steps start from, as if a step before had found
 *   them (what `locator(css)` named, for its `.filter(…)`)
 * @returns {object[]}
 */
export function applySteps(tree, steps, scope, start) {
  /** Every node below `roots` (not the roots), in document order. */
  const below = roots => {
    const out = [];
    const walk = nodes => {
      for (const node of nodes) {
        if (node.role === undefined)
          continue;
        out.push(node);
        walk(node.children || []);
      }
    };
    for (const root of roots)
      walk(root.children || []);
    return out;
  };
  let found = start ?? null;
  for (const step of steps) {
    if (step.kind === 'pick') {
      found = pick(found ?? [], step);
      continue;
    }
    if (step.kind === 'filter') {
      found = (found ?? []).filter(node => {
        const text = textOf(node);
        return (!step.hasText || matchesText(step.hasText, text)) &&
            (!step.hasNotText || !matchesText(step.hasNotText, text)) &&
            (!step.has || applySteps(node.children || [], step.has).length > 0) &&
            (!step.hasNot || applySteps(node.children || [], step.hasNot).length === 0);
      });
      continue;
    }
    let pool = found === null ? below([{ children: tree }]) : below(found);
    if (found === null && scope)
      pool = pool.filter(node => scope.has(node.ref));
    found = pool.filter(node => {
      // A name the outline does not print (an image link's, shown on its image) still names it.
      const name = node.name ?? node.altName;
      switch (step.kind) {
        case 'role':
          return node.role === step.role && (!step.name || matchesText(step.name, name ?? contentName(node))) &&
              (!step.icon || node.icon === step.icon) &&
              (step.level === undefined || (node.states || []).includes(`level=${step.level}`)) &&
              Object.entries(step.states ?? {}).every(([state, wanted]) => hasState(node, state) === wanted);
        // A form control by its name; any other element only by a label its author gave it
        // (aria-label, aria-labelledby): a date picker's day, an icon button's "Close".
        case 'label':
          return (LABELLED.has(node.role) || node.labelled) && matchesText(step.text, name);
        case 'placeholder':
          return matchesText(step.text, node.placeholder);
        case 'alt':
          return node.role === 'img' && matchesText(step.text, node.name);
        case 'title':
          return matchesText(step.text, node.name);
        default:
          throw new LocatorError(`a ${step.kind} step is not resolved in the tree`);
      }
    });
  }
  return found ?? [];
}

/** Roles whose name is their content when nothing else names them, where the outline prints
 * none: a row (`getByRole('row', { name: /A-1002/ })`, as Playwright matches it; its cells
 * say the words, and its line would only repeat them). */
const NAMED_BY_CONTENT = new Set(['row', 'rowgroup']);

/** @param {any} node */
function contentName(node) {
  return NAMED_BY_CONTENT.has(node.role) ? textOf(node) : undefined;
}

/**
 * What a node shows, for filter's `hasText`: its name, value and the text and names below it
 * (Playwright matches the element's text content; the tree holds what a person reads of it).
 */
function textOf(node) {
  const parts = [];
  const walk = item => {
    for (const part of [item.name, item.value, item.text]) {
      if (part)
        parts.push(part);
    }
    for (const kid of item.children || [])
      walk(kid);
  };
  walk(node);
  return parts.join(' ');
}

/** Whether the outline shows `state` on `node`: `[checked]` or `[expanded=true]`. */
function hasState(node, state) {
  const states = node.states || [];
  return states.includes(state) || states.includes(`${state}=true`);
}

/**
 * `.first()`, `.last()` or `.nth(i)` of `list`.
 *
 * @template T
 * @param {T[]} list
 * @param {{which: 'first' | 'last' | number}} step
 * @returns {T[]}
 */
export function pick(list, step) {
  const picked = step.which === 'first' ? list[0] : step.which === 'last' ? list.at(-1) : list[step.which];
  return picked ? [picked] : [];
}

/**
 * The one element a locator named, as `{ref}`; none, or several (as Playwright's strict
 * locators), is refused, the several listed with their refs.
 *
 * @param {{ref?: string, byLabel?: string, role?: string, name?: string, altName?: string}[]} found
 * @param {string} source the locator as given
 * @param {number} [total] how many matched, when `found` holds only the first of them
 * @returns {{ref: string}}
 * @throws {LocatorError}
 */
export function theOne(found, source, total) {
  // A checkbox or radio with no box of its own is clicked by the label that draws it.
  const named = found.filter(node => node.ref || node.byLabel).map(node => (node.ref ? node : { ...node, ref: node.byLabel }));
  const count = Math.max(total ?? 0, named.length);
  const boxless = found.find(node => !node.ref && ['checkbox', 'radio'].includes(node.role));
  if (named.length === 0 && boxless) {
    const name = boxless.name ?? boxless.altName;
    throw new LocatorError(`${source} names ${boxless.role}${name ? ` ${JSON.stringify(name)}` : ''}, which the page draws ` +
        'with no box of its own to click; click what the page draws for it (a label, an icon beside it: browser_snapshot shows it)');
  }
  if (named.length === 0)
    throw new NothingMatches(`No element matches ${source}; take a snapshot (browser_snapshot) to see the page's elements, or use browser_find`);
  if (count > 1) {
    const listed = named.slice(0, LISTED).map(node => {
      const name = node.name ?? node.altName;
      return `- ${node.role}${name ? ` ${JSON.stringify(name)}` : ''} [ref=${node.ref}]`;
    });
    throw new LocatorError(`${source} matches ${count} elements; name one (Playwright's locators are strict): ` +
        `use one's ref, or add .first(), .last() or .nth(i)\n${listed.join('\n')}` +
        `${count > LISTED ? `\n… and ${count - LISTED} more` : ''}`);
  }
  return { ref: named[0].ref };
}
