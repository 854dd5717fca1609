// The evidence inspector's page. Every piece of data goes into the page as
// text (textContent; never parsed as HTML), and the token only into the
// Authorization header: the page takes it from a "#token=" fragment once,
// keeps it in this tab's sessionStorage and drops it from the address.
"use strict";

const tokenKey = "recall-inspector-token";
const $ = (id) => document.getElementById(id);

// el returns a new element with the given class and children; strings
// become text nodes.
function el(tag, cls, ...children) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return e;
}

function show(id, on) { $(id).hidden = !on; }

function showOnly(section) {
  for (const id of ["login", "forbidden", "users", "conversation"]) show(id, id === section);
  show("logout", section !== "login");
}

function setError(id, text) {
  $(id).textContent = text || "";
  show(id, !!text);
}

// state is the page's place, kept in the fragment: user and conversation.
function state() {
  const p = new URLSearchParams(location.hash.slice(1));
  return { user: p.get("user") || "", conversation: p.get("conversation") || "" };
}

function go(user, conversation) {
  const p = new URLSearchParams();
  if (user) p.set("user", user);
  if (conversation) p.set("conversation", conversation);
  location.hash = p.toString();
}

// takeToken moves a "#token=" of the address into sessionStorage.
function takeToken() {
  const p = new URLSearchParams(location.hash.slice(1));
  if (!p.has("token")) return;
  sessionStorage.setItem(tokenKey, p.get("token"));
  p.delete("token");
  history.replaceState(null, "", location.pathname + (p.toString() ? "#" + p.toString() : ""));
}

class HTTPError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// api calls a route of the inspector with the token; a 401 logs out and a
// 403 shows the forbidden page.
async function api(path, init) {
  const token = sessionStorage.getItem(tokenKey);
  if (!token) { showOnly("login"); throw new HTTPError(401, "not logged in"); }
  const headers = { Authorization: "Bearer " + token };
  if (init && init.body) headers["Content-Type"] = "application/json";
  const r = await fetch(path, Object.assign({}, init, { headers, cache: "no-store", credentials: "omit" }));
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (r.ok) return body;
  const message = body && body.error ? body.error.message : "HTTP " + r.status;
  if (r.status === 401) {
    sessionStorage.removeItem(tokenKey);
    showOnly("login");
    setError("login-error", message);
  } else if (r.status === 403) {
    showOnly("forbidden");
  }
  throw new HTTPError(r.status, message);
}

const enc = encodeURIComponent;
const userPath = (u) => "api/users/" + enc(u) + "/conversations";
const convPath = (u, c) => userPath(u) + "/" + enc(c);

async function route() {
  takeToken();
  if (!sessionStorage.getItem(tokenKey)) { showOnly("login"); return; }
  const s = state();
  try {
    if (s.user && s.conversation) await openConversation(s.user, s.conversation);
    else await listConversations(s.user);
  } catch (e) {
    if (!(e instanceof HTTPError)) throw e;
  }
}

async function listConversations(user) {
  showOnly("users");
  $("user-id").value = user;
  const list = $("conversations");
  list.replaceChildren();
  show("users-title", false);
  setError("users-error", "");
  if (!user) return;
  let body;
  try {
    body = await api(userPath(user) + "?limit=1000");
  } catch (e) {
    if (e.status !== 401 && e.status !== 403) setError("users-error", e.message);
    throw e;
  }
  $("users-name").textContent = user;
  show("users-title", true);
  if (body.conversations.length === 0) list.append(el("li", "note", "No conversation holds state."));
  for (const c of body.conversations) {
    const a = el("a", null, c.conversation_id);
    a.href = "#" + new URLSearchParams({ user, conversation: c.conversation_id }).toString();
    a.className = "id";
    list.append(el("li", null, a, " ", el("span", "note",
      "v" + c.version + " · cursor " + c.cursor + " · " + c.message_count + " messages · " + c.updated_at)));
  }
}

let current = null; // the open conversation: {user, conversation, entries, next}

async function openConversation(user, conversation) {
  showOnly("conversation");
  $("conv-title").textContent = conversation;
  $("back").href = "#" + new URLSearchParams({ user }).toString();
  setError("conv-error", "");
  $("search-result").replaceChildren();
  setError("search-error", "");
  let body;
  try {
    body = await api(convPath(user, conversation));
  } catch (e) {
    if (e.status !== 401 && e.status !== 403) setError("conv-error", e.message);
    throw e;
  }
  current = { user, conversation, entries: [], next: body.next, body };
  renderState(body);
  renderRejections(body.rejections);
  renderLane(body);
  $("archive").tBodies[0].replaceChildren();
  addEntries(body.entries);
}

function renderState(b) {
  const dl = $("conv-state");
  dl.replaceChildren();
  const pairs = [["version", b.version], ["cursor", b.cursor], ["messages", b.message_count],
    ["archive", b.archive_count], ["updated", b.updated_at || "never"]];
  for (const [k, v] of pairs) dl.append(el("dt", null, k), el("dd", null, String(v)));
  $("message").textContent = b.message ? pretty(b.message.content) : "(no evidence yet)";
  let note = "The stored message: what the model saw for the request at message " + b.request_index + ".";
  if (b.request_index < 0) note = "No focus view yet.";
  else if (!b.matches_stored) note += " The view chosen again now differs from the stored one: another version of recall chose it.";
  $("message-note").textContent = note;
}

// pretty indents the message's content when it is JSON (the focus
// profile's envelope is).
function pretty(content) {
  try {
    return JSON.stringify(JSON.parse(content), null, 1);
  } catch (e) {
    return content;
  }
}

// why says in words what the view did with an entry.
function why(e) {
  const d = e.decision;
  const classes = d.classes ? " (a candidate as " + d.classes.join(", ") + ")" : "";
  switch (d.why) {
    case "shown":
      return "shown as " + d.as + (d.spare ? ", with the room the other classes left" : ", within its class's share");
    case "superseded": {
      const by = d.superseded_by;
      return "superseded by message " + by.index + " (" + by.message_id + ", at byte " + by.span_start + ")" + classes;
    }
    case "no_room":
      return "no room left" + classes;
    case "not_candidate":
      return "not a candidate";
    default:
      return d.why;
  }
}

function addEntries(entries) {
  const tbody = $("archive").tBodies[0];
  for (const e of entries) {
    current.entries.push(e);
    const tr = el("tr", e.decision.why === "shown" ? "shown" : e.decision.why === "superseded" ? "superseded" : null,
      el("td", null, String(e.index)), el("td", null, e.role), el("td", null, e.bucket),
      el("td", null, e.tier, " ", el("span", "tag", "w" + e.weight)),
      el("td", null, e.excerpt + (e.truncated ? " …" : "")), el("td", null, why(e)));
    tbody.append(tr);
  }
  const b = current.body;
  const shown = current.entries.filter((e) => e.decision.why === "shown").length;
  $("archive-summary").textContent = current.entries.length + " of " + b.archive_count + " entries loaded; " +
    shown + " of them shown; " + b.room_left + " bytes of the " + b.max_tokens + "-token bound left unused.";
  show("more", !!current.next);
  renderCorrections();
}

function renderCorrections() {
  const list = $("corrections");
  list.replaceChildren();
  const at = new Map(current.entries.map((e) => [e.index + ":" + e.span[0], e]));
  for (const e of current.entries) {
    if (e.decision.why !== "superseded") continue;
    const by = e.decision.superseded_by;
    const newer = at.get(by.index + ":" + by.span_start);
    list.append(el("li", null, el("q", null, newer ? newer.excerpt : "message " + by.index),
      " replaced ", el("q", null, e.excerpt)));
  }
  if (!list.firstChild) list.append(el("li", "note", "No entry of the loaded archive is superseded."));
}

function renderRejections(rows) {
  const tbody = $("rejections").tBodies[0];
  tbody.replaceChildren();
  if (rows.length === 0) {
    const td = el("td", "note", "No event of this conversation was rejected.");
    td.colSpan = 5;
    tbody.append(el("tr", null, td));
  }
  for (const r of rows) {
    tbody.append(el("tr", null, el("td", null, String(r.id)), el("td", null, r.reason), el("td", "id", r.event_id),
      el("td", null, r.received_at), el("td", null, r.detail)));
  }
}

// renderLane shows the model lane's notes and calls, when it ran for the
// conversation: outcomes and counts, never a prompt or an answer.
function renderLane(b) {
  const notes = b.notes || [], calls = b.model_calls || [];
  show("lane", notes.length > 0 || calls.length > 0 || b.model_calls_answered > 0);
  const shown = notes.filter((n) => n.shown).length;
  $("lane-summary").textContent = b.note_count + " notes written by the model (" + notes.length + " listed, " + shown +
    " of them shown); " + b.model_calls_answered + " calls answered; the newest that failed below.";
  const nb = $("notes").tBodies[0];
  nb.replaceChildren();
  for (const n of notes) {
    nb.append(el("tr", n.shown ? "shown" : null, el("td", null, String(n.index)), el("td", null, n.role),
      el("td", null, n.bucket), el("td", null, n.text + (n.truncated ? " …" : "")), el("td", null, n.shown ? "yes" : "no")));
  }
  const cb = $("model-calls").tBodies[0];
  cb.replaceChildren();
  for (const c of calls) {
    cb.append(el("tr", c.outcome === "ok" ? null : "superseded", el("td", null, c.at), el("td", null, c.lo + "–" + (c.hi - 1)),
      el("td", null, String(c.attempt)), el("td", null, c.outcome), el("td", null, String(c.notes)), el("td", null, String(c.dropped)),
      el("td", null, c.tokens_in + " / " + c.tokens_out), el("td", null, c.seconds.toFixed(2))));
  }
}

async function loadMore() {
  if (!current || !current.next) return;
  const body = await api(convPath(current.user, current.conversation) + "?after=" + enc(current.next));
  current.next = body.next;
  addEntries(body.entries);
}

async function search(query) {
  const list = $("search-result");
  list.replaceChildren();
  setError("search-error", "");
  let body;
  try {
    body = await api(convPath(current.user, current.conversation) + "/search", {
      method: "POST", body: JSON.stringify({ query }),
    });
  } catch (e) {
    if (e.status !== 401 && e.status !== 403) setError("search-error", e.message);
    return;
  }
  for (const [bucket, entries] of Object.entries(body.buckets || {})) {
    for (const e of entries) {
      list.append(el("li", null, el("span", "tag", bucket), " ", e.excerpt, " ", el("span", "note", "(message " + e.index + ")")));
    }
  }
  if (!list.firstChild) list.append(el("li", "note", "The view for this query shows nothing."));
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(tokenKey, $("token").value.trim());
    $("token").value = "";
    setError("login-error", "");
    route();
  });
  const logout = () => { sessionStorage.removeItem(tokenKey); current = null; go("", ""); showOnly("login"); };
  $("logout").addEventListener("click", logout);
  $("forbidden-logout").addEventListener("click", logout);
  $("user-form").addEventListener("submit", (ev) => { ev.preventDefault(); go($("user-id").value.trim(), ""); });
  $("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); search($("query").value); });
  $("more").addEventListener("click", () => { loadMore().catch(() => {}); });
  window.addEventListener("hashchange", route);
  route();
});
