// Chart.js, registered with the parts the views use (bar charts only, tree-shaken). A module of
// its own so the bundler splits it out of the window's first load: only "Today" and a session's
// timeline draw charts, and the session list paints without parsing them (ui/src/figures.ts
// imports this when a chart is first needed).
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

export { Chart };
