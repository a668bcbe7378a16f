// The "History" view: the stored sessions, with search and filters, and a session's timeline. A
// module of its own, beside "Today" (today-view.ts), with what both show in figures.ts.
//
// Every figure comes from the core (src/store/views.rs, `get_history` and `get_session_detail`);
// this file only renders them. A session's timeline is a Chart.js floating bar chart; canvas
// pixels cannot be read by tests or screen readers, so a table of the same intervals stands
// beside it, with the raw seconds in data attributes. Its colours come from the page's CSS
// variables, read when it is drawn and again when the system switches between light and dark.
import type { Chart } from "chart.js";
import { AGENTS, ANSWER_PLACES, REQUEST_OUTCOMES, STATE_LABELS } from "./bindings";
import { agentBadge } from "./agents";
import type { Agent, HistoryEntry, HistoryQuery, RequestRecord, SessionDetail, SessionState, TimelineInterval } from "./bindings";
import { el } from "./dom";
import { chartTheme, clock, costText, cssVar, duration, figureCard, loadCharts, loadedCharts } from "./figures";
import { commands, errorMessage } from "./ipc";

const dateTime = (iso: string): string =>
  new Date(iso).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

function stateColor(state: SessionState): string {
  if (state === "working") return cssVar("--working");
  if (state === "waiting_for_permission" || state === "waiting_for_input") return cssVar("--needs");
  return cssVar("--idle");
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

/// The view, as the page assembles and drives it.
export interface HistoryView {
  panel: HTMLElement;
  /// Fetches the stored sessions the filters ask for and lists them (each time the view is shown).
  load(): Promise<void>;
  /// Shows a stored session's detail and timeline, showing the view first if it is hidden.
  openDetail(sessionId: string): Promise<void>;
}

/// `show` shows the view (the page's tabs): a session opened from elsewhere brings it up.
export function createHistoryView(show: () => void): HistoryView {
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
    const Charts = loadedCharts();
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
    if (history.hidden) show();
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

  // Light and dark: the timeline reads its colours from CSS, so it is drawn again while shown.
  window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener?.("change", () => {
    if (!history.hidden && lastDetail && !detail.hidden) renderDetail(lastDetail);
  });

  return { panel: history, load: loadHistory, openDetail };
}
