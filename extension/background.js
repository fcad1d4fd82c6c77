/**
 * Service worker entry point: wires settings, the relay supervisor, the
 * watchdog alarm and the toolbar badge together. Connection logic lives in
 * lib/; UI lives in ui/.
 *
 * Chrome may stop this worker at any time and re-run this file from the top
 * on the next event, so everything here is idempotent and listeners are
 * registered synchronously (Chrome only delivers wake-up events to listeners
 * that exist after the first pass).
 */

import { DebuggerSessions } from './lib/debugger-sessions.js';
import { registerOwnerControl } from './lib/owner-wiring.js';
import { RelaySupervisor } from './lib/relay-supervisor.js';
import { STATE_KEY, SettingsKey, loadClientId, loadDevConfig, loadSettings } from './lib/settings.js';

/** The safety net for a worker whose timers died with it. 0.5 min is Chrome's minimum period since 120. */
const WATCHDOG_ALARM = 'relay-watchdog';
const WATCHDOG_PERIOD_MINUTES = 0.5;

const SETTINGS_KEYS = new Set([SettingsKey.RELAY_URL, SettingsKey.TOKEN, SettingsKey.NAME, SettingsKey.ENABLED]);

/** Read once per worker start: tests drop the file in before Chrome starts. */
const devConfig = loadDevConfig();

/** Consent, tab groups, off-limits sites, Stop: see lib/owner-control.js. */
const owner = registerOwnerControl(devConfig, (connectionId, reason) => supervisor.closeConnection(connectionId, reason),
  receipt => supervisor.recordDecision(receipt));

const supervisor = new RelaySupervisor({
  loadSettings: async () => loadSettings(await devConfig),
  loadClientId,
  version: chrome.runtime.getManifest().version,
  publish: publishState,
  owner,
});

chrome.alarms.onAlarm.addListener(alarm => {
  if (alarm.name === WATCHDOG_ALARM)
    supervisor.ensureConnected();
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'local' && Object.keys(changes).some(key => SETTINGS_KEYS.has(key)))
    restartFresh();
});

/** "Save and reconnect" with unchanged settings: the user wants a fresh attempt now, not after the backoff. */
chrome.runtime.onMessage.addListener(message => {
  if (message?.type === 'reconnect')
    restartFresh();
});

chrome.alarms.get(WATCHDOG_ALARM).then(existing => {
  if (!existing)
    chrome.alarms.create(WATCHDOG_ALARM, { periodInMinutes: WATCHDOG_PERIOD_MINUTES });
});

restartFresh();

/** Reconnects; sessions of a previous worker are detached first, so they cannot race this worker's first attach. */
function restartFresh() {
  DebuggerSessions.detachLeftovers().catch(() => {}).finally(() => supervisor.restart());
}

/**
 * Session storage, not local: the state is only true while this browser
 * session runs, and the popup/options pages read it without waking anything.
 *
 * @param {import('./lib/relay-supervisor.js').RelayState} state
 */
function publishState(state) {
  chrome.storage.session.set({ [STATE_KEY]: state }).catch(() => {});
  // The badge counts assistants (and asks for decisions) first; the relay state shows when there are none.
  owner.relayStateChanged(state);
  chrome.action.setTitle({ title: `mcp-relay: ${state.state}${state.lastError ? ` (${state.lastError})` : ''}` }).catch(() => {});
}
