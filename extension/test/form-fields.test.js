import { test } from 'node:test';
import assert from 'node:assert/strict';

import { fieldAction } from '../lib/form-fields.js';
import { COMMANDS } from '../lib/commands.js';

test('each Playwright field type maps onto one action', () => {
  assert.deepEqual(fieldAction({ type: 'textbox', value: 'Ada' }, 0), { action: { kind: 'text', text: 'Ada' } });
  assert.deepEqual(fieldAction({ type: 'checkbox', value: 'false' }, 0), { action: { kind: 'check', checked: false } });
  assert.deepEqual(fieldAction({ type: 'checkbox', value: true }, 0), { action: { kind: 'check', checked: true } });
  assert.deepEqual(fieldAction({ type: 'radio', value: 'true' }, 0), { action: { kind: 'check', checked: true } });
  assert.deepEqual(fieldAction({ type: 'combobox', value: 'Japan' }, 0), { action: { kind: 'select', option: 'Japan' } });
  assert.deepEqual(fieldAction({ type: 'slider', value: '7.5' }, 0), { action: { kind: 'range', number: 7.5 } });
});

test('bad fields are named by their index and say what they need', () => {
  assert.match(fieldAction(null, 2).error, /fields\[2\] must be an object/);
  assert.match(fieldAction({ type: 'date', value: 'x' }, 1).error, /fields\[1\]\.type must be one of textbox/);
  assert.match(fieldAction({ type: 'checkbox', value: 'yes' }, 0).error, /"true" or "false"/);
  assert.match(fieldAction({ type: 'radio', value: 'false' }, 0).error, /check another radio/);
  assert.match(fieldAction({ type: 'slider', value: 'loud' }, 0).error, /must be a number/);
  assert.match(fieldAction({ type: 'textbox' }, 3).error, /fields\[3\]\.value/);
});

test('the new commands are in the command table with their params', () => {
  for (const name of ['fillForm', 'fileUpload', 'drag', 'networkRequests', 'evaluateFunction', 'elementScreenshot', 'resize', 'printPdf', 'closeAgentTabs'])
    assert.ok(COMMANDS[name]?.run, name);
  assert.equal(COMMANDS.fillForm.params.fields.type, 'array');
});
