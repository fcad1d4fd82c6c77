import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TabOwnedError, TabOwnership } from '../lib/tabs.js';

const A = 'conn-a';
const B = 'conn-b';

test('selecting a tab claims it and makes it current', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 12);
  assert.equal(tabs.ownerOf(12), A);
  assert.equal(tabs.currentTab(A), 12);
  assert.equal(tabs.currentTab(B), undefined);
});

test('each connection has its own current tab', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 1);
  tabs.select(B, 2);
  assert.equal(tabs.currentTab(A), 1);
  assert.equal(tabs.currentTab(B), 2);
});

test('another connection is refused with a message naming the tab', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 12);
  assert.throws(() => tabs.select(B, 12), err => err instanceof TabOwnedError && /tab 12 belongs to another MCP connection/.test(err.message));
  assert.throws(() => tabs.claim(B, 12), TabOwnedError);
  assert.throws(() => tabs.assertMayUse(B, 12), TabOwnedError);
  assert.equal(tabs.ownerOf(12), A, 'a refused claim must not change the owner');
  assert.equal(tabs.currentTab(B), undefined);
});

test('the owner may reselect its own tab and un-owned tabs are free', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 12);
  tabs.select(A, 12);
  tabs.assertMayUse(B, 99);
  assert.equal(tabs.ownerOf(12), A);
});

test('claim without select keeps the current tab', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 1);
  tabs.claim(A, 2);
  assert.equal(tabs.currentTab(A), 1);
  assert.deepEqual(tabs.tabsOf(A).sort(), [1, 2]);
});

test('release un-owns every tab of the connection and returns them', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 1);
  tabs.select(A, 2);
  tabs.select(B, 3);
  assert.deepEqual(tabs.release(A).sort(), [1, 2]);
  assert.equal(tabs.ownerOf(1), undefined);
  assert.equal(tabs.currentTab(A), undefined);
  assert.equal(tabs.ownerOf(3), B);
  tabs.select(B, 1);
  assert.equal(tabs.ownerOf(1), B, 'a released tab can be taken by another connection');
});

test('a closed tab is dropped from ownership and from current', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 5);
  assert.equal(tabs.dropTab(5), A);
  assert.equal(tabs.ownerOf(5), undefined);
  assert.equal(tabs.currentTab(A), undefined);
  assert.equal(tabs.dropTab(5), undefined);
});

test('a pop-up that closes leaves its connection in the tab that opened it, if still its own', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 5);
  tabs.claim(A, 6);
  tabs.setOpener(6, 5);
  tabs.select(A, 6);
  tabs.dropTab(6);
  assert.equal(tabs.currentTab(A), 5);
  // An opener another connection holds now is not taken back.
  tabs.claim(A, 7);
  tabs.setOpener(7, 8);
  tabs.select(B, 8);
  tabs.select(A, 7);
  tabs.dropTab(7);
  assert.equal(tabs.currentTab(A), undefined);
});

test('retainOnly releases connections missing from status but keeps the listed and the kept', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 1);
  tabs.select(B, 2);
  tabs.select('direct', 3);
  const released = tabs.retainOnly([B], ['direct']);
  assert.deepEqual([...released.entries()], [[A, [1]]]);
  assert.equal(tabs.ownerOf(1), undefined);
  assert.equal(tabs.ownerOf(2), B);
  assert.equal(tabs.ownerOf(3), 'direct');
});

test('retainOnly with an empty list releases everyone not kept', () => {
  const tabs = new TabOwnership();
  tabs.select(A, 1);
  tabs.select(B, 2);
  assert.equal(tabs.retainOnly([]).size, 2);
  assert.equal(tabs.connections().size, 0);
});
