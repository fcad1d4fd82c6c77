// Group bookkeeping: colours, one group per assistant per window, and what a drag means.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AssistantGroups, GROUP_COLORS, pickGroupColor } from '../lib/tab-groups.js';

test('each live assistant gets a colour no other one uses, until there are more assistants than colours', () => {
  assert.equal(pickGroupColor([]), 'blue');
  assert.equal(pickGroupColor(['blue']), 'purple');
  assert.ok(GROUP_COLORS.includes(pickGroupColor(GROUP_COLORS)));
});

test('an assistant has one group per window, and a group id names its assistant', () => {
  const groups = new AssistantGroups();
  groups.add(10, 'conn-a', 1);
  groups.add(11, 'conn-a', 2);
  groups.add(20, 'conn-b', 1);
  assert.equal(groups.groupIn('conn-a', 2), 11);
  assert.equal(groups.groupIn('conn-b', 2), undefined);
  assert.equal(groups.ownerOf(20), 'conn-b');
  assert.deepEqual(groups.groupsOf('conn-a'), [10, 11]);
  assert.deepEqual(groups.removeConnection('conn-a'), [10, 11]);
  assert.equal(groups.ownerOf(10), undefined);
});

test('dragging a tab out of its assistant\'s group takes it back; into a group gives it', () => {
  const groups = new AssistantGroups();
  groups.add(10, 'conn-a', 1);
  groups.add(20, 'conn-b', 1);
  assert.deepEqual(groups.classifyMove('conn-a', 10), { kind: 'none' });
  assert.deepEqual(groups.classifyMove('conn-a', -1), { kind: 'taken', from: 'conn-a' });
  assert.deepEqual(groups.classifyMove('conn-a', 99), { kind: 'taken', from: 'conn-a' });
  assert.deepEqual(groups.classifyMove(undefined, 20), { kind: 'given', to: 'conn-b' });
  assert.deepEqual(groups.classifyMove('conn-a', 20), { kind: 'moved', from: 'conn-a', to: 'conn-b' });
  assert.deepEqual(groups.classifyMove(undefined, -1), { kind: 'none' });
});

test('a group the person closed names nobody any more', () => {
  const groups = new AssistantGroups();
  groups.add(10, 'conn-a', 1);
  groups.removeGroup(10);
  assert.equal(groups.ownerOf(10), undefined);
  assert.deepEqual(groups.classifyMove('conn-a', 10), { kind: 'taken', from: 'conn-a' });
});
