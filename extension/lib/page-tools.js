/**
 * The extension's side of issue 23's new page tools: `drop` (files or MIME data dropped on an
 * element, as from outside the page), `emulateMedia` (CSS media type and features per tab),
 * and the downloads an agent's actions captured (`listDownloads`, `takeDownload`; the
 * capture itself is in downloads.js and connection-state.js). commands.js adds this table.
 */

import { sendIn } from './commands/other-frames.js';
import { elementError, targetTab, worldOf } from './commands/shared.js';
import { MEDIA_PARAMS, emulatedMediaParams, mergeMedia } from './media.js';
import { elementExpression } from './page-scripts.js';
import { invalidParams, serverError } from './rpc.js';
import { TARGET_PARAMS, describeTarget, elementTarget } from './targets.js';

const TAB_ID = Object.freeze({ type: 'integer', min: 0 });

const mediaParam = values => Object.freeze({ type: 'string', oneOf: values, nullable: true });

export const PAGE_TOOL_COMMANDS = {
  drop: {
    params: {
      ...TARGET_PARAMS,
      files: { type: 'array', maxItems: 100 },
      data: { type: 'object' },
      tabId: TAB_ID,
    },
    run: drop,
  },
  emulateMedia: {
    params: {
      ...Object.fromEntries(Object.entries(MEDIA_PARAMS).map(([name, spec]) => [name, mediaParam(spec.values)])),
      tabId: TAB_ID,
    },
    run: emulateMedia,
  },
  listDownloads: { params: {}, run: listDownloads },
  takeDownload: {
    params: { id: { type: 'string', required: true, nonEmpty: true }, maxBytes: { type: 'integer', min: 0 } },
    run: takeDownload,
  },
};

/**
 * Drops files and/or strings on an element: dragenter, dragover and (when the page accepts
 * the dragover, as browsers require) drop, at the element's centre, with a DataTransfer
 * holding them, as a drag from another application would.
 *
 * @param {import('./commands.js').CommandContext} ctx
 */
async function drop(ctx, { ref, selector, files = [], data = {}, tabId }) {
  const target = elementTarget({ ref, selector });
  for (const [index, file] of files.entries()) {
    if (typeof file?.name !== 'string' || typeof file?.data !== 'string')
      throw invalidParams(`files[${index}] must be {name, mimeType, data (base64)}`);
  }
  for (const [type, value] of Object.entries(data)) {
    if (typeof value !== 'string')
      throw invalidParams(`data["${type}"] must be a string`);
  }
  if (files.length === 0 && Object.keys(data).length === 0)
    throw invalidParams('drop needs "files" or "data" (a map of MIME type to string), or both');
  const id = await targetTab(ctx, tabId);
  const payload = {
    files: files.map(file => ({ name: file.name, mimeType: typeof file.mimeType === 'string' ? file.mimeType : 'application/octet-stream', data: file.data })),
    data,
  };
  // On an element of a frame of another origin: dispatched in that frame's world.
  const world = await worldOf(ctx, id, target);
  const { result, exceptionDetails } = await sendIn(ctx, id, world, 'Runtime.evaluate', {
    expression: elementExpression(dropOnElement, target, payload), returnByValue: true, awaitPromise: true, userGesture: true,
  });
  if (exceptionDetails)
    throw serverError(`The drop failed in tab ${id}: ${exceptionDetails.exception?.description?.split('\n')[0] ?? exceptionDetails.text}`);
  const answer = result.value;
  if (answer?.error)
    throw elementError(answer, target);
  return {
    tabId: id,
    dropped: { files: answer.files, types: answer.types },
    accepted: answer.accepted,
    ...(answer.accepted ? {} : {
      note: answer.dragoverAccepted
        ? `The page's drop handler on ${describeTarget(target)} did not accept the drop (it did not call preventDefault)`
        : `${describeTarget(target)} (${answer.element}) is not a drop target: the page did not accept the drag over it (no dragover handler calling preventDefault), so no drop event was sent`,
    }),
  };
}

/**
 * Runs in the page through elementExpression. The events go to the innermost element at the
 * centre (as a real drop would), which is the target itself or inside it.
 *
 * @param {Element} el
 * @param {{files: {name: string, mimeType: string, data: string}[], data: Record<string, string>}} payload
 */
export function dropOnElement(el, payload) {
  const view = el.ownerDocument.defaultView;
  el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const rect = el.getBoundingClientRect();
  const describe = node => node.localName + (node.id ? `#${node.id}` : '');
  if (rect.width === 0 || rect.height === 0)
    return { error: 'not-visible', element: describe(el) };
  const x = rect.left + rect.width / 2;
  const y = rect.top + rect.height / 2;
  let at = el.ownerDocument.elementFromPoint(x, y);
  if (!at || !el.contains(at))
    at = el;
  const transfer = new view.DataTransfer();
  for (const [type, value] of Object.entries(payload.data))
    transfer.items.add(value, type);
  for (const file of payload.files) {
    const binary = atob(file.data);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++)
      bytes[i] = binary.charCodeAt(i);
    transfer.items.add(new view.File([bytes], file.name, { type: file.mimeType }));
  }
  transfer.effectAllowed = 'all';
  const fire = type => {
    const event = new view.DragEvent(type, {
      bubbles: true, cancelable: type !== 'dragleave', composed: true, clientX: x, clientY: y, dataTransfer: transfer,
    });
    at.dispatchEvent(event);
    return event.defaultPrevented;
  };
  fire('dragenter');
  const dragoverAccepted = fire('dragover');
  let accepted = false;
  if (dragoverAccepted)
    accepted = fire('drop');
  else
    fire('dragleave');
  return {
    files: payload.files.length,
    types: Array.from(transfer.types),
    accepted,
    dragoverAccepted,
    element: describe(at),
  };
}

/**
 * CSS media emulation of one tab, kept per tab so a call changes only what it names.
 *
 * @param {import('./commands.js').CommandContext} ctx
 */
async function emulateMedia(ctx, params) {
  const id = await targetTab(ctx, params.tabId);
  const overrides = ctx.debuggers.media ?? (ctx.debuggers.media = new Map());
  const next = mergeMedia(overrides.get(id) ?? {}, params);
  await ctx.debuggers.send(id, 'Emulation.setEmulatedMedia', emulatedMediaParams(next));
  overrides.set(id, next);
  return { tabId: id, emulated: { ...next } };
}

/** @param {import('./commands.js').CommandContext} ctx */
async function listDownloads(ctx) {
  return { downloads: ctx.downloads ? ctx.downloads.list(ctx.connectionId) : [] };
}

/** @param {import('./commands.js').CommandContext} ctx */
async function takeDownload(ctx, { id, maxBytes }) {
  const taken = ctx.downloads?.take(ctx.connectionId, id, maxBytes) ?? { ok: false, reason: 'unknown' };
  if (taken.ok)
    return taken.download;
  switch (taken.reason) {
    case 'in_progress':
      throw serverError(`Download ${id} (${taken.row.filename}) is still being fetched; call listDownloads and take it once its state is "complete"`);
    case 'failed':
      throw serverError(`Download ${id} (${taken.row.filename}) failed: ${taken.row.error}; it is forgotten now`);
    case 'too-large':
      throw invalidParams(`Download ${id} (${taken.row.filename}) is ${taken.row.bytes} bytes, more than the limit of ${maxBytes} bytes ` +
          '(the bridge\'s --max-message-bytes); it is forgotten now');
    default:
      throw serverError(`This connection has no download "${id}"; listDownloads shows the ones not yet taken`);
  }
}
