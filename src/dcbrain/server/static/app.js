// dcbrain web page: conversations, and the current run live from its event stream (run.js).
// Plain DOM, no build step. Every piece of server text goes through textContent.
"use strict";

const app = {
  token: sessionStorage.getItem("dcbrain-token") || "",
  conversationId: null,
  listing: null,      // whether the server lists conversations (from /v1/health)
  run: null,
  source: null,
  renderQueued: false,
};

// -- small DOM helpers -----------------------------------------------------------------

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "style") node.style.cssText = value; // CSSOM: allowed by the page's CSP
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of [].concat(children)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return "…";
  if (seconds < 0.001) return "<1 ms";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

function formatValue(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

function shortTime(ts) {
  return new Date(ts * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// -- HTTP --------------------------------------------------------------------------------

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (app.token) headers.Authorization = `Bearer ${app.token}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method: options.method || "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (response.status === 401) {
    askForToken();
    throw new Error("this server needs an API token");
  }
  if (!response.ok) {
    const detail = data && data.detail ? data.detail : response.statusText;
    const error = new Error(`${response.status}: ${detail}`);
    error.status = response.status;
    error.code = data && data.error;
    throw error;
  }
  return data;
}

function askForToken() {
  $("token-button").hidden = false;
  const dialog = $("token-dialog");
  if (!dialog.open) dialog.showModal();
}

function setConnection(state, text) {
  const node = $("connection");
  node.dataset.state = state;
  node.textContent = text;
}

// -- conversations and messages ------------------------------------------------------------

// The server lists conversations only when started with --list-conversations. Without
// it, the page lists the conversations it started itself, kept in this browser.
const SAVED_CONVERSATIONS = "dcbrain-conversations";
const MAX_SAVED_CONVERSATIONS = 200;

function savedConversations() {
  let saved;
  try { saved = JSON.parse(localStorage.getItem(SAVED_CONVERSATIONS) || "[]"); } catch (_) {
    saved = [];
  }
  if (!Array.isArray(saved)) return [];
  return saved.filter((item) => item && typeof item.conversation_id === "string");
}

function storeConversations(items) {
  items.sort((a, b) => (b.updated_at || 0) - (a.updated_at || 0));
  try {
    localStorage.setItem(SAVED_CONVERSATIONS,
      JSON.stringify(items.slice(0, MAX_SAVED_CONVERSATIONS)));
  } catch (_) { /* storage full or disabled: the list is only this page's memory */ }
}

function saveConversation(entry) {
  const items = savedConversations();
  const known = items.find((item) => item.conversation_id === entry.conversation_id);
  if (known) Object.assign(known, entry); else items.push(entry);
  storeConversations(items);
}

// Keep a saved conversation's summary in step with what the server says about it.
function updateSavedConversation(conversationId, data) {
  const items = savedConversations();
  const known = items.find((item) => item.conversation_id === conversationId);
  if (!known || !data.runs.length) return;
  const latest = data.runs[0];
  Object.assign(known, {
    first_question: known.first_question || firstQuestion(data),
    last_question: latest.question || known.last_question,
    last_status: latest.status,
    updated_at: latest.updated_at || known.updated_at,
    runs: data.runs.length,
  });
  storeConversations(items);
}

// The question that opened a conversation: its first message, else its oldest listed run's.
function firstQuestion(data) {
  const message = (data.messages || []).find((item) => item.role === "user");
  if (message) return message.content;
  const runs = data.runs || [];
  return runs.length ? runs[runs.length - 1].question || "" : "";
}

function setChatTitle(conversationId, label) {
  const title = $("chat-title");
  title.textContent = label || "New conversation";
  title.title = conversationId ? `conversation ${conversationId}` : "";
  if (conversationId) title.dataset.conversationId = conversationId;
  else delete title.dataset.conversationId;
}

function forgetConversation(conversationId) {
  storeConversations(savedConversations().filter(
    (item) => item.conversation_id !== conversationId));
}

async function serverListsConversations() {
  if (app.listing === null) {
    try {
      app.listing = Boolean((await api("/v1/health")).list_conversations);
    } catch (_) {
      return false;  // ask again next time
    }
  }
  return app.listing;
}

async function loadConversations() {
  let items = null;
  if (await serverListsConversations()) {
    try {
      items = (await api("/v1/conversations")).conversations;
    } catch (error) {
      if (error.status !== 404) return;
    }
  }
  if (items === null) items = savedConversations();  // listing is off on this server
  const list = $("conversations");
  list.replaceChildren();
  for (const item of items) {
    const active = item.conversation_id === app.conversationId;
    const first = item.first_question || item.last_question || item.conversation_id;
    const last = item.last_question && item.last_question !== first ? item.last_question : "";
    list.append(el("li", {}, el("button", {
      type: "button",
      class: `conversation${active ? " active" : ""}`,
      title: item.conversation_id,
      "data-conversation-id": item.conversation_id,
      onclick: () => openConversation(item.conversation_id),
    }, [
      el("span", { class: `dot status-${item.last_status}`, title: item.last_status }),
      el("span", { class: "conversation-text" }, [
        el("span", { class: "conversation-title", text: first }),
        last ? el("span", { class: "conversation-question", text: last }) : null,
      ]),
    ])));
  }
  if (!items.length) {
    list.append(el("li", { class: "muted pad", text: "No conversations yet." }));
  }
}

async function openConversation(conversationId, { followLatest = true } = {}) {
  app.conversationId = conversationId;
  history.replaceState(null, "", `#${encodeURIComponent(conversationId)}`);
  setChatTitle(conversationId, "");
  let data;
  try {
    data = await api(`/v1/conversations/${encodeURIComponent(conversationId)}`);
    updateSavedConversation(conversationId, data);
  } catch (error) {
    if (error.status === 404) forgetConversation(conversationId);
    data = { messages: [], runs: [] };
  }
  if (app.conversationId !== conversationId) return;  // the user moved on meanwhile
  setChatTitle(conversationId, firstQuestion(data));
  renderMessages(data.messages);
  renderRunHistory(data.runs);
  loadConversations();
  if (followLatest && data.runs.length) watchRun(data.runs[0].run_id);
}

function renderMessages(messages) {
  const list = $("messages");
  list.replaceChildren();
  for (const message of messages) list.append(messageNode(message));
  if (!messages.length) {
    list.append(el("li", { class: "muted pad center", text: "Ask a question to start." }));
  }
  list.scrollTop = list.scrollHeight;
}

function messageNode(message) {
  const meta = [message.role === "user" ? "you" : "dcbrain"];
  if (message.created_at) meta.push(shortTime(message.created_at));
  const stopped = message.role !== "user" && message.status && message.status !== "succeeded";
  if (stopped) meta.push(message.reason ? `stopped: ${message.reason}` : message.status);
  let content = message.content;
  if (message.role !== "user" && NEW_INPUT.test(content || "")) {
    content = "(stopped: replaced by a newer message)";
  }
  return el("li", { class: `message ${message.role}${stopped ? " stopped" : ""}` }, [
    el("div", { class: "bubble", text: content }),
    el("div", { class: "message-meta", text: meta.join(" · ") }),
  ]);
}

function renderRunHistory(runs) {
  const box = $("run-history");
  box.replaceChildren();
  for (const run of runs.slice(0, 8).reverse()) {
    const status = run.reason && run.reason !== run.status ? `${run.status} (${run.reason})` : run.status;
    box.append(el("button", {
      type: "button",
      class: `run-chip status-${run.status}${app.run && app.run.id === run.run_id ? " active" : ""}`,
      title: `${run.question || ""}\n${status}\nrun ${run.run_id}`,
      "data-run-id": run.run_id,
      onclick: () => watchRun(run.run_id),
    }, [
      el("span", { class: `dot status-${run.status}` }),
      el("span", { class: "run-chip-text", text: run.question || run.run_id.slice(0, 8) }),
    ]));
  }
}

// 128 random bits: a conversation id is all it takes to read a conversation.
function newConversationId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `c-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function sendMessage(event) {
  event.preventDefault();
  const input = $("message-input");
  const content = input.value.trim();
  if (!content) return;
  const first = !app.conversationId;
  if (first) {
    app.conversationId = newConversationId();
    setChatTitle(app.conversationId, content);
  }
  const path = `/v1/conversations/${encodeURIComponent(app.conversationId)}/messages`;
  $("send").disabled = true;
  try {
    const data = await api(path, { method: "POST", body: { content } });
    saveConversation({
      conversation_id: app.conversationId,
      ...(first ? { first_question: content } : {}),
      last_question: content,
      last_status: "queued",
      updated_at: Date.now() / 1000,
    });
    input.value = "";
    const list = $("messages");
    if (list.querySelector(".center")) list.replaceChildren();
    list.append(messageNode({ role: "user", content, created_at: Date.now() / 1000 }));
    list.scrollTop = list.scrollHeight;
    history.replaceState(null, "", `#${encodeURIComponent(app.conversationId)}`);
    watchRun(data.run_id);
    refreshConversation({ messages: false });  // the new run's chip
  } catch (error) {
    $("composer-hint").textContent = error.message;
    $("composer-hint").classList.add("error");
  } finally {
    $("send").disabled = false;
  }
}

// -- the current run ---------------------------------------------------------------------

// A person's decision on a call the run waits for (bound to the arguments they saw).
async function decideApproval(runId, callId, approved, reason, argsHash) {
  const path = `/v1/runs/${runId}/approvals/${encodeURIComponent(callId)}`;
  return api(path, { method: "POST", body: { approved, reason, args_hash: argsHash } });
}

function watchRun(runId) {
  if (app.source) app.source.close();
  app.run = newRun(runId);
  $("run-empty").hidden = true;
  $("run-body").hidden = false;
  $("abort").disabled = false;
  scheduleRender();
  let url = `/v1/runs/${runId}/events`;
  if (app.token) url += `?access_token=${encodeURIComponent(app.token)}`;
  const source = new EventSource(url);
  app.source = source;
  setConnection("live", "live");
  source.onmessage = (message) => {
    if (!app.run || app.run.id !== runId) return;
    apply(app.run, JSON.parse(message.data));
    scheduleRender();
  };
  source.addEventListener("end", (message) => {
    source.close();
    if (app.source === source) app.source = null;
    const data = JSON.parse(message.data);
    if (app.run && app.run.id === runId) {
      app.run.status = data.status;
      $("abort").disabled = true;
      setConnection("idle", data.status || "ended");
      scheduleRender();
      refreshConversation();
    }
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) setConnection("error", "disconnected");
    else setConnection("retry", "reconnecting…");
  };
}

async function refreshConversation({ messages = true } = {}) {
  const conversationId = app.conversationId;
  if (!conversationId) return;
  try {
    const data = await api(`/v1/conversations/${encodeURIComponent(conversationId)}`);
    updateSavedConversation(conversationId, data);
    if (app.conversationId !== conversationId) return;  // the user moved on meanwhile
    setChatTitle(conversationId, firstQuestion(data));
    if (messages) renderMessages(data.messages);
    renderRunHistory(data.runs);
  } catch (_) { /* the page keeps what it shows */ }
  loadConversations();
}

function scheduleRender() {
  if (app.renderQueued) return;
  app.renderQueued = true;
  requestAnimationFrame(() => {
    app.renderQueued = false;
    render();
  });
}

function render() {
  if (app.run) renderRun(app.run);
}

// -- start ------------------------------------------------------------------------------------

function startNewConversation() {
  if (app.source) app.source.close();
  app.source = null;
  app.conversationId = null;
  app.run = null;
  history.replaceState(null, "", "#");
  setChatTitle(null, "");
  $("run-history").replaceChildren();
  renderMessages([]);
  $("run-body").hidden = true;
  $("run-empty").hidden = false;
  $("abort").disabled = true;
  setConnection("idle", "idle");
  loadConversations();
  $("message-input").focus();
}

function init() {
  $("composer").addEventListener("submit", sendMessage);
  $("message-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("message-input").addEventListener("input", () => {
    $("composer-hint").textContent = "A new message while a run is active replaces it.";
    $("composer-hint").classList.remove("error");
  });
  $("new-conversation").addEventListener("click", startNewConversation);
  $("abort").addEventListener("click", async () => {
    if (!app.run) return;
    try { await api(`/v1/runs/${app.run.id}/abort`, { method: "POST", body: {} }); } catch (_) { /* ended */ }
  });
  $("token-button").addEventListener("click", askForToken);
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    app.token = $("token-input").value.trim();
    sessionStorage.setItem("dcbrain-token", app.token);
    $("token-dialog").close();
    const current = app.conversationId;
    if (current) openConversation(current); else loadConversations();
  });
  const fromHash = decodeURIComponent(location.hash.slice(1));
  if (fromHash) openConversation(fromHash);
  else { renderMessages([]); loadConversations(); }
}

document.addEventListener("DOMContentLoaded", init);
