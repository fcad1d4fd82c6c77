/**
 * The popup's "Assistants" section: who asks to use this browser (Allow once,
 * Always allow, Deny), who was denied (Allow once, Always allow) and, per connected assistant, its name, since when,
 * the tabs it holds, its last few actions (method and time, never contents)
 * and a Stop button; "Stop all" ends every one at once.
 *
 * It renders what the service worker publishes in chrome.storage.session and
 * sends decisions back as runtime messages (see lib/owner-wiring.js).
 */

import { ASSISTANTS_KEY } from '../lib/owner-control.js';
import { OwnerMessage } from '../lib/owner-wiring.js';

/** @param {Document} doc */
export async function showAssistants(doc) {
  const root = doc.getElementById('assistants');
  const status = doc.getElementById('assistants-status');
  const send = async message => {
    const answer = await chrome.runtime.sendMessage(message).catch(error => ({ ok: false, error: error.message }));
    status.textContent = answer?.ok ? '' : `Could not do that: ${answer?.error ?? 'no answer from the extension'}`;
  };
  const render = async list => {
    root.replaceChildren();
    const assistants = Array.isArray(list) ? list : [];
    if (assistants.length === 0) {
      root.append(element(doc, 'p', { className: 'hint', textContent: 'No assistant is connected.' }));
      return;
    }
    const titles = await tabTitles(assistants.flatMap(a => a.tabs));
    for (const assistant of assistants)
      root.append(card(doc, assistant, titles, send));
    if (assistants.some(a => a.allowed)) {
      const stopAll = element(doc, 'button', { id: 'stop-all', className: 'danger', textContent: 'Stop all assistants' });
      stopAll.addEventListener('click', () => send({ type: OwnerMessage.STOP }));
      root.append(stopAll);
    }
  };
  render((await chrome.storage.session.get(ASSISTANTS_KEY))[ASSISTANTS_KEY]);
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'session' && changes[ASSISTANTS_KEY])
      render(changes[ASSISTANTS_KEY].newValue);
  });
}

/** @param {number[]} tabIds @returns {Promise<Map<number, string>>} */
async function tabTitles(tabIds) {
  const tabs = await Promise.all(tabIds.map(id => chrome.tabs.get(id).catch(() => undefined)));
  return new Map(tabs.filter(Boolean).map(tab => [tab.id, tab.title || tab.url || `tab ${tab.id}`]));
}

function card(doc, assistant, titles, send) {
  const box = element(doc, 'div', { className: `assistant ${assistant.allowed ? 'allowed' : assistant.denied ? 'denied' : 'pending'}` });
  box.dataset.connectionId = assistant.connectionId;
  box.style.borderLeftColor = GROUP_CSS[assistant.color] ?? '#80868b';
  const head = element(doc, 'div', { className: 'row' });
  head.append(element(doc, 'strong', { className: 'assistant-name', textContent: assistant.name }));
  head.append(element(doc, 'span', { className: 'hint', textContent: `since ${clock(assistant.since)}` }));
  box.append(head);
  if (!assistant.allowed) {
    box.append(element(doc, 'p', {
      className: 'hint',
      textContent: assistant.denied ? 'was denied by you: its requests are refused without asking.'
        : 'asks to use this browser: it could open tabs, read pages and act in them.',
    }));
    const buttons = element(doc, 'div', { className: 'buttons' });
    for (const [decision, label] of [['once', 'Allow once'], ['always', 'Always allow'], ['deny', 'Deny']]) {
      if ((decision === 'always' && assistant.key === null) || (decision === 'deny' && assistant.denied))
        continue;
      const button = element(doc, 'button', { textContent: label, className: `decide-${decision}` });
      button.addEventListener('click', () => send({ type: OwnerMessage.DECIDE, connectionId: assistant.connectionId, decision }));
      buttons.append(button);
    }
    box.append(buttons);
    return box;
  }
  const tabs = assistant.tabs.map(id => titles.get(id) ?? `tab ${id}`);
  box.append(element(doc, 'p', { className: 'hint tabs', textContent: tabs.length ? `Tabs: ${tabs.join(' · ')}` : 'No tabs yet' }));
  const actions = element(doc, 'ul', { className: 'actions' });
  for (const action of [...assistant.actions].reverse())
    actions.append(element(doc, 'li', { textContent: `${clock(action.at)} ${action.method}` }));
  box.append(actions);
  const stop = element(doc, 'button', { className: 'danger stop', textContent: 'Stop' });
  stop.addEventListener('click', () => send({ type: OwnerMessage.STOP, connectionId: assistant.connectionId }));
  box.append(stop);
  return box;
}

/** chrome.tabGroups colours as CSS, so the popup card matches the group in the tab strip. */
const GROUP_CSS = {
  grey: '#5f6368', blue: '#1a73e8', red: '#d93025', yellow: '#f9ab00', green: '#188038',
  pink: '#d01884', purple: '#a142f4', cyan: '#007b83', orange: '#fa903e',
};

/** @param {number} at */
function clock(at) {
  return new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

function element(doc, tag, props) {
  return Object.assign(doc.createElement(tag), props);
}
