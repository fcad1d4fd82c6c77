/**
 * Renders the service worker's published RelayState into whichever page
 * (popup or options) has the matching element ids, and keeps it current.
 */

import { STATE_KEY } from '../lib/settings.js';

/** @param {Document} doc */
export async function showRelayState(doc) {
  const render = state => {
    if (!state)
      return;
    const set = (id, text) => {
      const el = doc.getElementById(id);
      if (el)
        el.textContent = text;
    };
    const badge = doc.getElementById('state');
    if (badge) {
      badge.textContent = state.state;
      badge.className = `state ${state.state}`;
    }
    set('extension-id', state.extensionId ?? '–');
    set('peers', String(state.peerCount ?? 0));
    set('relay-url', state.relayUrl ?? '–');
    set('error', state.lastError ? `Last error: ${state.lastError}` : '');
    const retryIn = state.nextRetryAt ? Math.max(0, Math.round((state.nextRetryAt - Date.now()) / 1000)) : null;
    set('retry', state.state === 'disconnected' && retryIn !== null ? `Retrying in ${retryIn} s` : '');
    set('dev-config', state.fromDevConfig ? 'dev-config.json is present and overrides these settings.' : '');
  };
  let current = (await chrome.storage.session.get(STATE_KEY))[STATE_KEY];
  render(current);
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'session' && changes[STATE_KEY]) {
      current = changes[STATE_KEY].newValue;
      render(current);
    }
  });
  // The retry countdown moves even when the state does not.
  setInterval(() => render(current), 1000);
}
