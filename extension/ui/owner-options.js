/**
 * The options page's "Assistants and sites" section: assistants that are
 * always allowed (with Revoke), denied ones (with Forget: they ask again), the
 * "allow every assistant" switch, and the
 * sites no assistant may touch. Everything is stored in chrome.storage.local
 * only; the site list never leaves this browser.
 */

import { ConsentKey } from '../lib/consent.js';
import { BLOCKED_SITES_KEY } from '../lib/owner-control.js';
import { OwnerMessage } from '../lib/owner-wiring.js';

/** @param {Document} doc */
export async function showOwnerOptions(doc) {
  const list = doc.getElementById('allowed-assistants');
  const deniedList = doc.getElementById('denied-assistants');
  const allowAll = /** @type {HTMLInputElement} */ (doc.getElementById('allow-all'));
  const sites = /** @type {HTMLTextAreaElement} */ (doc.getElementById('blocked-sites'));
  const savedSites = doc.getElementById('sites-saved');

  const render = stored => {
    const always = stored[ConsentKey.ALWAYS_ALLOWED] ?? {};
    list.replaceChildren();
    const entries = Object.entries(always);
    if (entries.length === 0)
      list.append(Object.assign(doc.createElement('li'), { className: 'hint', textContent: 'None yet.' }));
    for (const [key, entry] of entries) {
      const item = doc.createElement('li');
      item.className = 'row';
      item.dataset.key = key;
      const since = entry.allowedAt ? ` (since ${new Date(entry.allowedAt).toLocaleString()})` : '';
      item.append(Object.assign(doc.createElement('span'), { textContent: `${entry.name}${since}` }));
      const revoke = Object.assign(doc.createElement('button'), { className: 'revoke', textContent: 'Revoke' });
      revoke.addEventListener('click', () => chrome.runtime.sendMessage({ type: OwnerMessage.REVOKE, key }));
      item.append(revoke);
      list.append(item);
    }
    allowAll.checked = stored[ConsentKey.ALLOW_ALL] === true;
    deniedList.replaceChildren();
    const denied = Object.entries(stored[ConsentKey.DENIED] ?? {});
    if (denied.length === 0)
      deniedList.append(Object.assign(doc.createElement('li'), { className: 'hint', textContent: 'None.' }));
    for (const [key, entry] of denied) {
      const item = doc.createElement('li');
      item.className = 'row';
      item.dataset.key = key;
      const since = entry.deniedAt ? ` (since ${new Date(entry.deniedAt).toLocaleString()})` : '';
      item.append(Object.assign(doc.createElement('span'), { textContent: `${entry.name}${since}` }));
      const forget = Object.assign(doc.createElement('button'), { className: 'forget', textContent: 'Forget' });
      // Straight to storage: the service worker applies it through storage.onChanged.
      forget.addEventListener('click', async () => {
        const { [ConsentKey.DENIED]: now = {} } = await chrome.storage.local.get(ConsentKey.DENIED);
        delete now[key];
        await chrome.storage.local.set({ [ConsentKey.DENIED]: now });
      });
      item.append(forget);
      deniedList.append(item);
    }
  };
  const keys = [ConsentKey.ALWAYS_ALLOWED, ConsentKey.ALLOW_ALL, ConsentKey.DENIED, BLOCKED_SITES_KEY];
  const stored = await chrome.storage.local.get(keys);
  render(stored);
  sites.value = (stored[BLOCKED_SITES_KEY] ?? []).join('\n');
  chrome.storage.onChanged.addListener(async (changes, area) => {
    if (area === 'local' && keys.some(key => changes[key]))
      render(await chrome.storage.local.get(keys));
  });
  allowAll.addEventListener('change', () => chrome.storage.local.set({ [ConsentKey.ALLOW_ALL]: allowAll.checked }));
  doc.getElementById('save-sites').addEventListener('click', async () => {
    const patterns = sites.value.split('\n').map(line => line.trim()).filter(Boolean);
    await chrome.storage.local.set({ [BLOCKED_SITES_KEY]: patterns });
    savedSites.textContent = 'Saved.';
    setTimeout(() => { savedSites.textContent = ''; }, 2000);
  });
}
