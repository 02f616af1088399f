// ralph serve's page: every watched run, live through /api/v1/events.
"use strict";
(function () {
  const runsEl = document.getElementById("runs");
  const tpl = document.getElementById("run-tpl");
  const conn = document.getElementById("conn");
  const cards = new Map(); // run id -> {el, view}
  // Control is offered only where it would be let through: not on a
  // read-only server, nor to a page opened without the token.
  let canControl = false;
  const MAX_LIVE = 300;

  async function api(path, opts) {
    const r = await fetch("/api/v1/" + path, Object.assign({ credentials: "same-origin", cache: "no-store" }, opts || {}));
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  function q(el, sel) { return el.querySelector(sel); }
  function text(el, s) { el.textContent = s == null ? "" : String(s); }
  function tokens(n) { return n >= 1e6 ? (n / 1e6).toFixed(1) + "M" : n >= 1e3 ? (n / 1e3).toFixed(1) + "k" : String(n || 0); }
  function dur(ms) { const s = Math.round((ms || 0) / 1000); return s >= 3600 ? Math.floor(s / 3600) + "h" + Math.floor(s % 3600 / 60) + "m" : s >= 60 ? Math.floor(s / 60) + "m" + (s % 60) + "s" : s + "s"; }
  // A cost as the receipts write it (state.FormatCost): "~$" estimated
  // from tokens, "≥$" or "$?" where a model had no price.
  function usd(x, source) {
    const n = (x || 0).toFixed(x >= 1 ? 2 : 4);
    if (source === "estimated") return "~$" + n;
    if (source === "unknown") return x ? "≥$" + n : "$?";
    return "$" + n;
  }

  // The usage windows as the TUI's header says them: "seven_day 85%
  // (warning)".
  function quota(q) {
    if (!q) return "";
    return Object.keys(q).sort().map(function (name) {
      const w = q[name];
      let s = name + (w.utilization != null ? " " + Math.round(w.utilization) + "%" : "");
      if (w.status === "allowed_warning") s += " (warning)";
      else if (w.status === "rejected") s += " (limit)";
      return s;
    }).join(", ");
  }

  function card(id) {
    let c = cards.get(id);
    if (c) return c;
    const el = tpl.content.firstElementChild.cloneNode(true);
    el.dataset.run = id;
    el.querySelectorAll(".controls button").forEach(b => b.addEventListener("click", () => control(id, b.dataset.verb, {})));
    q(el, "form.answer").addEventListener("submit", ev => {
      ev.preventDefault();
      const ta = q(ev.target, "textarea");
      const c = cards.get(id);
      const task = c && c.view.questions && c.view.questions[0] ? c.view.questions[0].task : "";
      control(id, "answer", { task: task, text: ta.value }).then(ok => { if (ok) ta.value = ""; });
    });
    c = { el: el, view: null, timer: 0 };
    cards.set(id, c);
    if (runsEl.querySelector(".empty")) runsEl.textContent = "";
    runsEl.appendChild(el);
    return c;
  }

  async function control(id, verb, body) {
    const c = cards.get(id);
    if (verb === "stop" && !window.confirm("Stop the run of " + (c.view ? c.view.name : id) + "?")) return false;
    const note = q(c.el, ".notice");
    try {
      await api("runs/" + id + "/" + verb, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      note.hidden = true;
      refresh(id);
      return true;
    } catch (e) {
      note.hidden = false; text(note, verb + ": " + e.message);
      return false;
    }
  }

  function render(v) {
    const c = card(v.id);
    c.view = v;
    const el = c.el;
    el.dataset.status = v.status || "none";
    text(q(el, ".name"), v.name);
    q(el, ".name").title = v.dir;
    const st = q(el, ".status");
    st.className = "status badge " + (v.status || "");
    text(st, v.status || "no run yet");
    meta(c);
    const p = v.plan;
    text(q(el, ".progress"), p ? p.path + ": " + p.done + "/" + p.total + " done" + (p.failed ? ", " + p.failed + " failed" : "") : (v.error || ""));
    c.until = v.waiting_until ? new Date(v.waiting_until) : null;
    tick(c);
    const qs = v.questions || [];
    const qbox = q(el, ".question");
    qbox.hidden = qs.length === 0;
    if (qs.length) { text(q(el, ".q-task"), qs[0].task); text(q(el, ".q-text"), qs[0].question); }
    q(el, "form.answer button").disabled = !canControl;
    const live = v.live && canControl;
    q(el, ".control-note").hidden = !v.live || canControl;
    el.querySelectorAll(".controls button").forEach(b => {
      const verb = b.dataset.verb;
      b.disabled = !live || (verb === "pause" && v.status === "paused") || (verb === "resume" && v.status !== "paused");
    });
    q(el, ".controls").hidden = !v.live;
    if (v.current) { const ol = q(el, "ol.live"); ol.textContent = ""; v.current.forEach(e => liveEvent(c, e)); }
    q(el, ".live-box").hidden = !v.live && q(el, "ol.live").children.length === 0;
  }

  // The header line: a live run's time is the time since it started (its
  // totals count finished iterations only), a finished run's its total.
  function meta(c) {
    const v = c.view;
    const t = v.totals || {};
    const ms = v.live && v.started_at ? Date.now() - Date.parse(v.started_at) : t.duration_ms;
    text(q(c.el, ".meta"), [v.agent && (v.agent + (v.model ? "/" + v.model : "")), v.iteration ? "iteration " + v.iteration : "",
      v.current_task ? "on " + v.current_task : "", tokens((t.input_tokens || 0) + (t.output_tokens || 0) + (t.cache_read_tokens || 0) + (t.cache_write_tokens || 0)) + " tokens",
      usd(t.cost_usd, t.cost_source), dur(ms), quota(v.quota)].filter(Boolean).join(" · "));
  }

  function tick(c) {
    if (c.view && c.view.live) meta(c);
    const w = q(c.el, ".wait");
    if (!c.until) { text(w, ""); return; }
    const left = c.until - Date.now();
    text(w, left > 0 ? "waiting for the usage limit: " + dur(left) + " left (until " + c.until.toLocaleTimeString() + ")" : "");
  }
  setInterval(() => cards.forEach(tick), 1000);

  function addLine(c, cls, s) {
    const ol = q(c.el, "ol.live");
    const li = document.createElement("li");
    if (cls) li.className = cls;
    text(li, s);
    ol.appendChild(li);
    while (ol.children.length > MAX_LIVE) ol.removeChild(ol.firstChild);
    ol.scrollTop = ol.scrollHeight;
  }

  function liveEvent(c, e) {
    switch (e.event) {
      case "iteration_started":
        q(c.el, "ol.live").textContent = "";
        addLine(c, "outcome", "▶ iteration " + e.iteration + ": " + (e.task ? e.task.id + " " + e.task.title : ""));
        break;
      case "agent": {
        const a = e.agent || {};
        if (a.kind === "text" && a.text) addLine(c, "", a.text.length > 600 ? a.text.slice(0, 600) + "…" : a.text);
        else if (a.kind === "tool_call") addLine(c, "tool", "→ " + a.tool + " " + (a.tool_input || ""));
        else if (a.kind === "error") addLine(c, "err", "! " + (a.text || ""));
        break;
      }
      case "iteration_ended": {
        const r = e.record || {};
        addLine(c, "outcome", "■ " + r.outcome + (r.error ? ": " + r.error : "") + (r.commit ? " · commit " + r.commit.slice(0, 7) : ""));
        break;
      }
      case "question": addLine(c, "outcome", "? " + (e.task ? e.task.id + ": " : "") + e.message); break;
      case "answered": addLine(c, "outcome", "✎ answered: " + e.message); break;
      case "waiting": addLine(c, "", "◔ " + (e.message || "waiting")); break;
      case "agent_switched": addLine(c, "", "⇄ " + e.from + " → " + e.to + ": " + (e.message || "")); break;
      case "left_out":
        addLine(c, "", "⊘ " + e.message + " " + (e.left_out || []).map((l) => l.line).join(" "));
        break;
      case "warning": case "review": case "paused": case "resumed": case "task_skipped": case "task_failed":
        addLine(c, e.event === "warning" || e.event === "task_failed" ? "err" : "", e.event + (e.message ? ": " + e.message : ""));
        break;
      case "run_ended": addLine(c, "outcome", "run ended: " + e.status + (e.message ? " (" + e.message + ")" : "")); break;
      default: break;
    }
  }

  const marks = { done: "✓", failed: "✗", running: "▶", waiting: "?", open: "○" };
  async function loadTasks(id) {
    const c = cards.get(id);
    try {
      const body = await api("runs/" + id + "/tasks");
      const ul = q(c.el, "ul.tasks");
      ul.textContent = "";
      body.tasks.forEach(t => {
        const li = document.createElement("li");
        li.dataset.task = t.id; li.dataset.status = t.status;
        const m = document.createElement("span"); m.className = "mark"; text(m, marks[t.status] || "○");
        const s = document.createElement("span"); text(s, t.id + " " + t.title + (t.attempts ? " (" + t.attempts + (t.attempts === 1 ? " failed attempt)" : " failed attempts)") : ""));
        li.append(m, s);
        if (t.receipt) { const r = document.createElement("span"); r.className = "receipt"; text(r, t.receipt); li.appendChild(r); }
        ul.appendChild(li);
      });
      if (body.tasks.some(t => t.receipt)) {
        const li = document.createElement("li"); li.className = "receipt-total"; text(li, body.cost); ul.appendChild(li);
      }
    } catch (e) { /* a plan that does not load shows its error in the header */ }
  }

  function evidence(r) {
    const parts = [];
    if (r.gates && r.gates.length) parts.push("gates " + r.gates.filter(g => g.result === "pass" || g.exit_code === 0).length + "/" + r.gates.length);
    if (r.guard) parts.push("guard " + (r.guard.findings ? r.guard.findings.length : 0) + " findings");
    if (r.review) parts.push((r.review.verdict || "no verdict") + " by " + r.review.agent + (r.review.model ? "/" + r.review.model : ""));
    return parts.join(" · ");
  }

  async function loadHistory(id) {
    const c = cards.get(id);
    try {
      const body = await api("runs/" + id + "/history?limit=30");
      const ol = q(c.el, "ol.history");
      ol.textContent = "";
      body.records.slice().reverse().forEach(r => {
        const li = document.createElement("li");
        const head = document.createElement("div");
        text(head, "#" + r.iteration + " " + (r.task_id || "") + " — " + r.outcome + (r.commit ? " · " + r.commit.slice(0, 7) : ""));
        const rc = document.createElement("div"); rc.className = "receipt";
        text(rc, tokens(r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens) + " tokens · " + usd(r.cost_usd, r.cost_source) + " · " + dur(r.duration_ms) + (r.error ? " · " + r.error : ""));
        li.append(head, rc);
        const ev = evidence(r);
        if (ev) { const d = document.createElement("div"); d.className = "evidence"; text(d, ev); li.appendChild(d); }
        const b = document.createElement("button"); text(b, "transcript");
        b.addEventListener("click", async () => {
          const old = li.querySelector("pre");
          if (old) { old.remove(); return; }
          const pre = document.createElement("pre"); text(pre, "…"); li.appendChild(pre);
          const resp = await fetch("/api/v1/runs/" + id + "/transcript?run=" + encodeURIComponent(r.run_id) + "&iteration=" + r.iteration + "&agent=" + encodeURIComponent(r.agent || ""), { credentials: "same-origin" });
          text(pre, resp.ok ? await resp.text() : "no transcript");
        });
        li.appendChild(b);
        ol.appendChild(li);
      });
    } catch (e) { /* shown on the next refresh */ }
  }

  async function refresh(id) {
    try {
      render(await api("runs/" + id));
      await Promise.all([loadTasks(id), loadHistory(id)]);
    } catch (e) { /* the run may be gone; the next event retries */ }
  }

  // Refreshes coalesce: a burst of events costs one round of requests.
  function soon(id) {
    const c = cards.get(id);
    if (!c) { refreshAll(); return; }
    if (c.timer) return;
    c.timer = setTimeout(() => { c.timer = 0; refresh(id); }, 150);
  }

  async function refreshAll() {
    try {
      const body = await api("runs");
      canControl = body.can_control;
      if (!body.runs.length) { runsEl.innerHTML = '<p class="empty">No runs yet.</p>'; return; }
      body.runs.forEach(v => { render(v); refresh(v.id); });
      // The server's order: live runs first, then the latest.
      body.runs.forEach(v => runsEl.appendChild(cards.get(v.id).el));
    } catch (e) { text(conn, "error: " + e.message); }
  }

  function connect() {
    const es = new EventSource("/api/v1/events");
    es.onopen = () => { text(conn, "live"); document.body.dataset.conn = "live"; refreshAll(); };
    es.onerror = () => { text(conn, "reconnecting…"); document.body.dataset.conn = "down"; };
    es.addEventListener("resync", () => refreshAll());
    es.onmessage = m => {
      let msg;
      try { msg = JSON.parse(m.data); } catch (e) { return; }
      const c = cards.get(msg.run);
      const e = msg.event || {};
      if (!c) { refreshAll(); return; }
      liveEvent(c, e);
      if (e.event !== "agent") soon(msg.run);
    };
  }
  refreshAll();
  connect();
})();
