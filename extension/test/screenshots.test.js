import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CAPTURE_DEADLINE_MS, CaptureStalledError, DEFAULT_MAX_DIMENSION, KICK_TAIL_MS, captureParams, captureWithRetry, headOfBase64, imageSize,
  layoutMetrics, scaleFor,
} from '../lib/screenshots.js';

const metrics = (width, height, { dpr = 1, content = { width, height }, pageX = 0, pageY = 0 } = {}) => ({
  viewport: { pageX, pageY, clientWidth: width, clientHeight: height },
  content,
  devicePixelRatio: dpr,
});

test('small viewports are never scaled up', () => {
  assert.equal(scaleFor(1280, 800, 1, DEFAULT_MAX_DIMENSION), 1);
  assert.equal(scaleFor(1568, 100, 1, 1568), 1);
  const { params, width, height } = captureParams({}, metrics(1280, 800));
  assert.deepEqual(params, { format: 'png', clip: { x: 0, y: 0, width: 1280, height: 800, scale: 1 } });
  assert.deepEqual([width, height], [1280, 800]);
});

test('the longest side is brought to at most 1568 px by default, counting the device pixel ratio', () => {
  for (const [w, h, dpr] of [[1920, 1080, 1], [1280, 800, 2], [800, 3000, 1], [1569, 1569, 1], [2560, 1440, 1.25]]) {
    const { params, width, height } = captureParams({}, metrics(w, h, { dpr }));
    assert.ok(params.clip.scale < 1, `${w}x${h}@${dpr}`);
    assert.ok(Math.max(width, height) <= DEFAULT_MAX_DIMENSION, `${w}x${h}@${dpr}: ${width}x${height}`);
    assert.ok(Math.max(width, height) >= DEFAULT_MAX_DIMENSION - 1, `${w}x${h}@${dpr}: ${width}x${height}`);
    // The scaled area keeps its aspect ratio.
    assert.ok(Math.abs(width / height - w / h) < 0.01, `${width}x${height} vs ${w}x${h}`);
  }
  const { width, height } = captureParams({}, metrics(1920, 1080));
  assert.deepEqual([width, height], [1568, 882]);
});

test('maxDimension overrides the default, and fullPage obeys it too', () => {
  const small = captureParams({ maxDimension: 400 }, metrics(1280, 800));
  assert.deepEqual([small.width, small.height], [400, 250]);
  const page = captureParams({ fullPage: true, maxDimension: 1000 }, metrics(1280, 800, { content: { width: 1280, height: 5000.4 } }));
  assert.equal(page.params.captureBeyondViewport, true);
  assert.deepEqual({ ...page.params.clip, scale: undefined }, { x: 0, y: 0, width: 1280, height: 5001, scale: undefined });
  assert.equal(page.height, 1000);
  assert.equal(page.width, 256);
  const defaultPage = captureParams({ fullPage: true }, metrics(1280, 800, { content: { width: 1280, height: 9000 } }));
  assert.equal(defaultPage.height, DEFAULT_MAX_DIMENSION);
});

test('the viewport clip follows the scroll position; format and quality pass through', () => {
  const { params } = captureParams({ format: 'jpeg', quality: 60 }, metrics(1000, 700, { pageX: 5, pageY: 1200 }));
  assert.deepEqual(params, { format: 'jpeg', quality: 60, clip: { x: 5, y: 1200, width: 1000, height: 700, scale: 1 } });
});

test('layout metrics give CSS sizes and the device pixel ratio', () => {
  const layout = {
    cssVisualViewport: { pageX: 0, pageY: 10, clientWidth: 640, clientHeight: 400 },
    visualViewport: { pageX: 0, pageY: 20, clientWidth: 1280, clientHeight: 800 },
    cssContentSize: { x: 0, y: 0, width: 640, height: 2000 },
    contentSize: { x: 0, y: 0, width: 1280, height: 4000 },
  };
  assert.deepEqual(layoutMetrics(layout), {
    viewport: layout.cssVisualViewport,
    content: layout.cssContentSize,
    devicePixelRatio: 2,
  });
  // An old Chrome without the css* fields: device pixels, ratio 1.
  assert.equal(layoutMetrics({ visualViewport: layout.visualViewport, contentSize: layout.contentSize }).devicePixelRatio, 1);
});

test('image sizes are read from PNG, JPEG and WebP headers', () => {
  const png = new Uint8Array(33);
  png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  png.set([0, 0, 0x06, 0x20, 0, 0, 0x03, 0x72], 16); // 1568 x 882
  assert.deepEqual(imageSize(png), { width: 1568, height: 882 });

  // SOI, an APP0 segment of 16 bytes, then SOF0 with height 600 and width 800.
  const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, ...new Array(14).fill(0),
    0xff, 0xc0, 0, 17, 8, 0x02, 0x58, 0x03, 0x20, 3, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(imageSize(jpeg), { width: 800, height: 600 });

  const riff = (chunk, body) => new Uint8Array([...Buffer.from('RIFF'), 0, 0, 0, 0, ...Buffer.from('WEBP'), ...Buffer.from(chunk), ...body]);
  // VP8X: flags and reserved bytes, then width-1 and height-1 as 24-bit little endian.
  assert.deepEqual(imageSize(riff('VP8X', [10, 0, 0, 0, 0, 0, 0, 0, 0x1f, 0x06, 0, 0x71, 0x03, 0])), { width: 1568, height: 882 });
  // VP8L: signature byte 0x2f, then 14 bits width-1 and 14 bits height-1.
  const bits = (1567) | (881 << 14);
  assert.deepEqual(imageSize(riff('VP8L', [0, 0, 0, 0, 0x2f, bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff, (bits >>> 24) & 0xff, 0, 0, 0, 0, 0])),
      { width: 1568, height: 882 });

  assert.equal(imageSize(new Uint8Array([1, 2, 3])), null);
});

test('the head of base64 data decodes to the first bytes', () => {
  const bytes = Uint8Array.from({ length: 10_000 }, (_, i) => i % 251);
  const head = headOfBase64(Buffer.from(bytes).toString('base64'), 100);
  assert.ok(head.length >= 100);
  assert.deepEqual([...head.subarray(0, 100)], [...bytes.subarray(0, 100)]);
  assert.deepEqual([...headOfBase64(Buffer.from([1, 2]).toString('base64'))], [1, 2], 'short data decodes whole');
});

/** A fake CDP `send`: each method answers after the delay it is given (Infinity: never). */
function fakeSend(delays) {
  const calls = [];
  const send = (method, params) => {
    calls.push(method);
    const delay = delays[method]?.shift?.() ?? delays[method];
    if (delay instanceof Error)
      return Promise.reject(delay);
    return new Promise(resolve => {
      if (delay !== Infinity)
        setTimeout(() => resolve(method === 'Page.captureScreenshot' ? { data: `shot-${calls.length}` } : {}), delay);
    });
  };
  return { send, calls };
}

test('a capture that answers is used at once, with no kick', async () => {
  const { send, calls } = fakeSend({ 'Page.captureScreenshot': 5 });
  const shot = await captureWithRetry(send, { format: 'png' });
  assert.deepEqual(shot, { data: 'shot-1', attempts: 1, kicked: false });
  assert.deepEqual(calls, ['Page.captureScreenshot']);
});

test('a stalled capture is kicked with a screencast and retried once', async () => {
  const { send, calls } = fakeSend({ 'Page.captureScreenshot': [Infinity, 5], 'Page.startScreencast': 1, 'Page.stopScreencast': 1 });
  const shot = await captureWithRetry(send, { format: 'png' }, { firstAttemptMs: 50 });
  assert.equal(shot.attempts, 2);
  assert.equal(shot.kicked, true);
  assert.deepEqual(calls, ['Page.captureScreenshot', 'Page.startScreencast', 'Page.stopScreencast', 'Page.captureScreenshot']);
});

test('the kick is muted for the client while it runs and a moment after', async () => {
  const { send } = fakeSend({ 'Page.captureScreenshot': [Infinity, 5], 'Page.startScreencast': 1, 'Page.stopScreencast': 1 });
  const events = [];
  const muteKick = () => {
    events.push('mute');
    return () => events.push('unmute');
  };
  await captureWithRetry(send, {}, { firstAttemptMs: 50, muteKick });
  assert.deepEqual(events, ['mute'], 'still muted right after the retry');
  await new Promise(resolve => setTimeout(resolve, KICK_TAIL_MS + 50));
  assert.deepEqual(events, ['mute', 'unmute']);
});

test('a capture that never completes fails with a clear error before the deadline', async () => {
  const { send } = fakeSend({ 'Page.captureScreenshot': Infinity, 'Page.startScreencast': Infinity, 'Page.stopScreencast': 1 });
  const started = Date.now();
  await assert.rejects(
      captureWithRetry(send, {}, { deadlineMs: 800, firstAttemptMs: 100, stalledMessage: ms => `stalled ${ms}` }),
      error => error instanceof CaptureStalledError && /^stalled \d+$/.test(error.message));
  const took = Date.now() - started;
  assert.ok(took < 800, `took ${took} ms`);
  assert.ok(took >= 400, `gave up after only ${took} ms`);
  assert.equal(CAPTURE_DEADLINE_MS, 5_000, 'the documented deadline');
});

test('a capture the browser refuses is reported as such, not as a stall', async () => {
  const { send } = fakeSend({ 'Page.captureScreenshot': new Error('Unable to capture screenshot') });
  await assert.rejects(captureWithRetry(send, {}), /Unable to capture screenshot/);
});
