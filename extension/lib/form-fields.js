/**
 * `fillForm`: how each field of Playwright MCP's `browser_fill_form` becomes an action on one
 * element, and the page functions that set a field and that hand files to a file input.
 *
 * The page functions are shipped as source text like those of page-scripts.js: each is
 * self-contained, takes the element first (see `elementExpression`) and returns JSON, with an
 * expected failure as `{error, …}`. They set values the way a person's input would be seen
 * by the page's own code: through the prototype's value setter (frameworks that track the
 * value, like React, ignore a plain assignment) followed by `input` and `change` events, and
 * checkboxes and radios through a real `click()` so their click handlers run too.
 *
 * Pure: no `chrome.*`, so Node tests the mapping directly.
 */

/** The field types of Playwright MCP's browser_fill_form. */
export const FIELD_TYPES = Object.freeze(['textbox', 'checkbox', 'radio', 'combobox', 'slider']);
/** Fields in one call; a form with more is filled in several. */
export const MAX_FIELDS = 100;

/**
 * @typedef {{kind: 'text', text: string} | {kind: 'check', checked: boolean} | {kind: 'select', option: string} | {kind: 'range', number: number}} FieldAction
 */

/**
 * Checks one field of a fillForm call and says what to do with its element.
 *
 * @param {unknown} field `{name, type, value, selector | ref}`
 * @param {number} index for the error
 * @returns {{action: FieldAction} | {error: string}}
 */
export function fieldAction(field, index) {
  const at = `fields[${index}]`;
  if (typeof field !== 'object' || field === null || Array.isArray(field))
    return { error: `${at} must be an object {name, type, ref or selector, value}` };
  const { type, value } = /** @type {any} */ (field);
  if (!FIELD_TYPES.includes(type))
    return { error: `${at}.type must be one of ${FIELD_TYPES.join(', ')}, got ${JSON.stringify(type)}` };
  if (typeof value !== 'string' && typeof value !== 'boolean' && typeof value !== 'number')
    return { error: `${at}.value must be a string (for a checkbox or radio "true" or "false")` };
  switch (type) {
    case 'textbox':
      return { action: { kind: 'text', text: String(value) } };
    case 'checkbox':
    case 'radio': {
      const checked = value === true || value === 'true' ? true : value === false || value === 'false' ? false : undefined;
      if (checked === undefined)
        return { error: `${at}.value of a ${type} must be "true" or "false", got ${JSON.stringify(value)}` };
      if (type === 'radio' && !checked)
        return { error: `${at}: a radio button cannot be unchecked by itself; check another radio of its group instead` };
      return { action: { kind: 'check', checked } };
    }
    case 'combobox':
      return { action: { kind: 'select', option: String(value) } };
    case 'slider': {
      const number = typeof value === 'number' ? value : Number(value);
      if (String(value).trim() === '' || !Number.isFinite(number))
        return { error: `${at}.value of a slider must be a number, got ${JSON.stringify(value)}` };
      return { action: { kind: 'range', number } };
    }
    default:
      return { error: `${at}.type ${type} is not handled` };
  }
}

/**
 * Sets one field as a person would, and reads back what the page now holds.
 *
 * @param {Element} el
 * @param {FieldAction} action
 */
export function fillField(el, action) {
  // Set by the action itself: its answer says the value (action-evidence.js leaves it out).
  el[Symbol.for('mcp-relay.setByAction')] = true;
  const tag = el.localName;
  const inputType = tag === 'input' ? (el.getAttribute('type') || 'text').toLowerCase() : '';
  const describe = () => (inputType ? `input type=${inputType}` : tag);
  const fire = () => {
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  };
  const setValue = value => {
    const proto = tag === 'textarea' ? HTMLTextAreaElement.prototype : tag === 'select' ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
  };
  if (el.disabled)
    return { error: 'disabled', element: describe() };
  switch (action.kind) {
    case 'text': {
      if (el.isContentEditable) {
        el.focus();
        el.textContent = action.text;
        el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true }));
        return { value: el.textContent };
      }
      const textual = tag === 'textarea' || (tag === 'input' && !['checkbox', 'radio', 'file', 'range', 'button', 'submit', 'reset', 'image', 'hidden'].includes(inputType));
      if (!textual)
        return { error: 'wrong-kind', element: describe(), wanted: 'a text field (input, textarea or contenteditable)' };
      if (el.readOnly)
        return { error: 'disabled', element: describe() };
      el.focus();
      setValue(action.text);
      fire();
      return { value: el.value };
    }
    case 'check': {
      if (tag !== 'input' || (inputType !== 'checkbox' && inputType !== 'radio'))
        return { error: 'wrong-kind', element: describe(), wanted: 'a checkbox or radio input' };
      if (el.checked !== action.checked)
        el.click();
      return { value: el.checked };
    }
    case 'select': {
      if (tag !== 'select')
        return { error: 'wrong-kind', element: describe(), wanted: 'a <select>', drawn: true };
      const options = Array.from(el.options);
      const wanted = action.option;
      const option = options.find(o => o.value === wanted) || options.find(o => o.label.trim() === wanted.trim()) ||
          options.find(o => o.textContent.trim() === wanted.trim());
      if (!option)
        return { error: 'no-option', element: describe(), value: wanted, available: options.map(o => `${o.value} (${o.label})`) };
      if (option.disabled)
        return { error: 'option-disabled', element: describe(), value: wanted };
      el.focus();
      setValue(option.value);
      fire();
      return { value: el.value, label: option.label };
    }
    case 'range': {
      if (tag !== 'input' || inputType !== 'range')
        return { error: 'wrong-kind', element: describe(), wanted: 'an input type=range', slider: el.getAttribute('role') === 'slider' };
      el.focus();
      setValue(String(action.number));
      fire();
      return { value: el.value };
    }
    default:
      return { error: 'unknown-action' };
  }
}

/**
 * Hands files (their bytes as base64) to a file input, as the file chooser would: the input's
 * `files` set through a DataTransfer, then `input` and `change`.
 *
 * @param {Element} el
 * @param {{name: string, mimeType: string, data: string, lastModified?: number}[]} files
 */
export function setInputFiles(el, files) {
  if (el.localName !== 'input' || (el.getAttribute('type') || '').toLowerCase() !== 'file')
    return { error: 'not-file-input', element: el.localName };
  if (el.disabled)
    return { error: 'disabled', element: 'input type=file' };
  if (files.length > 1 && !el.multiple)
    return { error: 'not-multiple', count: files.length };
  const transfer = new DataTransfer();
  for (const file of files) {
    const binary = atob(file.data);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++)
      bytes[i] = binary.charCodeAt(i);
    transfer.items.add(new File([bytes], file.name, { type: file.mimeType, lastModified: file.lastModified ?? Date.now() }));
  }
  el.files = transfer.files;
  el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { files: Array.from(el.files).map(f => ({ name: f.name, size: f.size, type: f.type })) };
}

/**
 * The element's box in document coordinates (what `Page.captureScreenshot`'s clip takes with
 * `captureBeyondViewport`), after scrolling it into view so lazy content has painted.
 *
 * @param {Element} el
 */
export function documentBox(el) {
  el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const rect = el.getBoundingClientRect();
  if (rect.width === 0 || rect.height === 0)
    return { error: 'not-visible', element: el.localName };
  return { x: rect.left + window.scrollX, y: rect.top + window.scrollY, width: rect.width, height: rect.height };
}

/**
 * A slider the page draws (`role=slider` on a `div`: Quasar's, MUI's, Radix's): where it
 * stands, and the focus put on it, so that arrow keys move it as they move it for a person.
 *
 * Runs through elementExpression. @param {Element} el
 */
export function focusSlider(el) {
  const number = name => {
    const value = parseFloat(el.getAttribute(name) ?? '');
    return Number.isFinite(value) ? value : null;
  };
  // Keys go where the focus is: the slider itself, or the thumb inside it that takes the
  // focus for it (Quasar's slider has no tabindex; its thumb does).
  const doc = el.ownerDocument;
  if (!el.contains(doc.activeElement)) {
    const focusable = el.tabIndex >= 0 ? el : el.querySelector('[tabindex]:not([tabindex="-1"])');
    if (focusable instanceof HTMLElement || focusable instanceof SVGElement)
      focusable.focus();
  }
  return { now: number('aria-valuenow'), min: number('aria-valuemin'), max: number('aria-valuemax') };
}
