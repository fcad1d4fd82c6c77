/**
 * The options page's "Assistants and sites" section: assistants that are
 * always allowed (with Revoke), denied ones (with Forget: they ask again), the
 * "allow every assistant" switch, and the
 * sites no assistant may touch. Everything is stored in chrome.storage.local
 * only; the site list never leaves this browser.
 */

import { ASK_BEFORE_KEY } from '../lib/ask-before.js';
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
    showDecisions(doc, list, stored[ConsentKey.ALWAYS_ALLOWED], {
      empty: 'None yet.', at: 'allowedAt', button: 'revoke', label: 'Revoke',
      act: key => chrome.runtime.sendMessage({ type: OwnerMessage.REVOKE, key }),
    });
    allowAll.checked = stored[ConsentKey.ALLOW_ALL] === true;
    showDecisions(doc, deniedList, stored[ConsentKey.DENIED], {
      empty: 'None.', at: 'deniedAt', button: 'forget', label: 'Forget',
      // Straight to storage: the service worker applies it through storage.onChanged.
      act: async key => {
        const { [ConsentKey.DENIED]: now = {} } = await chrome.storage.local.get(ConsentKey.DENIED);
        delete now[key];
        await chrome.storage.local.set({ [ConsentKey.DENIED]: now });
      },
    });
  };
  const keys = [ConsentKey.ALWAYS_ALLOWED, ConsentKey.ALLOW_ALL, ConsentKey.DENIED, BLOCKED_SITES_KEY];
  const stored = await chrome.storage.local.get([...keys, ASK_BEFORE_KEY]);
  render(stored);
  sites.value = (stored[BLOCKED_SITES_KEY] ?? []).join('\n');
  const askForms = /** @type {HTMLTextAreaElement} */ (doc.getElementById('ask-forms'));
  const askPurchases = /** @type {HTMLTextAreaElement} */ (doc.getElementById('ask-purchases'));
  askForms.value = (stored[ASK_BEFORE_KEY]?.forms ?? []).join('\n');
  askPurchases.value = (stored[ASK_BEFORE_KEY]?.purchases ?? []).join('\n');
  const lines = (/** @type {HTMLTextAreaElement} */ area) => area.value.split('\n').map(line => line.trim()).filter(Boolean);
  doc.getElementById('save-ask').addEventListener('click', async () => {
    await chrome.storage.local.set({ [ASK_BEFORE_KEY]: { forms: lines(askForms), purchases: lines(askPurchases) } });
    const saved = doc.getElementById('ask-saved');
    saved.textContent = 'Saved.';
    setTimeout(() => { saved.textContent = ''; }, 2000);
  });
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

/**
 * One list of remembered decisions: each assistant's name, since when, and a button.
 *
 * @param {Document} doc
 * @param {HTMLElement} list
 * @param {Record<string, {name: string}> | undefined} decisions by assistant key
 * @param {{empty: string, at: string, button: string, label: string, act: (key: string) => unknown}} how
 */
function showDecisions(doc, list, decisions, { empty, at, button, label, act }) {
  list.replaceChildren();
  const entries = Object.entries(decisions ?? {});
  if (entries.length === 0)
    list.append(Object.assign(doc.createElement('li'), { className: 'hint', textContent: empty }));
  for (const [key, entry] of entries) {
    const item = doc.createElement('li');
    item.className = 'row';
    item.dataset.key = key;
    const since = entry[at] ? ` (since ${new Date(entry[at]).toLocaleString()})` : '';
    item.append(Object.assign(doc.createElement('span'), { textContent: `${entry.name}${since}` }));
    const action = Object.assign(doc.createElement('button'), { className: button, textContent: label });
    action.addEventListener('click', () => act(key));
    item.append(action);
    list.append(item);
  }
}
