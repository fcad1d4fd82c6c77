/**
 * The popup's "Waiting for you" section (issue 29): each hand-off an assistant asked for ("do
 * this step in my tab, then click Done") and each ask-before prompt ("I am about to submit this
 * form: Allow?"), with who asks, what, on which page, and until when. The answer goes to the
 * service worker as a runtime message (lib/owner-wiring.js); the list is what it publishes in
 * chrome.storage.session.
 */

import { PERSON_REQUESTS_KEY } from '../lib/owner-control.js';
import { OwnerMessage } from '../lib/owner-wiring.js';

/** The buttons of each kind of request: the answer sent, and its label. */
const ANSWERS = Object.freeze({
  'hand-off': [['done', 'Done'], ['cancelled', 'Cancel']],
  ask: [['allowed', 'Allow'], ['denied', 'Deny']],
});

/** @param {Document} doc */
export async function showPersonRequests(doc) {
  const section = doc.getElementById('person');
  const root = doc.getElementById('person-requests');
  const status = doc.getElementById('person-status');
  const send = async message => {
    const answer = await chrome.runtime.sendMessage(message).catch(error => ({ ok: false, error: error.message }));
    status.textContent = answer?.ok ? '' : `Could not do that: ${answer?.error ?? 'no answer from the extension'}`;
  };
  const render = list => {
    const requests = Array.isArray(list) ? list : [];
    section.hidden = requests.length === 0;
    root.replaceChildren(...requests.map(request => card(doc, request, send)));
  };
  render((await chrome.storage.session.get(PERSON_REQUESTS_KEY))[PERSON_REQUESTS_KEY]);
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'session' && changes[PERSON_REQUESTS_KEY])
      render(changes[PERSON_REQUESTS_KEY].newValue);
  });
}

function card(doc, request, send) {
  const handOff = request.kind === 'hand-off';
  const box = element(doc, 'div', { className: `person-request ${handOff ? 'hand-off' : 'ask'}` });
  box.dataset.requestId = request.id;
  box.append(element(doc, 'p', {
    className: 'person-ask',
    textContent: handOff ? `${request.assistant} asks you to: ${request.reason}`
      : `${request.assistant} is about to ${request.reason}.`,
  }));
  box.append(element(doc, 'p', {
    className: 'hint person-page',
    textContent: `On ${request.page.title ? `"${request.page.title}" ` : ''}${siteOf(request.page.url)} (tab ${request.tabId}) · ` +
      `${handOff ? 'waits' : 'asks'} until ${clock(request.deadline)}`,
  }));
  if (handOff) {
    box.append(element(doc, 'p', {
      className: 'hint',
      textContent: 'Do it in that tab, then click Done. The assistant does nothing there meanwhile.',
    }));
  }
  const buttons = element(doc, 'div', { className: 'buttons' });
  for (const [answer, label] of ANSWERS[request.kind] ?? []) {
    const button = element(doc, 'button', { textContent: label, className: `person-${answer}` });
    button.addEventListener('click', () => send({ type: OwnerMessage.PERSON_ANSWER, id: request.id, answer }));
    buttons.append(button);
  }
  const show = element(doc, 'button', { textContent: 'Show the tab', className: 'person-show' });
  show.addEventListener('click', () => send({ type: OwnerMessage.SHOW_TAB, id: request.id }));
  buttons.append(show);
  box.append(buttons);
  return box;
}

/** @param {string} url */
function siteOf(url) {
  try {
    const parsed = new URL(url);
    return parsed.host ? `${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}` : url;
  } catch {
    return url || 'a page';
  }
}

/** @param {number} at */
function clock(at) {
  return new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

function element(doc, tag, props) {
  return Object.assign(doc.createElement(tag), props);
}
