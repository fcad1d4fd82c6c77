/**
 * emulateMedia's per-tab overrides (issue 23): Playwright MCP's browser_emulate_media
 * semantics, where an absent parameter leaves its override alone and `null` clears it.
 * CDP's `Emulation.setEmulatedMedia` replaces the whole set at each call, so the tab's
 * overrides are kept and sent whole. Pure; Node-tested.
 */

/** Each parameter, its allowed values, and the CSS media feature it sets (media: the type). */
export const MEDIA_PARAMS = Object.freeze({
  media: { values: ['screen', 'print'] },
  colorScheme: { values: ['light', 'dark', 'no-preference'], feature: 'prefers-color-scheme' },
  reducedMotion: { values: ['reduce', 'no-preference'], feature: 'prefers-reduced-motion' },
  forcedColors: { values: ['active', 'none'], feature: 'forced-colors' },
  contrast: { values: ['more', 'less', 'no-preference'], feature: 'prefers-contrast' },
});

/**
 * The overrides after a call: `params` values replace, nulls delete, absent keys stay.
 *
 * @param {Record<string, string>} current
 * @param {Record<string, string | null | undefined>} params
 * @returns {Record<string, string>}
 */
export function mergeMedia(current, params) {
  const next = { ...current };
  for (const name of Object.keys(MEDIA_PARAMS)) {
    if (params[name] === null)
      delete next[name];
    else if (typeof params[name] === 'string')
      next[name] = params[name];
  }
  return next;
}

/**
 * The `Emulation.setEmulatedMedia` params for a set of overrides (an empty media type and an
 * absent feature mean "as the browser is").
 *
 * @param {Record<string, string>} overrides
 */
export function emulatedMediaParams(overrides) {
  const features = [];
  for (const [name, spec] of Object.entries(MEDIA_PARAMS)) {
    if (spec.feature && overrides[name] !== undefined)
      features.push({ name: spec.feature, value: overrides[name] });
  }
  return { media: overrides.media ?? '', features };
}
