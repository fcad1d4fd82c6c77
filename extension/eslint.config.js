/**
 * The extension's linter (run by `npm test`, and so by `cargo test`'s tests/extension_unit.rs).
 * Only rules that catch defects: a name used but never defined (a missing import after code
 * moved), one defined but never used, and import cycles (commands.js once imported
 * playwright-commands.js, which imported it back). No style rules: the code has a style, and
 * rustfmt-like churn is not what this is for.
 */
import js from '@eslint/js';
import importPlugin from 'eslint-plugin-import';
import globals from 'globals';

export default [
  { ignores: ['node_modules/', 'screenshots/'] },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    plugins: { import: importPlugin },
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      // The service worker (lib/, background.js), the extension's pages (ui/) and the
      // functions page-scripts.js sends into web pages all run in Chrome.
      globals: { ...globals.browser, ...globals.serviceworker, ...globals.webextensions },
    },
    settings: { 'import/resolver': { node: { extensions: ['.js'] } } },
    rules: {
      // Unused parameters are left alone: a fake or a listener keeps the signature it stands in for.
      'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none', ignoreRestSiblings: true }],
      'no-undef': 'error',
      'import/no-cycle': ['error', { ignoreExternal: true }],
      'import/no-unresolved': 'error',
      'import/named': 'error',
      'import/no-self-import': 'error',
    },
  },
  {
    // The Node test runner's files, and this file.
    files: ['test/**/*.js', 'eslint.config.js'],
    languageOptions: { globals: { ...globals.node } },
  },
];
