import assert from 'node:assert/strict';
import test from 'node:test';

import { AUTO_ATTACH, FrameSessions } from '../lib/frame-sessions.js';

test('a frame of another site is known by its child session until it detaches', () => {
  const frames = new FrameSessions();
  const tab = { tabId: 3 };
  frames.handle(tab, 'Target.attachedToTarget', { sessionId: 'S1', targetInfo: { targetId: 'F1', type: 'iframe' } });
  // A worker, or a frame's own frame (reported through its session), is not kept.
  frames.handle(tab, 'Target.attachedToTarget', { sessionId: 'S2', targetInfo: { targetId: 'W1', type: 'worker' } });
  frames.handle({ tabId: 3, sessionId: 'S1' }, 'Target.attachedToTarget', { sessionId: 'S3', targetInfo: { targetId: 'F2', type: 'iframe' } });
  assert.equal(frames.sessionOf(3, 'F1'), 'S1');
  assert.equal(frames.sessionOf(3, 'W1'), undefined);
  assert.equal(frames.sessionOf(3, 'F2'), undefined);
  assert.equal(frames.sessionOf(4, 'F1'), undefined, 'another tab\'s');
  frames.handle(tab, 'Target.detachedFromTarget', { sessionId: 'S1' });
  assert.equal(frames.sessionOf(3, 'F1'), undefined);
  frames.handle(tab, 'Target.attachedToTarget', { sessionId: 'S4', targetInfo: { targetId: 'F1', type: 'iframe' } });
  frames.detached(3);
  assert.equal(frames.sessionOf(3, 'F1'), undefined, 'the tab\'s session ended');
});

test('only frames are auto-attached, flat, without pausing them', () => {
  assert.deepEqual(AUTO_ATTACH, { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: [{ type: 'iframe' }] });
});
