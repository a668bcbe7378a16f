// The window's memory: the "Today" view (the day by hour, totals per agent and project, the
// longest waits, the cost so far) and the "History" view (stored sessions with search and
// filters, and a session's timeline).
//
// Every figure comes from the core (src/store/views.rs) through three commands; this file only
// renders them. Charts are Chart.js (bar charts only, tree-shaken): stacked bars for the day,
// floating bars for a session's timeline. Canvas pixels cannot be read by tests or screen
// readers, so each chart has a table of the same figures beside it (visually hidden), with the
// raw seconds in data attributes.
//
// Colours come from the page's CSS variables, read when a chart is drawn and again when the
// system switches between light and dark.
import type { Chart } from "chart.js";
import { AGENTS, ANSWER_PLACES, REQUEST_OUTCOMES, STATE_LABELS } from "./bindings";
import { agentBadge } from "./agents";
import type { Agent, AnswerCounts, DayReport, PlanWindow, HistoryEntry, RequestRecord, HistoryQuery, KeyedSplit, LongWait, SessionDetail, SessionState, TimelineInterval } from "./bindings";
import { el } from "./dom";
import { formatElapsed } from "./format";
import { commands, errorMessage } from "./ipc";

/// Chart.js, loaded the first time a view needs a chart (ui/src/charts.ts): the window's first
/// paint does not wait for it. Views await it before they render.
let ChartClass: typeof Chart | null = null;
async function loadCharts(): Promise<void> {
  ChartClass ??= (await import("./charts")).Chart;
}

export type ViewName = "sessions" | "today" | "history";

const agentName = (agent: string): string => AGENTS.find((a) => a.agent === agent)?.name ?? agent;
const duration = (secs: number): string => formatElapsed(secs);
const clock = (iso: string): string => new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
const dateTime = (iso: string): string =>
  new Date(iso).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

/// A cost is always an estimate: the label says so wherever it shows.
function costText(usd: number | null): string {
  return usd === null ? "not recorded" : `≈ $${usd.toFixed(2)} (estimate)`;
}

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

const WAIT_NAMES: Record<LongWait["kind"], string> = {
  permission: "permission",
  input: "input",
  idle_after_turn: "your next prompt",
};


function stateColor(state: SessionState): string {
  if (state === "working") return cssVar("--working");
  if (state === "waiting_for_permission" || state === "waiting_for_input") return cssVar("--needs");
  return cssVar("--idle");
}

/// Axis and grid colours for the current theme.
function chartTheme() {
  return { text: cssVar("--muted"), grid: cssVar("--border") };
}

/// The views and the tabs that switch between them.
export interface MemoryViews {
  tabs: HTMLElement;
  today: HTMLElement;
  history: HTMLElement;
  show(view: ViewName): void;
  /// Called when the theme changes or the view is shown again: redraw with fresh figures.
  refresh(): void;
  /// The plans' windows the agents reported (from the snapshot and the `limits` event).
  setLimits(windows: PlanWindow[]): void;
}

/// "resets 14:05" today, "resets Tue 09:00" later: the window's reset in the user's time.
function resetText(iso: string | null): string {
  if (!iso) return "";
  const at = new Date(iso);
  const sameDay = at.toDateString() === new Date().toDateString();
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return ` · resets ${sameDay ? time : `${at.toLocaleDateString([], { weekday: "short" })} ${time}`}`;
}

export function createMemoryViews(sessionsParts: HTMLElement[]): MemoryViews {
  let current: ViewName = "sessions";
  const tabButtons = new Map<ViewName, HTMLButtonElement>();
  const tabs = el("nav", { class: "tabs", attrs: { role: "tablist", "aria-label": "Views", id: "views" } });
  for (const [name, label] of [["sessions", "Sessions"], ["today", "Today"], ["history", "History"]] as [ViewName, string][]) {
    // One tab stop for the tablist (the chosen tab); the arrows move between tabs.
    const b = el("button", { class: "tab", attrs: { type: "button", role: "tab", id: `tab-${name}`, "data-view": name, "aria-selected": String(name === current), tabindex: name === current ? "0" : "-1" } }, label);
    b.addEventListener("click", () => show(name));
    tabButtons.set(name, b);
    tabs.append(b);
  }
  tabs.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
    event.preventDefault();
    const names = [...tabButtons.keys()];
    const next = names[(names.indexOf(current) + (event.key === "ArrowRight" ? 1 : names.length - 1)) % names.length];
    show(next);
    tabButtons.get(next)?.focus();
  });

  // ---- Today --------------------------------------------------------------------------------
  const today = el("main", { class: "memory today", attrs: { id: "today", role: "tabpanel", "aria-labelledby": "tab-today", hidden: "" } });
  let dayChart: Chart | null = null;
  let lastDay: DayReport | null = null;
  // The plans' windows: kept and redrawn on their own (they change when a turn ends, not
  // when the day's figures are fetched).
  const limitsBox = el("section", { class: "limits", attrs: { id: "plan-limits", "aria-label": "Plan limits" } });

  function setLimits(windows: PlanWindow[]): void {
    if (windows.length === 0) {
      limitsBox.replaceChildren();
      limitsBox.hidden = true;
      return;
    }
    limitsBox.hidden = false;
    limitsBox.replaceChildren(
      el("h3", {}, "Plan limits"),
      el(
        "ul",
        { class: "limit-list" },
        ...windows.map((w) => {
          const percent = Math.max(0, Math.min(100, Math.floor(w.used_percent)));
          const fill = el("span", { class: "limit-fill" });
          fill.style.width = `${percent}%`;
          const host = w.host ? ` on ${w.host}` : "";
          return el(
            "li",
            { class: `limit${percent >= 90 ? " nearly-used" : ""}`, attrs: { "data-agent": w.agent, "data-window": w.window, "data-percent": String(percent) } },
            agentBadge(w.agent),
            el("span", { class: "limit-name", title: `${w.account} · ${w.window} window${host}` }, `${w.window} window · ${w.account}${host}`),
            el("span", { class: "limit-bar", attrs: { "aria-hidden": "true" } }, fill),
            el("span", { class: "limit-text" }, `${percent}% used${resetText(w.resets_at)}`),
          );
        }),
      ),
    );
  }
  setLimits([]);

  function figureCard(id: string, label: string, value: string, secs: number | null): HTMLElement {
    return el(
      "div",
      { class: `figure figure-${id}`, attrs: { id: `total-${id}`, ...(secs === null ? {} : { "data-secs": String(secs) }) } },
      el("span", { class: "figure-label" }, label),
      el("span", { class: "figure-value" }, value),
    );
  }

  function splitTable(id: string, caption: string, rows: KeyedSplit[], name: (key: string) => string): HTMLElement {
    if (rows.length === 0) return el("p", { class: "muted", attrs: { id } }, `${caption}: nothing yet today.`);
    return el(
      "table",
      { class: "split", attrs: { id } },
      el("caption", {}, caption),
      el("thead", {}, el("tr", {}, el("th", { attrs: { scope: "col" } }, ""), el("th", { attrs: { scope: "col" } }, "Working"), el("th", { attrs: { scope: "col" } }, "Waiting on you"), el("th", { attrs: { scope: "col" } }, "Idle"))),
      el(
        "tbody",
        {},
        ...rows.map((r) =>
          el(
            "tr",
            { attrs: { "data-key": r.key, "data-working-secs": String(r.working_secs), "data-waiting-secs": String(r.waiting_on_you_secs), "data-idle-secs": String(r.idle_secs) } },
            el("th", { attrs: { scope: "row" } }, name(r.key)),
            el("td", {}, duration(r.working_secs)),
            el("td", {}, duration(r.waiting_on_you_secs)),
            el("td", {}, duration(r.idle_secs)),
          ),
        ),
      ),
    );
  }

  function renderToday(day: DayReport): void {
    lastDay = day;
    const t = day.totals;
    const hoursTable = el(
      "table",
      { class: "visually-hidden", attrs: { id: "today-hours" } },
      el("caption", {}, "Today by hour"),
      el("thead", {}, el("tr", {}, el("th", {}, "Hour"), el("th", {}, "Working"), el("th", {}, "Waiting on you"), el("th", {}, "Idle"))),
      el(
        "tbody",
        {},
        ...day.hours.map((h) =>
          el(
            "tr",
            { attrs: { "data-hour": String(h.hour), "data-working-secs": String(h.working_secs), "data-waiting-secs": String(h.waiting_on_you_secs), "data-idle-secs": String(h.idle_secs) } },
            el("th", {}, `${String(h.hour).padStart(2, "0")}:00`),
            el("td", {}, duration(h.working_secs)),
            el("td", {}, duration(h.waiting_on_you_secs)),
            el("td", {}, duration(h.idle_secs)),
          ),
        ),
      ),
    );
    const canvas = el("canvas", { attrs: { id: "today-chart", role: "img", "aria-label": "Today by hour: minutes working, waiting on you and idle (the table after it has the figures)" } });
    const waits = el(
      "ol",
      { class: "waits", attrs: { id: "longest-waits" } },
      ...day.longest_waits.map((w) => {
        const item = el(
          "li",
          { attrs: { "data-session-id": w.session_id, "data-secs": String(w.secs) } },
          el("span", { class: "wait-time" }, duration(w.secs)),
          agentBadge(w.agent),
          el("span", { class: "project" }, w.project),
          el("span", { class: "muted" }, `waited for ${w.waiting_for ?? WAIT_NAMES[w.kind]}, ${clock(w.from)}–${clock(w.to)}`),
        );
        item.addEventListener("click", () => void openDetail(w.session_id));
        return item;
      }),
    );
    today.replaceChildren(
      el(
        "div",
        { class: "figures" },
        figureCard("waiting", "Waiting on you", duration(t.waiting_on_you_secs), t.waiting_on_you_secs),
        figureCard("working", "Working", duration(t.working_secs), t.working_secs),
        figureCard("idle", "Idle", duration(t.idle_secs), t.idle_secs),
        figureCard("cost", "Cost so far", costText(day.cost_estimate_usd), null),
      ),
      limitsBox,
      el("div", { class: "chart-box" }, canvas),
      hoursTable,
      el("div", { class: "columns" }, splitTable("by-agent", "By agent", day.by_agent, agentName), splitTable("by-project", "By project", day.by_project, (k) => k)),
      el("h3", {}, "Longest waits"),
      day.longest_waits.length ? waits : el("p", { class: "muted", attrs: { id: "longest-waits" } }, "No waits today."),
      ...answersLine(day.answers),
      el("p", { class: "muted small" }, `Since midnight (${day.time_zone}). Waiting on you: needs permission, needs input, or idle after a turn until your next prompt.`),
    );
    drawDayChart(canvas, day);
  }

  /// The day's permission requests: how many the tray answered, and the waits beside the
  /// terminal's. Nothing when there were none.
  function answersLine(a: AnswerCounts): HTMLElement[] {
    if (a.from_tray + a.in_terminal + a.expired === 0) return [];
    const places = Object.entries(a.by_source)
      .map(([place, n]) => `${ANSWER_PLACES[place] ?? place} ${n}`)
      .join(", ");
    const wait = (secs: number | null) => (secs === null ? "–" : duration(Math.round(secs)));
    const saved = a.waiting_saved_estimate_secs !== null ? `; waiting saved ≈ ${duration(Math.round(a.waiting_saved_estimate_secs))}` : "";
    return [el(
      "p",
      { attrs: { id: "answers-today" } },
      `Permission requests: ${a.from_tray} answered from Agent Tray${places ? ` (${places})` : ""}, ${a.in_terminal} in the terminal, ${a.expired} expired. ` +
        `Median wait ${wait(a.tray_median_wait_secs)} from Agent Tray, ${wait(a.terminal_median_wait_secs)} in the terminal${saved}.`,
    )];
  }

  /// A stored session's permission requests: the tool, how it ended, from where, the wait.
  function requestsList(requests: RequestRecord[]): HTMLElement[] {
    if (requests.length === 0) return [];
    return [
      el("h3", {}, "Permission requests"),
      el(
        "ul",
        { class: "requests", attrs: { id: "detail-requests" } },
        ...requests.map((r) =>
          el(
            "li",
            { attrs: { "data-outcome": r.outcome } },
            el("span", { class: "wait-time" }, duration(Math.round(r.waited_secs))),
            el("span", {}, r.tool),
            el("span", { class: "muted" }, `${REQUEST_OUTCOMES[r.outcome] ?? r.outcome}${r.source && r.source !== "terminal" && r.source !== "timeout" ? ` from ${ANSWER_PLACES[r.source] ?? r.source}` : ""}, ${clock(r.asked_at)}`),
          ),
        ),
      ),
    ];
  }

  function drawDayChart(canvas: HTMLCanvasElement, day: DayReport): void {
    dayChart?.destroy();
    dayChart = null;
    const Charts = ChartClass;
    if (!Charts) return;
    const theme = chartTheme();
    const minutes = (secs: number) => Math.round((secs / 60) * 10) / 10;
    dayChart = new Charts(canvas, {
      type: "bar",
      data: {
        labels: day.hours.map((h) => String(h.hour).padStart(2, "0")),
        datasets: [
          { label: "Working", data: day.hours.map((h) => minutes(h.working_secs)), backgroundColor: cssVar("--working") },
          { label: "Waiting on you", data: day.hours.map((h) => minutes(h.waiting_on_you_secs)), backgroundColor: cssVar("--needs") },
          { label: "Idle", data: day.hours.map((h) => minutes(h.idle_secs)), backgroundColor: cssVar("--idle") },
        ],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: {
          legend: { labels: { color: theme.text, boxWidth: 12 } },
          tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${duration(Number(c.raw) * 60)}` } },
        },
        scales: {
          x: { stacked: true, ticks: { color: theme.text }, grid: { display: false } },
          y: { stacked: true, beginAtZero: true, ticks: { color: theme.text }, grid: { color: theme.grid }, title: { display: true, text: "agent-minutes", color: theme.text } },
        },
      },
    });
  }

  async function loadToday(): Promise<void> {
    try {
      const day = await commands.getToday();
      await loadCharts();
      renderToday(day);
      today.dataset.ready = "true";
    } catch (error) {
      today.replaceChildren(el("p", { class: "error", attrs: { id: "today-error" } }, `No history: ${errorMessage(error)}`), limitsBox);
      today.dataset.ready = "error";
    }
  }

  // ---- History ------------------------------------------------------------------------------
  const search = el("input", { attrs: { type: "search", id: "history-search", placeholder: "Search project, branch, title, model…", "aria-label": "Search history" } });
  const agentFilter = el(
    "select",
    { attrs: { id: "history-agent", "aria-label": "Agent" } },
    el("option", { attrs: { value: "" } }, "All agents"),
    ...AGENTS.map((a) => el("option", { attrs: { value: a.agent } }, a.name)),
  );
  const projectFilter = el("select", { attrs: { id: "history-project", "aria-label": "Project" } }, el("option", { attrs: { value: "" } }, "All projects"));
  const knownProjects = new Set<string>();
  const results = el("ul", { class: "history-list", attrs: { id: "history-list", "aria-label": "Stored sessions" } });
  const detail = el("section", { class: "detail", attrs: { id: "session-detail", hidden: "", "aria-live": "polite" } });
  const history = el(
    "main",
    { class: "memory history", attrs: { id: "history", role: "tabpanel", "aria-labelledby": "tab-history", hidden: "" } },
    el("div", { class: "history-filters" }, search, agentFilter, projectFilter),
    results,
    detail,
  );
  let timelineChart: Chart | null = null;
  let lastDetail: SessionDetail | null = null;
  let historySeq = 0;

  function query(): HistoryQuery {
    return { search: search.value, agent: (agentFilter.value || null) as Agent | null, project: projectFilter.value || null, limit: 200 };
  }

  function rememberProjects(entries: HistoryEntry[]): void {
    let added = false;
    for (const e of entries) {
      if (!knownProjects.has(e.project)) {
        knownProjects.add(e.project);
        added = true;
      }
    }
    if (!added) return;
    const chosen = projectFilter.value;
    projectFilter.replaceChildren(
      el("option", { attrs: { value: "" } }, "All projects"),
      ...[...knownProjects].sort().map((p) => el("option", { attrs: { value: p } }, p)),
    );
    projectFilter.value = chosen;
  }

  function historyRow(e: HistoryEntry): HTMLElement {
    const s = e.session;
    const end = s.state === "ended" ? s.state_since : null;
    const length = (Date.parse(end ?? new Date().toISOString()) - Date.parse(s.started_at)) / 1000;
    const item = el(
      "li",
      { class: `history-row state-${s.state}`, attrs: { "data-session-id": s.session_id, tabindex: "0", role: "button" } },
      el(
        "div",
        { class: "line" },
        agentBadge(s.agent),
        el("span", { class: "project" }, e.project),
        s.branch ? el("span", { class: "branch" }, s.branch) : null,
        s.model ? el("span", { class: "model" }, s.model) : null,
        el("span", { class: "spacer" }),
        el("span", { class: "muted" }, `${dateTime(s.started_at)} · ${duration(length)}`),
        el("span", { class: `pill pill-${s.state === "ended" ? "ended" : "working"}` }, s.state === "ended" ? "ended" : STATE_LABELS[s.state]),
      ),
      s.title ? el("div", { class: "line secondary" }, el("span", { class: "title" }, s.title)) : null,
    );
    item.addEventListener("click", () => void openDetail(s.session_id));
    item.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        void openDetail(s.session_id);
      }
    });
    return item;
  }

  async function loadHistory(): Promise<void> {
    const seq = ++historySeq;
    const asked = query();
    try {
      const entries = await commands.getHistory(asked);
      if (seq !== historySeq) return; // a newer query is on its way
      rememberProjects(entries);
      results.replaceChildren(...entries.map(historyRow));
      if (entries.length === 0) results.append(el("li", { class: "muted", attrs: { id: "history-empty" } }, "No stored session matches."));
      history.dataset.ready = "true";
      history.dataset.query = JSON.stringify(asked);
    } catch (error) {
      results.replaceChildren(el("li", { class: "error" }, `No history: ${errorMessage(error)}`));
      history.dataset.ready = "error";
    }
  }

  let searchTimer: ReturnType<typeof setTimeout> | null = null;
  search.addEventListener("input", () => {
    if (searchTimer !== null) clearTimeout(searchTimer);
    searchTimer = setTimeout(() => void loadHistory(), 150);
  });
  agentFilter.addEventListener("change", () => void loadHistory());
  projectFilter.addEventListener("change", () => void loadHistory());

  function renderDetail(d: SessionDetail): void {
    lastDetail = d;
    const s = d.session;
    const intervals = el(
      "table",
      { class: "intervals", attrs: { id: "timeline-intervals" } },
      el("caption", { class: "visually-hidden" }, "State intervals"),
      el("thead", {}, el("tr", {}, el("th", {}, "From"), el("th", {}, "To"), el("th", {}, "State"), el("th", {}, "Lasted"))),
      el(
        "tbody",
        {},
        ...d.intervals.map((i) => {
          const end = i.to ?? new Date().toISOString();
          const secs = Math.max(0, (Date.parse(end) - Date.parse(i.from)) / 1000);
          return el(
            "tr",
            { attrs: { "data-state": i.state, "data-from": i.from, "data-to": i.to ?? "", "data-secs": String(Math.round(secs)) } },
            el("td", {}, clock(i.from)),
            el("td", {}, i.to ? clock(i.to) : "now"),
            el("td", {}, el("span", { class: "swatch", attrs: { style: `background:${stateColor(i.state)}` } }), ` ${STATE_LABELS[i.state]}${i.waiting_for ? ` (${i.waiting_for})` : ""}`),
            el("td", {}, duration(secs)),
          );
        }),
      ),
    );
    const canvas = el("canvas", { attrs: { id: "timeline-chart", role: "img", "aria-label": "The session's timeline (the table below has the intervals)" } });
    const close = el("button", { class: "ghost", attrs: { type: "button", id: "close-detail", "aria-label": "Close the session's detail" } }, "×");
    close.addEventListener("click", () => {
      detail.hidden = true;
      timelineChart?.destroy();
      timelineChart = null;
      lastDetail = null;
    });
    detail.dataset.sessionId = s.session_id;
    const parts: HTMLElement[] = [
      el(
        "div",
        { class: "line" },
        agentBadge(s.agent),
        el("h3", {}, d.project),
        s.branch ? el("span", { class: "branch" }, s.branch) : null,
        s.model ? el("span", { class: "model" }, s.model) : null,
        el("span", { class: "spacer" }),
        close,
      ),
    ];
    if (s.title) parts.push(el("p", { class: "title" }, s.title));
    detail.replaceChildren(
      ...parts,
      el(
        "div",
        { class: "figures small" },
        figureCard("detail-working", "Working", duration(d.totals.working_secs), d.totals.working_secs),
        figureCard("detail-waiting", "Waiting on you", duration(d.totals.waiting_on_you_secs), d.totals.waiting_on_you_secs),
        figureCard("detail-idle", "Idle", duration(d.totals.idle_secs), d.totals.idle_secs),
        figureCard("detail-cost", "Cost", costText(d.cost_estimate_usd), null),
      ),
      el("div", { class: "chart-box timeline-box" }, canvas),
      intervals,
      ...requestsList(d.requests),
    );
    detail.hidden = false;
    drawTimeline(canvas, d.intervals);
  }

  function drawTimeline(canvas: HTMLCanvasElement, intervals: TimelineInterval[]): void {
    timelineChart?.destroy();
    timelineChart = null;
    const Charts = ChartClass;
    if (intervals.length === 0 || !Charts) return;
    const theme = chartTheme();
    const start = Date.parse(intervals[0].from);
    const at = (iso: string | null) => ((iso ? Date.parse(iso) : Date.now()) - start) / 60_000;
    const end = Math.max(...intervals.map((i) => at(i.to)));
    // Axis labels in whole minutes: "+50m", "+1h 40m".
    const offset = (minutes: number) => {
      const m = Math.round(minutes);
      return m < 60 ? `+${m}m` : `+${Math.floor(m / 60)}h${m % 60 ? ` ${String(m % 60).padStart(2, "0")}m` : ""}`;
    };
    timelineChart = new Charts(canvas, {
      type: "bar",
      data: {
        labels: [""],
        // One dataset per interval, all on one row: floating bars from its start to its end.
        datasets: intervals.map((i) => ({
          label: STATE_LABELS[i.state],
          data: [[at(i.from), at(i.to)] as [number, number]],
          backgroundColor: stateColor(i.state),
          borderColor: cssVar("--panel"),
          borderWidth: 1,
          grouped: false,
          barPercentage: 1,
          categoryPercentage: 1,
        })),
      },
      options: {
        indexAxis: "y",
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              label: (c) => {
                const [from, to] = c.raw as [number, number];
                return `${c.dataset.label}: ${duration((to - from) * 60)}`;
              },
            },
          },
        },
        scales: {
          x: { type: "linear", min: 0, max: end, ticks: { color: theme.text, maxTicksLimit: 8, callback: (v) => offset(Number(v)) }, grid: { color: theme.grid } },
          y: { ticks: { display: false }, grid: { display: false } },
        },
      },
    });
  }

  async function openDetail(sessionId: string): Promise<void> {
    if (current !== "history") show("history");
    try {
      // The history store keeps this machine's sessions only: every entry here is local.
      const d = await commands.getSessionDetail({ host: null, session_id: sessionId });
      await loadCharts();
      if (d) renderDetail(d);
      else {
        detail.hidden = false;
        detail.replaceChildren(el("p", { class: "muted" }, "This session is not in the history."));
      }
    } catch (error) {
      detail.hidden = false;
      detail.replaceChildren(el("p", { class: "error" }, errorMessage(error)));
    }
  }

  // ---- switching --------------------------------------------------------------------------
  function show(view: ViewName): void {
    current = view;
    for (const [name, b] of tabButtons) {
      b.setAttribute("aria-selected", String(name === view));
      b.tabIndex = name === view ? 0 : -1;
    }
    for (const part of sessionsParts) part.hidden = view !== "sessions";
    today.hidden = view !== "today";
    history.hidden = view !== "history";
    document.body.dataset.view = view;
    if (view === "today") void loadToday();
    if (view === "history") void loadHistory();
  }

  function refresh(): void {
    if (current === "today" && lastDay) renderToday(lastDay);
    if (current === "history" && lastDetail && !detail.hidden) renderDetail(lastDetail);
  }

  // Light and dark: the charts read their colours from CSS, so they are drawn again.
  window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener?.("change", refresh);

  return { tabs, today, history, show, refresh, setLimits };
}
