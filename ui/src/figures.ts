// What the "Today" and "History" views both show: durations, clock times, costs, figure cards,
// the charts' colours, and Chart.js loaded when a chart is first needed. One module, so the two
// views render a figure the same way.
import type { Chart } from "chart.js";
import { el } from "./dom";
import { formatElapsed } from "./format";

/// Chart.js, loaded the first time a view needs a chart (ui/src/charts.ts): the window's first
/// paint does not wait for it. Views await it before they render.
let ChartClass: typeof Chart | null = null;
export async function loadCharts(): Promise<void> {
  ChartClass ??= (await import("./charts")).Chart;
}

/// Chart.js once [`loadCharts`] has loaded it; null before (a view then draws no chart).
export function loadedCharts(): typeof Chart | null {
  return ChartClass;
}

export const duration = (secs: number): string => formatElapsed(secs);
export const clock = (iso: string): string => new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

/// A cost is always an estimate: the label says so wherever it shows.
export function costText(usd: number | null): string {
  return usd === null ? "not recorded" : `≈ $${usd.toFixed(2)} (estimate)`;
}

export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

/// Axis and grid colours for the current theme.
export function chartTheme() {
  return { text: cssVar("--muted"), grid: cssVar("--border") };
}

export function figureCard(id: string, label: string, value: string, secs: number | null): HTMLElement {
  return el(
    "div",
    { class: `figure figure-${id}`, attrs: { id: `total-${id}`, ...(secs === null ? {} : { "data-secs": String(secs) }) } },
    el("span", { class: "figure-label" }, label),
    el("span", { class: "figure-value" }, value),
  );
}
