/**
 * Popup: the relay state at a glance and the connect/disconnect switch.
 * The switch only writes the `enabled` setting; the service worker reacts to
 * the storage change, so the popup can close at any time without losing it.
 */

import { SettingsKey } from '../lib/settings.js';
import { showAssistants } from './assistants-view.js';
import { showPersonRequests } from './person-view.js';
import { showRelayState } from './state-view.js';

const enabled = /** @type {HTMLInputElement} */ (document.getElementById('enabled'));

const stored = await chrome.storage.local.get(SettingsKey.ENABLED);
enabled.checked = stored[SettingsKey.ENABLED] !== false;
enabled.addEventListener('change', () => {
  chrome.storage.local.set({ [SettingsKey.ENABLED]: enabled.checked });
});

document.getElementById('open-options').addEventListener('click', event => {
  event.preventDefault();
  chrome.runtime.openOptionsPage();
});

await Promise.all([showRelayState(document), showAssistants(document), showPersonRequests(document)]);
