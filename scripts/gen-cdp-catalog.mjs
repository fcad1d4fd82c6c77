#!/usr/bin/env node
// Generates crates/bridge/src/data/cdp_catalog.json, the Chrome DevTools Protocol command catalog that
// the bridge's `retrieve_tools` searches and `call_tool_*` checks, from the `devtools-protocol`
// npm package:
//
//   tmp=$(mktemp -d) && npm install --prefix "$tmp" devtools-protocol
//   node scripts/gen-cdp-catalog.mjs "$tmp/node_modules/devtools-protocol" > crates/bridge/src/data/cdp_catalog.json
//
// Each command gets an `access` class: "read", "write" or "destructive". The rule (also written
// into the catalog as `rule`) looks at the first camel-case word of the command name:
//   read:        get describe query search capture request take can collect resolve
//                print snapshot profile compositing check explain find disassemble
//   destructive: clear delete remove crash close terminate dispose erase purge reset uninstall
//                forcibly
//   write:       everything else (enable, set, navigate, dispatch, ...)
// then applies the hand-corrected list in OVERRIDES (commands whose verb misleads).
import { readFileSync } from "node:fs";
import { join } from "node:path";

const pkgDir = process.argv[2];
if (!pkgDir) {
  console.error("usage: gen-cdp-catalog.mjs <path to node_modules/devtools-protocol>");
  process.exit(2);
}
const load = (f) => JSON.parse(readFileSync(join(pkgDir, f), "utf8"));
const version = load("package.json").version;
const protocols = [load("json/browser_protocol.json"), load("json/js_protocol.json")];

const READ = ["get", "describe", "query", "search", "capture", "request", "take", "can", "collect",
  "resolve", "print", "snapshot", "profile", "compositing", "check", "explain", "find", "disassemble"];
const DESTRUCTIVE = ["clear", "delete", "remove", "crash", "close", "terminate", "dispose", "erase",
  "purge", "reset", "uninstall", "forcibly"];
// Hand corrections: the verb says one thing, the command does another.
const OVERRIDES = {
  // Read despite the verb.
  "DOM.performSearch": "read",
  "DOM.discardSearchResults": "read",
  "IO.read": "read",
  "LayerTree.replaySnapshot": "read",
  "LayerTree.makeSnapshot": "read",
  "LayerTree.loadSnapshot": "read",
  "Runtime.globalLexicalScopeNames": "read",
  "CSS.trackComputedStyleUpdates": "read",
  "DOMSnapshot.captureSnapshot": "read",
  // Running arbitrary script or replacing the whole page can do anything: destructive.
  "Runtime.evaluate": "destructive",
  "Runtime.callFunctionOn": "destructive",
  "Runtime.runScript": "destructive",
  "Runtime.compileScript": "write",
  "Debugger.evaluateOnCallFrame": "destructive",
  "Debugger.setScriptSource": "destructive",
  "Page.setDocumentContent": "destructive",
  "Page.resetNavigationHistory": "destructive",
  "Page.stopLoading": "write",
  "Network.replayXHR": "destructive",
  "Fetch.failRequest": "destructive",
  "Browser.cancelDownload": "destructive",
  "Target.disposeBrowserContext": "destructive",
  "Storage.resetCookies": "destructive",
  // "reset" of an override only restores a default: a write, not a loss.
  "Emulation.resetPageScaleFactor": "write",
  "Browser.resetPermissions": "write",
  "Page.resetPermissions": "write",
  "Input.cancelDragging": "write",
};

function firstWord(name) {
  const m = name.match(/^[a-z]+/);
  return m ? m[0] : name;
}

function access(full, name) {
  if (OVERRIDES[full]) return OVERRIDES[full];
  const w = firstWord(name);
  if (READ.includes(w)) return "read";
  if (DESTRUCTIVE.includes(w)) return "destructive";
  return "write";
}

// First sentence, at most `max` characters: enough for ranking and for a model to choose.
function short(text, max) {
  if (!text) return undefined;
  let t = text.replace(/\s+/g, " ").trim();
  const dot = t.search(/\.(\s|$)/);
  if (dot > 0) t = t.slice(0, dot + 1);
  return t.length > max ? t.slice(0, max - 1) + "…" : t;
}

function typeOf(p) {
  if (p.$ref) return p.$ref;
  if (p.type === "array") return `array<${p.items ? (p.items.$ref || p.items.type) : "any"}>`;
  if (p.enum) return p.enum.map((e) => JSON.stringify(e)).join("|");
  return p.type || "any";
}

const domains = [];
const seen = new Set();
for (const protocol of protocols) {
  for (const d of protocol.domains) {
    if (seen.has(d.domain)) continue;
    seen.add(d.domain);
    const commands = (d.commands || []).map((c) => {
      const full = `${d.domain}.${c.name}`;
      const cmd = { name: c.name, access: access(full, c.name) };
      const desc = short(c.description, 240);
      if (desc) cmd.description = desc;
      if (c.parameters && c.parameters.length) {
        cmd.params = c.parameters.map((p) => {
          const o = { name: p.name, type: typeOf(p) };
          if (p.optional) o.optional = true;
          const pd = short(p.description, 100);
          if (pd) o.description = pd;
          return o;
        });
      }
      if (c.returns && c.returns.length) cmd.returns = c.returns.map((r) => r.name);
      if (c.experimental) cmd.experimental = true;
      if (c.deprecated) cmd.deprecated = true;
      return cmd;
    });
    if (!commands.length) continue;
    const dom = { domain: d.domain, commands };
    const dd = short(d.description, 200);
    if (dd) dom.description = dd;
    domains.push(dom);
  }
}
domains.sort((a, b) => a.domain.localeCompare(b.domain));

const catalog = {
  source: `devtools-protocol@${version}`,
  rule:
    "access by the command's first camel-case word: " +
    `read = ${READ.join("|")}; destructive = ${DESTRUCTIVE.join("|")}; write = anything else; ` +
    "then the hand corrections in scripts/gen-cdp-catalog.mjs (OVERRIDES)",
  domains,
};
process.stdout.write(JSON.stringify(catalog) + "\n");
