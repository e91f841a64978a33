// dcbrain web page: conversations, and the current run live from its event stream.
// Plain DOM, no build step. Every piece of server text goes through textContent.
"use strict";

const STATES = ["init", "planning", "running", "succeeded", "failed", "aborted"];
const TERMINAL = new Set(["succeeded", "failed", "aborted", "interrupted"]);
const KEYWORDS = new Set([
  "and", "assert", "break", "continue", "def", "del", "elif", "else", "for", "if", "in",
  "is", "lambda", "not", "or", "pass", "raise", "return", "while",
]);
const CONSTANTS = new Set(["None", "True", "False"]);
const BUILTINS = new Set([
  "print", "len", "range", "enumerate", "zip", "min", "max", "sum", "abs", "round", "sorted",
  "reversed", "any", "all", "str", "int", "float", "bool", "list", "dict", "set", "tuple",
  "isinstance", "map", "filter", "repr", "divmod", "chr", "ord", "pow", "parallel",
]);

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
    last_question: latest.question || known.last_question,
    last_status: latest.status,
    updated_at: latest.updated_at || known.updated_at,
    runs: data.runs.length,
  });
  storeConversations(items);
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
    list.append(el("li", {}, el("button", {
      type: "button",
      class: `conversation${active ? " active" : ""}`,
      onclick: () => openConversation(item.conversation_id),
    }, [
      el("span", { class: `dot status-${item.last_status}`, title: item.last_status }),
      el("span", { class: "conversation-text" }, [
        el("span", { class: "conversation-id", text: item.conversation_id }),
        el("span", { class: "conversation-question", text: item.last_question || "" }),
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
  $("chat-title").textContent = conversationId;
  let data;
  try {
    data = await api(`/v1/conversations/${encodeURIComponent(conversationId)}`);
    updateSavedConversation(conversationId, data);
  } catch (error) {
    if (error.status === 404) forgetConversation(conversationId);
    data = { messages: [], runs: [] };
  }
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
  if (message.status && message.status !== "succeeded") meta.push(message.status);
  return el("li", { class: `message ${message.role}` }, [
    el("div", { class: "bubble", text: message.content }),
    el("div", { class: "message-meta", text: meta.join(" · ") }),
  ]);
}

function renderRunHistory(runs) {
  const box = $("run-history");
  box.replaceChildren();
  for (const run of runs.slice(0, 8).reverse()) {
    box.append(el("button", {
      type: "button",
      class: `run-chip status-${run.status}${app.run && app.run.id === run.run_id ? " active" : ""}`,
      title: `${run.question || ""}\n${run.status}${run.reason ? ` (${run.reason})` : ""}`,
      onclick: () => watchRun(run.run_id),
      text: run.run_id.slice(0, 6),
    }));
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
  if (!app.conversationId) {
    app.conversationId = newConversationId();
    $("chat-title").textContent = app.conversationId;
  }
  const path = `/v1/conversations/${encodeURIComponent(app.conversationId)}/messages`;
  $("send").disabled = true;
  try {
    const data = await api(path, { method: "POST", body: { content } });
    saveConversation({
      conversation_id: app.conversationId,
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
    loadConversations();
  } catch (error) {
    $("composer-hint").textContent = error.message;
    $("composer-hint").classList.add("error");
  } finally {
    $("send").disabled = false;
  }
}

// -- the run model -------------------------------------------------------------------------

function newRun(runId) {
  return {
    id: runId,
    lastSeq: -1,
    state: null,
    visited: new Set(),
    status: null,
    tokensUsed: 0,
    maxTokens: 0,
    iterationsUsed: 0,
    maxIterations: 0,
    callables: new Set(),
    plans: [],          // {plan, iteration, revision}
    revisions: [],      // plan_revised events
    timeline: [],       // {kind: "phase"} | {kind: "call", call} | {kind: "group", columns}
    calls: new Map(),   // call_id -> call
    final: null,
    validations: [],
    errors: [],
    startedAt: null,
  };
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

async function refreshConversation() {
  const conversationId = app.conversationId;
  if (!conversationId) return;
  try {
    const data = await api(`/v1/conversations/${encodeURIComponent(conversationId)}`);
    updateSavedConversation(conversationId, data);
    if (app.conversationId !== conversationId) return;  // the user moved on meanwhile
    renderMessages(data.messages);
    renderRunHistory(data.runs);
  } catch (_) { /* the page keeps what it shows */ }
  loadConversations();
}

function apply(run, event) {
  if (typeof event.seq === "number") {
    if (event.seq <= run.lastSeq) return; // already seen (a reconnect replays nothing twice)
    run.lastSeq = event.seq;
  }
  switch (event.type) {
    case "run_started":
      run.startedAt = event.ts;
      run.maxTokens = event.max_tokens || 0;
      run.maxIterations = event.max_iterations || 0;
      for (const name of [...(event.chains || []), ...(event.tools || [])]) run.callables.add(name);
      break;
    case "state_changed":
      run.state = event.dest;
      run.visited.add(event.dest);
      if (event.dest === "planning") {
        run.timeline.push({ kind: "phase", label: `Planning ${run.iterationsUsed + 1}` });
      }
      break;
    case "plan_created":
    case "plan_revised":
      run.plans.push({ plan: event.plan, iteration: event.iteration, revision: event.revision });
      if (event.type === "plan_revised") run.revisions.push(event);
      run.timeline.push({ kind: "phase", label: `Plan ${event.revision + 1} runs` });
      break;
    case "call_started":
      if (event.kind !== "llm") startCall(run, event);
      break;
    case "call_finished":
      if (event.kind !== "llm") finishCall(run, event);
      break;
    case "budget":
      if (typeof event.tokens_used === "number") run.tokensUsed = event.tokens_used;
      if (event.max_tokens) run.maxTokens = event.max_tokens;
      if (typeof event.iterations_used === "number") run.iterationsUsed = event.iterations_used;
      if (event.max_iterations) run.maxIterations = event.max_iterations;
      break;
    case "validation":
      run.validations.push(event);
      run.timeline.push({
        kind: "verdict", solved: event.is_solved, suggestion: event.suggestion || "",
      });
      break;
    case "error":
      run.errors.push(event.error);
      break;
    case "final":
      run.final = event;
      run.status = event.status;
      if (event.usage && typeof event.usage.total_tokens === "number") {
        run.tokensUsed = event.usage.total_tokens;
      }
      if (typeof event.iterations === "number") run.iterationsUsed = event.iterations;
      if (STATES.includes(event.status)) {
        run.state = event.status;
        run.visited.add(event.status);
      }
      break;
    default:
      break;
  }
}

function startCall(run, event) {
  // Call ids restart with every plan: key them by plan too.
  const call = {
    id: `${run.plans.length}:${event.call_id}`, name: event.name, kind: event.kind, line: event.line,
    branch: event.branch, startedTs: event.ts, duration: null, error: null, kwargs: event.kwargs,
  };
  run.calls.set(call.id, call);
  const last = run.timeline[run.timeline.length - 1];
  if (call.branch === null || call.branch === undefined) {
    run.timeline.push({ kind: "call", call });
    return;
  }
  // Calls inside parallel(...) carry their branch index: they share one row, side by side.
  let group = last && last.kind === "group" ? last : null;
  if (!group) {
    group = { kind: "group", columns: new Map() };
    run.timeline.push(group);
  }
  if (!group.columns.has(call.branch)) group.columns.set(call.branch, []);
  group.columns.get(call.branch).push(call);
}

function finishCall(run, event) {
  const call = run.calls.get(`${run.plans.length}:${event.call_id}`);
  if (!call) return;
  call.duration = typeof event.duration_s === "number" ? event.duration_s : 0;
  call.error = event.error || null;
  call.result = event.result;
}

// -- rendering -----------------------------------------------------------------------------

function scheduleRender() {
  if (app.renderQueued) return;
  app.renderQueued = true;
  requestAnimationFrame(() => {
    app.renderQueued = false;
    render();
  });
}

function render() {
  const run = app.run;
  if (!run) return;
  $("run-id").textContent = `run ${run.id.slice(0, 12)}`;
  renderStates(run);
  renderBudget(run);
  renderPlan(run);
  renderRevisions(run);
  renderTimeline(run);
  renderFinal(run);
  for (const chip of document.querySelectorAll(".run-chip")) {
    chip.classList.toggle("active", chip.textContent === run.id.slice(0, 6));
  }
}

function renderStates(run) {
  const list = $("states");
  list.replaceChildren();
  STATES.forEach((state, index) => {
    const classes = ["state", `state-${state}`];
    if (run.state === state) classes.push("active");
    else if (run.visited.has(state)) classes.push("visited");
    if (index > 0) list.append(el("li", { class: "arrow", "aria-hidden": "true", text: index > 3 ? "·" : "→" }));
    list.append(el("li", { class: classes.join(" "), "data-state": state, text: state }));
  });
  if (run.status === "interrupted") {
    list.append(el("li", { class: "state state-interrupted active", text: "interrupted" }));
  }
}

function renderBudget(run) {
  const tokenShare = run.maxTokens ? Math.min(run.tokensUsed / run.maxTokens, 1) : 0;
  $("tokens-text").textContent =
    `${run.tokensUsed.toLocaleString()} / ${run.maxTokens.toLocaleString()}`;
  $("tokens-fill").style.width = `${(tokenShare * 100).toFixed(1)}%`;
  $("tokens-fill").classList.toggle("warn", tokenShare > 0.8);
  const iterationShare = run.maxIterations ? Math.min(run.iterationsUsed / run.maxIterations, 1) : 0;
  $("iterations-text").textContent = `${run.iterationsUsed} / ${run.maxIterations}`;
  $("iterations-fill").style.width = `${(iterationShare * 100).toFixed(1)}%`;
}

function renderPlan(run) {
  const box = $("plan");
  const current = run.plans[run.plans.length - 1];
  if (!current) {
    box.replaceChildren(el("div", { class: "muted pad", text: "No plan yet." }));
    $("plan-meta").textContent = "";
    return;
  }
  $("plan-meta").textContent = current.revision
    ? `revision ${current.revision} · planning ${current.iteration}`
    : `first plan · planning ${current.iteration}`;
  const running = new Set();
  for (const call of run.calls.values()) if (call.duration === null) running.add(call.line);
  const table = el("div", { class: "code-lines" });
  current.plan.split("\n").forEach((line, index) => {
    const number = index + 1;
    table.append(el("div", { class: `code-line${running.has(number) ? " current" : ""}` }, [
      el("span", { class: "ln", text: String(number) }),
      el("code", { class: "src" }, highlight(line, run.callables)),
    ]));
  });
  box.replaceChildren(table);
}

function renderRevisions(run) {
  const box = $("revisions");
  $("revision-count").textContent = run.revisions.length
    ? `${run.revisions.length} revision${run.revisions.length > 1 ? "s" : ""}` : "";
  if (!run.revisions.length) {
    box.replaceChildren(el("div", { class: "muted pad", text: "The first plan has not been revised." }));
    return;
  }
  const openIndex = run.revisions.length - 1;
  box.replaceChildren(...run.revisions.map((revision, index) => {
    const details = el("details", { class: "revision", open: index === openIndex });
    details.append(el("summary", {}, [
      el("span", { class: "revision-title", text: `Revision ${revision.revision}` }),
      el("span", { class: "revision-reason", text: revision.reason || "" }),
    ]));
    details.append(callChanges(revision.diff || {}));
    details.append(diffView(revision.diff ? revision.diff.unified : "", run.callables));
    return details;
  }));
}

function callChanges(diff) {
  const row = el("div", { class: "call-changes" });
  const describe = (call) => `${call.name}(${Object.entries(call.kwargs || {})
    .map(([k, v]) => (k.startsWith("#") ? v : `${k}=${v}`)).join(", ")})`;
  for (const call of diff.removed || []) {
    row.append(el("span", { class: "chip removed", title: "removed call" }, el("s", { text: describe(call) })));
  }
  for (const change of diff.changed || []) {
    row.append(el("span", { class: "chip changed", title: "changed arguments" },
      [el("s", { text: describe(change.old) }), " → ", describe(change.new)]));
  }
  for (const call of diff.added || []) {
    row.append(el("span", { class: "chip added", title: "added call", text: describe(call) }));
  }
  return row;
}

function diffView(unified, callables) {
  const box = el("div", { class: "diff" });
  let oldLine = 0;
  let newLine = 0;
  for (const line of (unified || "").split("\n")) {
    if (!line || line.startsWith("---") || line.startsWith("+++")) continue;
    if (line.startsWith("@@")) {
      const match = /@@ -(\d+)(?:,\d+)? \+(\d+)/.exec(line);
      if (match) { oldLine = Number(match[1]); newLine = Number(match[2]); }
      box.append(el("div", { class: "diff-hunk", text: line }));
      continue;
    }
    const sign = line[0];
    const text = line.slice(1);
    let kind = "ctx";
    let left = "";
    let right = "";
    if (sign === "-") { kind = "del"; left = oldLine++; }
    else if (sign === "+") { kind = "add"; right = newLine++; }
    else { left = oldLine++; right = newLine++; }
    const code = el("code", { class: "src" }, highlight(text, callables));
    box.append(el("div", { class: `diff-line ${kind}` }, [
      el("span", { class: "ln", text: String(left) }),
      el("span", { class: "ln", text: String(right) }),
      el("span", { class: "sign", text: sign === " " ? "" : sign }),
      kind === "del" ? el("del", {}, code) : kind === "add" ? el("ins", {}, code) : code,
    ]));
  }
  return box;
}

function renderTimeline(run) {
  const box = $("timeline");
  const calls = [...run.calls.values()];
  const longest = Math.max(0.001, ...calls.map((call) => call.duration || 0));
  $("timeline-meta").textContent = calls.length ? `${calls.length} call${calls.length > 1 ? "s" : ""}` : "";
  if (!run.timeline.length) {
    box.replaceChildren(el("div", { class: "muted pad", text: "No calls yet." }));
    return;
  }
  box.replaceChildren(...run.timeline.map((entry) => {
    if (entry.kind === "phase") return el("div", { class: "tl-phase", text: entry.label });
    if (entry.kind === "verdict") {
      return el("div", { class: `tl-verdict ${entry.solved ? "ok" : "no"}` }, [
        el("strong", { text: entry.solved ? "✓ validated" : "✗ not solved" }),
        entry.suggestion ? el("span", { text: ` — ${entry.suggestion}` }) : null,
      ]);
    }
    if (entry.kind === "call") return callNode(entry.call, longest);
    const columns = [...entry.columns.entries()].sort((a, b) => a[0] - b[0]);
    return el("div", { class: "tl-parallel" }, [
      el("div", { class: "tl-parallel-label", text: `parallel × ${columns.length}` }),
      el("div", { class: "tl-columns" }, columns.map(([branch, branchCalls]) =>
        el("div", { class: "tl-column", "data-branch": String(branch) },
          branchCalls.map((call) => callNode(call, longest))))),
    ]);
  }));
}

function callNode(call, longest) {
  const state = call.duration === null ? "running" : call.error ? "error" : "done";
  const width = call.duration === null ? 100 : Math.max(2, (call.duration / longest) * 100);
  return el("div", { class: `tl-call ${state}`, title: call.error || formatValue(call.result) }, [
    el("div", { class: "tl-call-head" }, [
      el("span", { class: `kind kind-${call.kind}`, text: call.kind === "construct_chain" ? "new chain" : call.kind }),
      el("span", { class: "tl-name", text: call.name }),
      call.line ? el("span", { class: "tl-line", text: `L${call.line}` }) : null,
      el("span", { class: "tl-duration", text: formatDuration(call.duration) }),
    ]),
    el("div", { class: "tl-bar" }, el("div", { class: "tl-fill", style: `width:${width.toFixed(1)}%` })),
    call.error ? el("div", { class: "tl-error", text: call.error }) : null,
  ]);
}

function renderFinal(run) {
  const card = $("final");
  const final = run.final;
  if (!final) { card.hidden = true; return; }
  card.hidden = false;
  const badge = $("final-badge");
  badge.textContent = final.reason ? `${final.status} · ${final.reason}` : final.status;
  badge.className = `badge status-${final.status}`;
  const answer = final.final_result;
  let text = formatValue(answer);
  if (!text) {
    text = final.error || (final.superseded_by ? "Replaced by a newer message." : "No answer.");
  }
  $("final-answer").textContent = text;
  $("final-answer").classList.toggle("muted", answer === null || answer === undefined);
}

// -- a tiny Python-ish highlighter ----------------------------------------------------------

const TOKEN = new RegExp([
  "(#.*$)",                                                     // comment
  "([rRbBfF]{0,2}(?:\"\"\"[\\s\\S]*?\"\"\"|'''[\\s\\S]*?'''|\"(?:\\\\.|[^\"\\\\])*\"?|'(?:\\\\.|[^'\\\\])*'?))", // string
  "(\\b\\d[\\d_]*(?:\\.\\d+)?(?:[eE][+-]?\\d+)?\\b)",           // number
  "([A-Za-z_][A-Za-z0-9_]*)",                                   // name
  "(\\s+)",                                                     // space
  "([^\\sA-Za-z0-9_#'\"]+)",                                    // operators
].join("|"), "gm");

function highlight(line, callables) {
  const parts = [];
  let match;
  TOKEN.lastIndex = 0;
  let position = 0;
  while ((match = TOKEN.exec(line)) !== null) {
    if (match[0] === "") { TOKEN.lastIndex += 1; continue; }
    if (match.index > position) parts.push(line.slice(position, match.index));
    position = match.index + match[0].length;
    const [text, comment, string, number, name, space] = match;
    if (comment) parts.push(el("span", { class: "tok-comment", text }));
    else if (string) parts.push(el("span", { class: "tok-string", text }));
    else if (number) parts.push(el("span", { class: "tok-number", text }));
    else if (name) {
      const next = line.slice(position).trimStart();
      let cls = null;
      if (KEYWORDS.has(name)) cls = "tok-keyword";
      else if (CONSTANTS.has(name)) cls = "tok-constant";
      else if (callables.has(name)) cls = "tok-callable";
      else if (BUILTINS.has(name)) cls = "tok-builtin";
      else if (next.startsWith("(")) cls = "tok-call";
      else if (next.startsWith("=") && !next.startsWith("==")) cls = "tok-name";
      parts.push(cls ? el("span", { class: cls, text }) : text);
    } else if (space) parts.push(text);
    else parts.push(el("span", { class: "tok-op", text }));
  }
  if (position < line.length) parts.push(line.slice(position));
  if (!parts.length) parts.push("\u200b"); // keep empty lines one line high
  return parts;
}

// -- start ------------------------------------------------------------------------------------

function startNewConversation() {
  if (app.source) app.source.close();
  app.source = null;
  app.conversationId = null;
  app.run = null;
  history.replaceState(null, "", "#");
  $("chat-title").textContent = "New conversation";
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
