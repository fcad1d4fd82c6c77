/**
 * Checks a command's params against a small declarative schema.
 *
 * Every handler declares what it accepts; the dispatcher validates before the
 * handler runs, so a handler never sees a wrong type and a client always gets
 * -32602 with the offending parameter named, instead of a Chrome error about
 * something it never sent.
 *
 * Pure: no `chrome.*`.
 */

import { invalidParams } from './rpc.js';

/**
 * @typedef {object} ParamSpec
 * @property {'string'|'integer'|'number'|'boolean'|'object'|'string[]'|'array'} type
 * @property {boolean} [required]
 * @property {readonly string[]} [oneOf] allowed values (strings only)
 * @property {number} [min] inclusive, numbers only
 * @property {number} [max] inclusive, numbers only
 * @property {boolean} [nonEmpty] strings only; for string[], also at least one item
 * @property {number} [maxItems] string[] and array only
 * @property {boolean} [nullable] null is kept (it means "clear"), not read as absent
 */

/**
 * @param {Record<string, ParamSpec>} schema
 * @param {unknown} params the request's `params` (absent is allowed)
 * @returns {Record<string, any>} a copy holding only declared, present params
 * @throws {import('./rpc.js').RpcError} -32602 naming the first bad parameter
 */
export function validateParams(schema, params) {
  if (params === undefined || params === null)
    params = {};
  if (typeof params !== 'object' || Array.isArray(params))
    throw invalidParams('params must be an object');
  const valid = {};
  for (const [name, spec] of Object.entries(schema)) {
    const value = /** @type {Record<string, unknown>} */ (params)[name];
    if (value === null && spec.nullable) {
      valid[name] = null;
      continue;
    }
    if (value === undefined || value === null) {
      if (spec.required)
        throw invalidParams(`missing required parameter "${name}" (${spec.type})`);
      continue;
    }
    checkValue(name, spec, value);
    valid[name] = value;
  }
  return valid;
}

/**
 * @param {string} name
 * @param {ParamSpec} spec
 * @param {unknown} value
 */
function checkValue(name, spec, value) {
  switch (spec.type) {
    case 'string':
      if (typeof value !== 'string')
        throw invalidParams(`parameter "${name}" must be a string`);
      if (spec.nonEmpty && value.trim() === '')
        throw invalidParams(`parameter "${name}" must not be empty`);
      if (spec.oneOf && !spec.oneOf.includes(value))
        throw invalidParams(`parameter "${name}" must be one of ${spec.oneOf.map(v => `"${v}"`).join(', ')}`);
      return;
    case 'integer':
      if (!Number.isInteger(value))
        throw invalidParams(`parameter "${name}" must be an integer`);
      checkRange(name, spec, /** @type {number} */ (value));
      return;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value))
        throw invalidParams(`parameter "${name}" must be a finite number`);
      checkRange(name, spec, value);
      return;
    case 'boolean':
      if (typeof value !== 'boolean')
        throw invalidParams(`parameter "${name}" must be true or false`);
      return;
    case 'object':
      if (typeof value !== 'object' || Array.isArray(value))
        throw invalidParams(`parameter "${name}" must be an object`);
      return;
    case 'string[]':
      if (!Array.isArray(value) || value.some(item => typeof item !== 'string'))
        throw invalidParams(`parameter "${name}" must be an array of strings`);
      if (spec.nonEmpty && value.length === 0)
        throw invalidParams(`parameter "${name}" must hold at least one string`);
      if (spec.maxItems !== undefined && value.length > spec.maxItems)
        throw invalidParams(`parameter "${name}" must hold at most ${spec.maxItems} strings`);
      return;
    case 'array':
      // Items are checked by the command, which can name the bad one (fields[2].type).
      if (!Array.isArray(value))
        throw invalidParams(`parameter "${name}" must be an array`);
      if (spec.nonEmpty && value.length === 0)
        throw invalidParams(`parameter "${name}" must hold at least one item`);
      if (spec.maxItems !== undefined && value.length > spec.maxItems)
        throw invalidParams(`parameter "${name}" must hold at most ${spec.maxItems} items`);
      return;
    default:
      throw new Error(`schema error: unknown type ${spec.type} for "${name}"`);
  }
}

/** @param {string} name @param {ParamSpec} spec @param {number} value */
function checkRange(name, spec, value) {
  if (spec.min !== undefined && value < spec.min)
    throw invalidParams(`parameter "${name}" must be at least ${spec.min}`);
  if (spec.max !== undefined && value > spec.max)
    throw invalidParams(`parameter "${name}" must be at most ${spec.max}`);
}
