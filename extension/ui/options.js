/**
 * Options page: relay URL, access token and browser name. Saving writes
 * chrome.storage.local; the service worker sees the change and reconnects.
 */

import { SettingsKey, defaultBrowserName, resolveRelayUrl } from '../lib/settings.js';
import { showOwnerOptions } from './owner-options.js';
import { showRelayState } from './state-view.js';

const form = document.getElementById('settings');
const urlInput = /** @type {HTMLInputElement} */ (document.getElementById('relay-url-input'));
const tokenInput = /** @type {HTMLInputElement} */ (document.getElementById('token-input'));
const nameInput = /** @type {HTMLInputElement} */ (document.getElementById('name-input'));
const preview = document.getElementById('url-preview');
const saved = document.getElementById('saved');

nameInput.placeholder = defaultBrowserName();

const stored = await chrome.storage.local.get([SettingsKey.RELAY_URL, SettingsKey.TOKEN, SettingsKey.NAME]);
urlInput.value = stored[SettingsKey.RELAY_URL] ?? '';
tokenInput.value = stored[SettingsKey.TOKEN] ?? '';
nameInput.value = stored[SettingsKey.NAME] ?? '';

/** Shows the URL the extension will really dial, so a typo shows before saving. */
function updatePreview() {
  try {
    const url = resolveRelayUrl({ relayUrl: urlInput.value, token: tokenInput.value });
    preview.textContent = url ? `Will connect to ${url}` : 'No URL yet: type one, or paste a token with a connection_url claim.';
    preview.classList.remove('error');
  } catch (error) {
    preview.textContent = error.message;
    preview.classList.add('error');
  }
}
urlInput.addEventListener('input', updatePreview);
tokenInput.addEventListener('input', updatePreview);
updatePreview();

document.getElementById('show-token').addEventListener('change', event => {
  tokenInput.type = event.target.checked ? 'text' : 'password';
});

form.addEventListener('submit', async event => {
  event.preventDefault();
  const next = {
    [SettingsKey.RELAY_URL]: urlInput.value.trim(),
    [SettingsKey.TOKEN]: tokenInput.value.trim(),
    [SettingsKey.NAME]: nameInput.value.trim(),
    // Saving means "use these now", even if the popup switch was off.
    [SettingsKey.ENABLED]: true,
  };
  const before = await chrome.storage.local.get(Object.keys(next));
  await chrome.storage.local.set(next);
  // A change reconnects through storage.onChanged; an unchanged save still asks for a fresh attempt.
  if (Object.keys(next).every(key => before[key] === next[key]))
    await chrome.runtime.sendMessage({ type: 'reconnect' }).catch(() => {});
  saved.textContent = 'Saved.';
  setTimeout(() => { saved.textContent = ''; }, 2000);
});

await Promise.all([showRelayState(document), showOwnerOptions(document)]);
