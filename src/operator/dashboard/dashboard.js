// The dashboard page: signs in with a pasted token, then polls the relay's
// /dashboard/api/* every 2.5 s. Every value from the relay goes in with textContent, never as
// HTML. State-changing requests carry the session's CSRF token in X-CSRF-Token.
"use strict";

const POLL_MS = 2500;
const ARM_MS = 5000; // how long a "Confirm revoke" button waits for its second click
let csrf = null;
let timer = null;
let armed = null; // {key, until}: the Revoke button waiting for confirmation

const $ = (id) => document.getElementById(id);

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function call(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (csrf && method !== "GET") headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, credentials: "same-origin", cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new Error("The relay cannot be reached (" + e.message + "). Retrying…");
  }
  let data = {};
  try { data = await response.json(); } catch (_) { /* not JSON */ }
  if (!response.ok) {
    const error = new Error(data.error || ("The relay answered " + response.status));
    error.status = response.status;
    throw error;
  }
  return data;
}

function signedOut(message) {
  csrf = null;
  if (timer) clearTimeout(timer);
  timer = null;
  $("panels").hidden = true;
  $("who").hidden = true;
  $("sign-in").hidden = false;
  showError(message);
  $("token").focus();
}

function signedIn(session) {
  csrf = session.csrf_token;
  $("who-name").textContent = session.user_id;
  const role = $("who-role");
  role.textContent = session.admin ? "admin: every user" : "your browsers";
  role.className = "badge " + (session.admin ? "warn" : "ok");
  $("who").hidden = false;
  if (!$("revoke-user").value) $("revoke-user").value = session.user_id;
  $("revoke-user").readOnly = !session.admin;
  $("sign-in").hidden = true;
  $("panels").hidden = false;
  showError("");
  refresh();
}

function cell(row, label, text, className) {
  const td = document.createElement("td");
  td.dataset.label = label;
  if (text instanceof Node) td.appendChild(text); else td.textContent = text == null ? "" : String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function badge(text, kind) {
  const span = document.createElement("span");
  span.className = "badge " + (kind || "");
  span.textContent = text;
  return span;
}

function twoLines(main, sub) {
  const frag = document.createElement("div");
  frag.className = "stack";
  const a = document.createElement("span");
  a.textContent = main;
  frag.appendChild(a);
  if (sub) {
    const b = document.createElement("span");
    b.className = "sub mono";
    b.textContent = sub;
    frag.appendChild(b);
  }
  return frag;
}

function button(text, kind, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (kind) b.className = kind;
  b.addEventListener("click", async () => {
    b.disabled = true;
    try { await onClick(); } catch (e) { handle(e); } finally { b.disabled = false; }
  });
  return b;
}

function when(text) {
  if (!text) return "";
  const d = new Date(text);
  return isNaN(d) ? text : d.toLocaleString();
}

function fill(table, emptyId, rows, draw) {
  const body = $(table).tBodies[0];
  body.replaceChildren(...rows.map(draw));
  $(table).hidden = rows.length === 0;
  $(emptyId).hidden = rows.length !== 0;
}

function drawBrowser(b) {
  const tr = document.createElement("tr");
  tr.dataset.id = b.id;
  cell(tr, "Name", twoLines(b.name || "(unnamed)", b.id));
  cell(tr, "User", b.user_id);
  cell(tr, "Status", b.connected ? badge("connected", "ok") : badge("offline"));
  cell(tr, "Approval", b.revoked ? badge("revoked", "bad")
    : b.approved ? badge("approved", "ok") : badge("pending", "warn"));
  cell(tr, "Last seen", when(b.last_seen));
  cell(tr, "Version", b.version || "—");
  const actions = cell(tr, "", "", "actions");
  if (!b.approved || b.revoked) {
    actions.appendChild(button("Approve", "", async () => {
      await call("POST", "/dashboard/api/browsers/" + encodeURIComponent(b.id) + "/approve");
      await refresh();
    }));
  }
  if (!b.revoked) {
    const key = "browser:" + b.id;
    const confirming = armed && armed.key === key && armed.until > Date.now();
    actions.appendChild(button(confirming ? "Confirm revoke" : "Revoke", "danger", async () => {
      if (!(armed && armed.key === key && armed.until > Date.now())) {
        armed = { key, until: Date.now() + ARM_MS };
        await refresh();
        return;
      }
      armed = null;
      await call("POST", "/dashboard/api/browsers/" + encodeURIComponent(b.id) + "/revoke");
      await refresh();
    }));
  }
  return tr;
}

function drawConnection(c) {
  const tr = document.createElement("tr");
  tr.dataset.id = c.id;
  // In a cluster, the node holding the assistant's socket follows its connection id.
  cell(tr, "Assistant", twoLines(c.client_name || "(unnamed)", c.node ? c.id + " · " + c.node : c.id));
  cell(tr, "User", c.user_id);
  cell(tr, "Browser", twoLines(c.extension_name || "", c.extension_id));
  cell(tr, "Pending", c.pending_requests);
  const actions = cell(tr, "", "", "actions");
  actions.appendChild(button("Kick", "danger", async () => {
    await call("DELETE", "/dashboard/api/connections/" + encodeURIComponent(c.id));
    await refresh();
  }));
  return tr;
}

function drawEvent(e) {
  const tr = document.createElement("tr");
  cell(tr, "Time", when(e.at));
  cell(tr, "Kind", e.kind);
  cell(tr, "User", e.user_id);
  cell(tr, "Browser", e.extension_id || "—", "mono");
  cell(tr, "Method", e.method || e.detail || "—");
  cell(tr, "Outcome", e.code === 0 ? badge("ok", "ok") : badge("error " + e.code, "bad"));
  cell(tr, "Duration", e.duration_ms == null ? "—" : Number(e.duration_ms).toFixed(1) + " ms");
  return tr;
}

function handle(error) {
  if (error.status === 401) signedOut("Signed out: " + error.message);
  else showError(error.message);
}

async function refresh() {
  if (timer) clearTimeout(timer);
  timer = null;
  // A hidden tab does not poll; it refreshes as soon as it is shown again.
  if (document.hidden) return;
  try {
    const [b, c, a] = await Promise.all([
      call("GET", "/dashboard/api/browsers"),
      call("GET", "/dashboard/api/connections"),
      call("GET", "/dashboard/api/audit?limit=50"),
    ]);
    fill("browsers", "browsers-empty", b.browsers, drawBrowser);
    fill("connections", "connections-empty", c.connections, drawConnection);
    fill("audit", "audit-empty", a.events, drawEvent);
    $("updated").textContent = "Updated " + new Date().toLocaleTimeString();
    showError("");
  } catch (e) {
    handle(e);
    if (e.status === 401) return;
  }
  if (csrf) timer = setTimeout(refresh, POLL_MS);
}

document.addEventListener("DOMContentLoaded", async () => {
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const field = $("token");
    const token = field.value.trim();
    if (!token) return;
    $("sign-in-button").disabled = true;
    try {
      const session = await call("POST", "/dashboard/session", { token });
      field.value = ""; // the page keeps no copy of the token
      signedIn(session);
    } catch (e) {
      showError("Sign-in refused: " + e.message);
    } finally {
      $("sign-in-button").disabled = false;
    }
  });
  // Token revocation asks again, like Revoke on a browser: the first click arms the button.
  const confirmSubmit = (formId, buttonId, label, send) => {
    $(formId).addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = $(buttonId);
      const key = "form:" + formId;
      if (!(armed && armed.key === key && armed.until > Date.now())) {
        armed = { key, until: Date.now() + ARM_MS };
        button.textContent = "Confirm: " + label.toLowerCase();
        setTimeout(() => { if (!armed || armed.key !== key) return; button.textContent = label; }, ARM_MS);
        return;
      }
      armed = null;
      button.textContent = label;
      button.disabled = true;
      try {
        const answer = await send();
        const result = $("revoke-result");
        result.textContent = "Revoked; " + answer.closed_sockets + " live socket(s) closed.";
        result.hidden = false;
        await refresh();
      } catch (e) {
        handle(e);
      } finally {
        button.disabled = false;
      }
    });
  };
  confirmSubmit("revoke-jti-form", "revoke-jti", "Revoke token", () =>
    call("POST", "/dashboard/api/tokens/revoke", { jti: $("jti").value.trim() }));
  confirmSubmit("revoke-user-form", "revoke-all", "Revoke all", () =>
    call("POST", "/dashboard/api/tokens/revoke",
      { user_id: $("revoke-user").value.trim(), issued_before: "now" }));
  $("sign-out").addEventListener("click", async () => {
    try { await call("DELETE", "/dashboard/session"); } catch (_) { /* signed out anyway */ }
    signedOut("");
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && csrf) refresh();
  });
  try {
    signedIn(await call("GET", "/dashboard/session"));
  } catch (e) {
    signedOut(e.status === 401 ? "" : e.message);
  }
});
