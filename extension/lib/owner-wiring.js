/**
 * Registers the chrome.* listeners OwnerControl needs, synchronously, as a
 * service worker must (Chrome only wakes a worker for listeners that exist
 * after its first pass), and answers the popup's and options page's messages.
 * Kept out of background.js so that file stays a short table of contents.
 */

import { ConsentKey } from './consent.js';
import { ASK_BEFORE_KEY } from './ask-before.js';
import { BLOCKED_SITES_KEY, OwnerControl } from './owner-control.js';

/** Messages the popup and options page send; each answers `{ok: true}` or `{ok: false, error}`. */
export const OwnerMessage = Object.freeze({
  DECIDE: 'owner:decide',
  STOP: 'owner:stop',
  REVOKE: 'owner:revoke',
  /** `{id, answer}`: "done"/"cancelled" to a hand-off, "allowed"/"denied" to an ask-before prompt. */
  PERSON_ANSWER: 'owner:person-answer',
  /** `{id}`: bring that request's tab to the front. */
  SHOW_TAB: 'owner:show-tab',
});

const WATCHED_KEYS = new Set([ConsentKey.ALWAYS_ALLOWED, ConsentKey.ALLOW_ALL, ConsentKey.DENIED, BLOCKED_SITES_KEY, ASK_BEFORE_KEY]);

/**
 * @param {Promise<Record<string, unknown> | null>} devConfig
 * @param {(connectionId: string, reason: string) => Promise<unknown>} closeConnection
 * @param {(receipt: object) => Promise<unknown>} recordDecision the relay's audit trail
 * @returns {OwnerControl}
 */
export function registerOwnerControl(devConfig, closeConnection, recordDecision) {
  const owner = new OwnerControl({ devConfig, closeConnection, recordDecision });
  chrome.tabs.onUpdated.addListener((tabId, change) => {
    if (change.url !== undefined || change.groupId !== undefined)
      owner.tabUpdated(tabId, change).catch(error => console.warn('[mcp-relay] tab update:', error));
  });
  chrome.tabs.onRemoved.addListener(tabId => owner.tabRemoved(tabId));
  chrome.tabGroups?.onRemoved.addListener(group => owner.groupRemoved(group.id));
  chrome.notifications?.onButtonClicked.addListener((id, button) => {
    owner.notificationButton(id, button).catch(error => console.warn('[mcp-relay] notification:', error));
  });
  chrome.notifications?.onClicked.addListener(id => {
    owner.notificationClicked(id).catch(error => console.warn('[mcp-relay] notification:', error));
  });
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'local' && Object.keys(changes).some(key => WATCHED_KEYS.has(key)))
      owner.reloadSettings().catch(error => console.warn('[mcp-relay] owner settings:', error));
  });
  chrome.runtime.onMessage.addListener((message, _sender, sendResponse) => {
    const handle = {
      [OwnerMessage.DECIDE]: () => owner.decide(message.connectionId, message.decision),
      [OwnerMessage.STOP]: () => owner.stop(message.connectionId ? [message.connectionId] : 'all',
        message.reason || 'stopped from the mcp-relay popup'),
      [OwnerMessage.REVOKE]: () => owner.revoke(message.key),
      [OwnerMessage.PERSON_ANSWER]: () => owner.answerPerson(message.id, message.answer),
      [OwnerMessage.SHOW_TAB]: () => owner.showPersonTab(message.id),
    }[message?.type];
    if (!handle)
      return false;
    handle().then(() => sendResponse({ ok: true }), error => sendResponse({ ok: false, error: String(error?.message ?? error) }));
    // Keeps the channel open for the asynchronous answer.
    return true;
  });
  return owner;
}
