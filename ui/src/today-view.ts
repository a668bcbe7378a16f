// The "Today" view: the day by hour, totals per agent and project, the longest waits, the cost so
// far and the plans' windows. A module of its own, beside "History" (history-view.ts), with what
// both show in figures.ts.
//
// Every figure comes from the core (src/store/views.rs, `get_today`); this file only renders
// them. The day is a Chart.js stacked bar chart; canvas pixels cannot be read by tests or screen
// readers, so a table of the same figures stands beside it (visually hidden), with the raw
// seconds in data attributes. Its colours come from the page's CSS variables, read when it is
// drawn and again when the system switches between light and dark.
import type { Chart } from "chart.js";
import { ANSWER_PLACES } from "./bindings";
import { agentBadge, storedAgentName } from "./agents";
import type { AnswerCounts, DayReport, KeyedSplit, LongWait, PlanWindow } from "./bindings";
import { el } from "./dom";
import { chartTheme, clock, costText, cssVar, duration, figureCard, loadCharts, loadedCharts } from "./figures";
import { commands, errorMessage } from "./ipc";

const WAIT_NAMES: Record<LongWait["kind"], string> = {
  permission: "permission",
  input: "input",
  idle_after_turn: "your next prompt",
};

/// "resets 14:05" today, "resets Tue 09:00" later: the window's reset in the user's time.
function resetText(iso: string | null): string {
  if (!iso) return "";
  const at = new Date(iso);
  const sameDay = at.toDateString() === new Date().toDateString();
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return ` · resets ${sameDay ? time : `${at.toLocaleDateString([], { weekday: "short" })} ${time}`}`;
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

/// The view, as the page assembles and drives it.
export interface TodayView {
  panel: HTMLElement;
  /// Fetches the day's figures and renders them (each time the view is shown).
  load(): Promise<void>;
  /// The plans' windows the agents reported (from the snapshot and the `limits` event).
  setLimits(windows: PlanWindow[]): void;
}

/// `openSession` shows a stored session's detail (a click on one of the longest waits).
export function createTodayView(openSession: (sessionId: string) => Promise<void>): TodayView {
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
        item.addEventListener("click", () => void openSession(w.session_id));
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
      el("div", { class: "columns" }, splitTable("by-agent", "By agent", day.by_agent, storedAgentName), splitTable("by-project", "By project", day.by_project, (k) => k)),
      el("h3", {}, "Longest waits"),
      day.longest_waits.length ? waits : el("p", { class: "muted", attrs: { id: "longest-waits" } }, "No waits today."),
      ...answersLine(day.answers),
      el("p", { class: "muted small" }, `Since midnight (${day.time_zone}). Waiting on you: needs permission, needs input, or idle after a turn until your next prompt.`),
    );
    drawDayChart(canvas, day);
  }

  function drawDayChart(canvas: HTMLCanvasElement, day: DayReport): void {
    dayChart?.destroy();
    dayChart = null;
    const Charts = loadedCharts();
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

  // Light and dark: the chart reads its colours from CSS, so it is drawn again while shown.
  window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener?.("change", () => {
    if (!today.hidden && lastDay) renderToday(lastDay);
  });

  return { panel: today, load: loadToday, setLimits };
}
