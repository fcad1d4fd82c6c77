/**
 * Which Chrome tab group shows which assistant's tabs.
 *
 * Groups belong to one window, and agent tabs open in windows of their own
 * (see openAgentTab in commands.js), so one assistant has one group per
 * window it has tabs in, all with its name and its colour. A group id is
 * enough to tell whose tab the person dragged where.
 *
 * Pure: plain Maps, no `chrome.*`.
 */

/** chrome.tabGroups.Color values, in the order assistants get them. */
export const GROUP_COLORS = Object.freeze(['blue', 'purple', 'orange', 'cyan', 'pink', 'green', 'red', 'yellow', 'grey']);

/**
 * A colour no live assistant uses, so two assistants never look alike; after
 * nine at once, colours repeat.
 *
 * @param {Iterable<string>} inUse
 * @returns {string}
 */
export function pickGroupColor(inUse) {
  const taken = new Set(inUse);
  return GROUP_COLORS.find(color => !taken.has(color)) ?? GROUP_COLORS[taken.size % GROUP_COLORS.length];
}

export class AssistantGroups {
  constructor() {
    /** @type {Map<number, {connectionId: string, windowId: number}>} group id → whose, where */
    this._byGroup = new Map();
  }

  /** @param {number} groupId @returns {string | undefined} the connection whose group it is */
  ownerOf(groupId) {
    return this._byGroup.get(groupId)?.connectionId;
  }

  /**
   * @param {string} connectionId
   * @param {number} windowId
   * @returns {number | undefined} the connection's group in that window
   */
  groupIn(connectionId, windowId) {
    for (const [groupId, entry] of this._byGroup) {
      if (entry.connectionId === connectionId && entry.windowId === windowId)
        return groupId;
    }
    return undefined;
  }

  /** @param {string} connectionId @returns {number[]} */
  groupsOf(connectionId) {
    return [...this._byGroup].filter(([, entry]) => entry.connectionId === connectionId).map(([groupId]) => groupId);
  }

  /** @param {number} groupId @param {string} connectionId @param {number} windowId */
  add(groupId, connectionId, windowId) {
    this._byGroup.set(groupId, { connectionId, windowId });
  }

  /** The person closed or emptied the group (Chrome removes empty groups). @param {number} groupId */
  removeGroup(groupId) {
    this._byGroup.delete(groupId);
  }

  /** @param {string} connectionId @returns {number[]} the groups it had */
  removeConnection(connectionId) {
    const groups = this.groupsOf(connectionId);
    for (const groupId of groups)
      this._byGroup.delete(groupId);
    return groups;
  }

  /**
   * What a tab's move into `groupId` means for `tabOwner` (the connection
   * owning the tab, if any).
   *
   * @param {string | undefined} tabOwner
   * @param {number} groupId -1 when the tab left every group
   * @returns {{kind: 'none'} | {kind: 'taken', from: string} | {kind: 'given', to: string} | {kind: 'moved', from: string, to: string}}
   */
  classifyMove(tabOwner, groupId) {
    const groupOwner = groupId === -1 ? undefined : this.ownerOf(groupId);
    if (tabOwner === groupOwner)
      return { kind: 'none' };
    if (tabOwner !== undefined && groupOwner !== undefined)
      return { kind: 'moved', from: tabOwner, to: groupOwner };
    if (tabOwner !== undefined)
      return { kind: 'taken', from: tabOwner };
    return { kind: 'given', to: /** @type {string} */ (groupOwner) };
  }
}
