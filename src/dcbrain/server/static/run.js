// dcbrain web page, the run panel: a run's events folded into a model, and its rendering.
// Plain DOM, no build step. Every piece of server text goes through textContent.
"use strict";

const STATES = ["init", "planning", "running", "waiting", "succeeded", "failed", "aborted"];
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
// The brain's own LLM calls, listed in the timeline; a chain's LLM calls count only as tokens.
const OWN_LLM_PHASES = { plan: "planner", validate: "validator" };
// The brain's signal that a newer message replaced a run: never shown as an answer.
const NEW_INPUT = /new user input|TFUserNewInputError/;

// -- the run model -------------------------------------------------------------------------

function newRun(runId) {
  return {
    id: runId,
    question: "",
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
    writing: null,      // {iteration, text}: the planner's reply while it is written
    revisions: [],      // plan_revised events
    timeline: [],       // {kind: "phase"|"verdict"} | {kind: "call", call} | {kind: "group", columns}
    calls: new Map(),   // "kind:call_id" -> the call in flight or last seen under that id
    callList: [],       // every call listed, in order
    final: null,
    validations: [],
    errors: [],
    startedAt: null,
    approvals: new Map(), // call_id -> approval_requested event, with its decision once decided
  };
}

function apply(run, event) {
  if (typeof event.seq === "number") {
    if (event.seq <= run.lastSeq) return; // already seen (a reconnect replays nothing twice)
    run.lastSeq = event.seq;
  }
  switch (event.type) {
    case "run_started":
      run.startedAt = event.ts;
      run.question = event.question || event.goal || "";
      run.maxTokens = event.max_tokens || 0;
      run.maxIterations = event.max_iterations || 0;
      for (const name of [...(event.chains || []), ...(event.tools || [])]) run.callables.add(name);
      break;
    case "run_resumed":
      // Another execution takes over: the calls it reuses or runs again follow.
      run.resumed = event;
      for (const call of run.callList) if (call.status === "running") call.status = "interrupted";
      run.timeline.push({
        kind: "phase",
        label: `↻ resumed: execution ${event.execution} (${event.reason})`,
      });
      break;
    case "state_changed":
      if (event.dest !== "planning") run.writing = null;
      run.state = event.dest;
      run.visited.add(event.dest);
      if (event.dest === "planning") {
        run.timeline.push({ kind: "phase", label: `Planning ${run.iterationsUsed + 1}` });
      }
      break;
    case "plan_delta": {
      // Text after the first `offset` characters of the reply; offset 0 starts a new reply.
      const writing = run.writing;
      if (event.offset === 0 || !writing || writing.iteration !== event.iteration) {
        if (event.offset === 0) run.writing = { iteration: event.iteration, text: event.text };
      } else if (event.offset === writing.text.length) {
        writing.text += event.text;
      }
      break;
    }
    case "plan_created":
    case "plan_revised":
      run.writing = null;
      run.plans.push({ plan: event.plan || "", iteration: event.iteration, revision: event.revision });
      if (event.type === "plan_revised") run.revisions.push(event);
      run.timeline.push({ kind: "phase", label: `Plan ${event.revision + 1} runs` });
      break;
    case "call_started":
      if (event.kind !== "llm" || OWN_LLM_PHASES[event.phase]) startCall(run, event);
      break;
    case "call_finished":
      finishCall(run, event);
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
    case "approval_requested":
      run.approvals.set(event.call_id, Object.assign({}, event, { decision: null }));
      run.timeline.push({ kind: "phase", label: `⏸ waiting for approval: ${event.tool}() at line ${event.line}` });
      break;
    case "approval_decided": {
      const asked = run.approvals.get(event.call_id);
      if (asked) asked.decision = event;
      const verdict = event.approved ? "✓ approved" : "✗ denied";
      const why = event.reason ? `: ${event.reason}` : "";
      run.timeline.push({ kind: "phase", label: `${verdict} ${event.tool}() by ${event.decided_by}${why}` });
      break;
    }
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
      // Calls still open when the run ended were stopped with it.
      for (const call of run.callList) if (call.status === "running") call.status = "aborted";
      if (event.status !== "succeeded") {
        run.timeline.push({ kind: "stop", label: `■ ${event.status}${event.reason && event.reason !== event.status ? ` · ${event.reason}` : ""}` });
      }
      break;
    default:
      break;
  }
}

function callKey(event) {
  return `${event.kind === "llm" ? "llm" : "call"}:${event.call_id}`;
}

function startCall(run, event) {
  const call = {
    key: callKey(event), name: event.name, kind: event.kind, phase: event.phase,
    line: event.line, branch: event.branch, path: event.path || "", reused: Boolean(event.reused),
    args: event.args, status: "running", duration: null, result: undefined, error: null,
    tokens: null,
  };
  run.calls.set(call.key, call);  // an id used again (a new plan) now names the new call
  run.callList.push(call);
  if (call.branch === null || call.branch === undefined) {
    run.timeline.push({ kind: "call", call });
    return;
  }
  // Calls inside one parallel(...) share its path prefix: they share a row, one column a branch.
  const groupPath = call.path.split(".").slice(0, -1).join(".");
  const last = run.timeline[run.timeline.length - 1];
  let group = last && last.kind === "group" && last.path === groupPath ? last : null;
  if (!group) {
    group = { kind: "group", path: groupPath, columns: new Map() };
    run.timeline.push(group);
  }
  if (!group.columns.has(call.branch)) group.columns.set(call.branch, []);
  group.columns.get(call.branch).push(call);
}

function finishCall(run, event) {
  const call = run.calls.get(callKey(event));
  if (!call || call.status !== "running") return;
  call.status = event.status || (event.error ? "error" : "ok");
  call.duration = typeof event.duration_s === "number" ? event.duration_s : 0;
  call.error = event.error || null;
  call.result = event.result;
  call.reused = call.reused || Boolean(event.reused);
  if (typeof event.total_tokens === "number") {
    call.tokens = {
      prompt: event.prompt_tokens, completion: event.completion_tokens, total: event.total_tokens,
      finish: event.finish_reason,
    };
  }
}

// -- rendering -----------------------------------------------------------------------------

function renderRun(run) {
  const label = $("run-id");
  label.textContent = run.question || `run ${run.id.slice(0, 12)}`;
  label.title = `run ${run.id}`;
  renderStates(run);
  renderBudget(run);
  renderPlan(run);
  renderRevisions(run);
  renderTimeline(run);
  renderFinal(run);
  renderApprovals(run);
  for (const chip of document.querySelectorAll(".run-chip")) {
    chip.classList.toggle("active", chip.dataset.runId === run.id);
  }
}

// A <details> whose open state survives re-rendering: the user's last toggle wins.
function keptDetails(props, holder, openByDefault) {
  const open = holder.open === undefined ? openByDefault : holder.open;
  const details = el("details", Object.assign({}, props, { open }));
  details.addEventListener("toggle", () => {
    if (details.open !== open) holder.open = details.open;
  });
  return details;
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

// The plan part of a reply being written: what follows its ```tf_plan fence, up to the end.
function planBeingWritten(text) {
  const fence = text.indexOf("```tf_plan");
  if (fence < 0) return text;
  const body = text.slice(text.indexOf("\n", fence) + 1 || text.length);
  const end = body.indexOf("```");
  return end < 0 ? body : body.slice(0, end);
}

function renderWriting(run) {
  const box = $("plan");
  box.classList.add("writing");
  $("plan-meta").textContent = `writing · planning ${run.writing.iteration}`;
  const table = el("div", { class: "code-lines" });
  const text = planBeingWritten(run.writing.text);
  text.split("\n").forEach((line, index) => {
    table.append(el("div", { class: "code-line" }, [
      el("span", { class: "ln", text: String(index + 1) }),
      el("code", { class: "src" }, highlight(line, run.callables)),
    ]));
  });
  table.lastChild.querySelector(".src").append(el("span", { class: "caret", text: "▍" }));
  box.replaceChildren(table);
}

function renderPlan(run) {
  const box = $("plan");
  if (run.writing) {
    renderWriting(run);
    return;
  }
  box.classList.remove("writing");
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
  for (const call of run.calls.values()) {
    if (call.status === "running" && call.line) running.add(call.line);
  }
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
  const latest = run.revisions.length - 1;
  box.replaceChildren(...run.revisions.map((revision, index) => {
    const diff = revision.diff || {};
    const details = keptDetails({ class: "revision" }, revision, index === latest);
    details.append(el("summary", {}, [
      el("span", { class: "revision-title", text: `Revision ${revision.revision}` }),
      el("span", { class: "revision-reason", text: revision.reason || diff.reason || "" }),
    ]));
    details.append(callChanges(diff));
    if (diff.unified) details.append(diffView(diff.unified, run.callables));
    return details;
  }));
}

function describeCall(call) {
  const args = Object.entries(call.args || {})
    .map(([key, value]) => {
      const text = typeof value === "string" ? value : JSON.stringify(value);
      return key.startsWith("#") ? text : `${key}=${text}`;
    });
  return `${call.name}(${args.join(", ")})`;
}

// Call-level changes: removed struck through, revised old → new, added, and what was kept.
function callChanges(diff) {
  const row = el("div", { class: "call-changes" });
  const chip = (kind, title, children) =>
    el("span", { class: `chip ${kind}`, title }, children);
  for (const call of diff.removed || []) {
    row.append(chip("removed", "removed call", el("s", { text: describeCall(call) })));
  }
  for (const change of diff.revised || []) {
    row.append(chip("changed", "same call, other arguments",
      [el("s", { text: describeCall(change.old) }), " → ", describeCall(change.new)]));
  }
  for (const call of diff.added || []) {
    row.append(chip("added", "added call", describeCall(call)));
  }
  for (const call of diff.done || []) {
    row.append(chip("done", "already done: not repeated", `✓ ${describeCall(call)}`));
  }
  for (const call of diff.unchanged || []) {
    row.append(chip("kept", "unchanged call", `= ${describeCall(call)}`));
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
  const calls = run.callList;
  const timed = calls.filter((call) => !call.reused);
  const longest = Math.max(0.001, ...timed.map((call) => call.duration || 0));
  const reused = calls.length - timed.length;
  $("timeline-meta").textContent = calls.length
    ? `${calls.length} call${calls.length > 1 ? "s" : ""}${reused ? ` · ${reused} reused` : ""}` : "";
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
    if (entry.kind === "stop") return el("div", { class: "tl-stop", text: entry.label });
    const columns = [...entry.columns.entries()].sort((a, b) => a[0] - b[0]);
    return el("div", { class: "tl-parallel" }, [
      el("div", { class: "tl-parallel-label", text: `parallel × ${columns.length}` }),
      el("div", { class: "tl-columns" }, columns.map(([branch, branchCalls]) =>
        el("div", { class: "tl-column", "data-branch": String(branch) },
          branchCalls.map((call) => callNode(call, longest))))),
    ]);
  }));
}

const CALL_STATES = { running: "running", ok: "done", error: "error", aborted: "stopped" };

function callKindLabel(call) {
  if (call.kind === "llm") return OWN_LLM_PHASES[call.phase] || "llm";
  return call.kind === "construct_chain" ? "new chain" : call.kind;
}

// One call: a summary line (click to open) over its arguments and result.
function callNode(call, longest) {
  const state = CALL_STATES[call.status] || "error";
  const classes = ["tl-call", state, `call-${call.kind}`];
  if (call.reused) classes.push("reused");
  const details = keptDetails({ class: classes.join(" "), "data-name": call.name }, call, false);
  let timing;
  if (call.reused) timing = el("span", { class: "tag reused-tag", title: "result recorded earlier in this run; nothing ran", text: "reused" });
  else if (state === "stopped") timing = el("span", { class: "tag stopped-tag", text: "stopped" });
  else timing = el("span", { class: "tl-duration", text: formatDuration(call.duration) });
  const width = call.duration === null ? 100 : Math.max(2, (call.duration / longest) * 100);
  details.append(el("summary", { class: "tl-summary" }, [
    el("div", { class: "tl-call-head" }, [
      el("span", { class: `kind kind-${call.kind}`, text: callKindLabel(call) }),
      el("span", { class: "tl-name" }, breakable(call.name)),
      call.line ? el("span", { class: "tl-line", text: `L${call.line}` }) : null,
      call.tokens && call.tokens.total
        ? el("span", { class: "tl-tokens", text: `${call.tokens.total} tok` }) : null,
      timing,
    ]),
    call.reused ? null
      : el("div", { class: "tl-bar" }, el("div", { class: "tl-fill", style: `width:${width.toFixed(1)}%` })),
    state === "error" && call.error ? el("div", { class: "tl-error", text: call.error }) : null,
  ]));
  details.append(callBody(call));
  return details;
}

// A long identifier that may wrap after its underscores, never cut off.
function breakable(name) {
  const parts = [];
  String(name).split(/(?<=_)/).forEach((part, index) => {
    if (index) parts.push(el("wbr"));
    parts.push(part);
  });
  return parts;
}

function callBody(call) {
  const body = el("div", { class: "tl-body" });
  const section = (label, value) => body.append(el("div", { class: "tl-section" }, [
    el("div", { class: "tl-label", text: label }), valueView(value),
  ]));
  if (call.kind === "llm") {
    if (call.tokens) {
      section("tokens", `${call.tokens.prompt ?? "?"} prompt + ${call.tokens.completion ?? "?"} completion`
        + (call.tokens.finish ? ` (${call.tokens.finish})` : ""));
    }
  } else {
    section("arguments", call.args === undefined || call.args === null ? {} : call.args);
  }
  if (call.status === "running") section("result", "…running");
  else if (call.status === "aborted") section("result", "stopped before it returned");
  else if (call.error) section("error", call.error);
  else if (call.kind !== "llm") section(call.reused ? "result (reused)" : "result", call.result);
  return body;
}

// A value of an event: JSON text, or the start of a value too large for the event.
function valueView(value) {
  if (value && typeof value === "object" && value.truncated === true && "preview" in value) {
    return el("div", {}, [
      el("pre", { class: "tl-value", text: `${value.preview}…` }),
      el("div", { class: "muted small", text: `truncated: ${Number(value.size).toLocaleString()} characters in all` }),
    ]);
  }
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return el("pre", { class: "tl-value", text: text === undefined ? "null" : text });
}

// Why a run ended without an answer, in the user's words (never the brain's internal signal).
function stopNote(final) {
  const reason = final.reason || final.status;
  if (reason === "superseded" || final.superseded_by) {
    return "Replaced by a newer message: this run stopped before answering.";
  }
  if (reason === "new_input") return "Stopped by a new message before answering.";
  if (final.status === "interrupted") return "The server stopped while this run was going on.";
  if (final.status === "aborted") {
    return reason === "aborted" ? "Aborted before answering." : `Stopped before answering (${reason}).`;
  }
  const suggestions = Array.isArray(final.suggestions) ? final.suggestions : [];
  const error = final.error || final.last_error || suggestions[suggestions.length - 1] || "";
  if (error && !NEW_INPUT.test(error)) return `No answer (${reason}): ${error}`;
  return `No answer (${reason}).`;
}

function renderFinal(run) {
  const card = $("final");
  const final = run.final;
  if (!final) { card.hidden = true; return; }
  card.hidden = false;
  const answered = final.status === "succeeded";
  card.classList.toggle("stopped", !answered);
  card.dataset.status = final.status;
  $("final-title").textContent = answered ? "Answer" : "Stopped";
  const badge = $("final-badge");
  badge.textContent = final.reason ? `${final.status} · ${final.reason}` : final.status;
  badge.title = final.validated_by ? `checked by ${final.validated_by}` : "";
  badge.className = `badge status-${final.status}`;
  const text = answered ? formatValue(final.final_result) || "No answer." : stopNote(final);
  $("final-answer").textContent = text;
  $("final-answer").classList.toggle("muted", !answered);
}

// The calls waiting for a person: tool, arguments, plan line and why, with Approve / Deny.
function renderApprovals(run) {
  const card = $("approvals");
  const pending = [...run.approvals.values()].filter((a) => !a.decision && !run.final);
  card.hidden = pending.length === 0;
  $("approvals-meta").textContent = pending.length ? `${pending.length} waiting` : "";
  const list = $("approval-list");
  const shown = new Set(pending.map((a) => a.call_id));
  for (const node of [...list.children]) if (!shown.has(node.dataset.callId)) node.remove();
  for (const asked of pending) {
    if (list.querySelector(`[data-call-id="${asked.call_id}"]`)) continue; // keep typed reasons
    const lines = (asked.plan || "").split("\n");
    const line = asked.line > 0 && asked.line <= lines.length ? lines[asked.line - 1] : "";
    const reason = el("input", { type: "text", class: "approval-reason", placeholder: "Reason (optional)", "aria-label": "Reason" });
    const status = el("span", { class: "muted approval-status" });
    const decide = (approved) => async () => {
      for (const button of item.querySelectorAll("button")) button.disabled = true;
      status.textContent = approved ? "approving…" : "denying…";
      try {
        await decideApproval(run.id, asked.call_id, approved, reason.value.trim(), asked.args_hash);
        status.textContent = approved ? "approved" : "denied";
      } catch (error) {
        status.textContent = error.message;
        for (const button of item.querySelectorAll("button")) button.disabled = false;
      }
    };
    const item = el("div", { class: "approval", "data-call-id": asked.call_id }, [
      el("div", { class: "approval-call" }, [
        el("span", { class: "tok-callable", text: asked.tool }),
        el("span", { text: `(${JSON.stringify(asked.arguments)})` }),
      ]),
      el("div", { class: "approval-line" }, [
        el("span", { class: "muted", text: `line ${asked.line}: ` }),
        el("code", { text: line.trim() }),
      ]),
      el("div", { class: "muted approval-why", text: asked.why }),
      el("div", { class: "composer-row" }, [
        reason,
        status,
        el("button", { type: "button", class: "ghost", text: "Deny", onclick: decide(false) }),
        el("button", { type: "button", class: "primary", text: "Approve", onclick: decide(true) }),
      ]),
    ]);
    list.append(item);
  }
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
