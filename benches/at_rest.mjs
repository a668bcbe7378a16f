// The measuring half of benches/at_rest.sh (which starts Xvfb, the bus and builds): see there.
import { spawn, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const require = createRequire(import.meta.url);
const { Builder } = require("../tests/desktop/node_modules/selenium-webdriver");
import { trayHost } from "../tests/desktop/tray-host.mjs";

const APP = process.env.APP;
const CLI = process.env.CLI;
const secs = (name, dflt) => Number(process.env[name] ?? dflt);
const BG_SECS = secs("BG_SECS", 300);
const FLAT_SECS = secs("FLAT_SECS", 600);
const VISIBLE_SECS = secs("VISIBLE_SECS", 60);
const CLOSED_SECS = secs("CLOSED_SECS", 60);
const SESSIONS = 50;
// LEGS=background runs only leg 1 (the 10-minute one), LEGS=window only legs 2-6: the two can
// run at once, each in its own world (default: all). LEGS=latency runs only leg 5 (hook to row).
const LEGS = process.env.LEGS ?? "all";
const HZ = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

const world = fs.mkdtempSync(path.join(process.env.RUN_DIR ?? os.tmpdir(), "world-"));
const env = {
  ...process.env,
  HOME: path.join(world, "home"),
  AGENT_TRAY_HOME: path.join(world, "at"),
  XDG_RUNTIME_DIR: path.join(world, "run"),
  XDG_CONFIG_HOME: path.join(world, "home/.config"),
  XDG_DATA_HOME: path.join(world, "home/.local/share"),
  CLAUDE_CONFIG_DIR: path.join(world, "home/.claude"),
  CODEX_HOME: path.join(world, "home/.codex"),
  TAURI_WEBVIEW_AUTOMATION: "true",
};
for (const d of [env.HOME, env.XDG_RUNTIME_DIR, env.CLAUDE_CONFIG_DIR, env.CODEX_HOME, path.join(world, "proj")]) {
  fs.mkdirSync(d, { recursive: true, mode: 0o700 });
}
// Hooks "installed", so a --background start opens no window for the installer.
fs.writeFileSync(path.join(env.CLAUDE_CONFIG_DIR, "settings.json"), '{"hooks":{"Stop":[{"hooks":[{"command":"agent-tray hook"}]}]}}');

const started = []; // every process this script starts, ended by pid at the end
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function start(cmd, args) {
  const log = fs.openSync(path.join(world, `${path.basename(cmd)}-${started.length}.log`), "a");
  const child = spawn(cmd, args, { env, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  started.push(child);
  return child;
}
const cli = (...args) => execFileSync(CLI, args, { env, encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "pipe"] });

function statFields(pid) {
  const s = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
  return s.slice(s.lastIndexOf(")") + 2).split(" ");
}
/// The app and every descendant (its WebKit processes), alive.
function tree(root) {
  const parent = new Map();
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const f = statFields(e);
      if (f[0] !== "Z") parent.set(Number(e), Number(f[1]));
    } catch {}
  }
  const out = [root];
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, pp] of parent) if (out.includes(pp) && !out.includes(pid)) (out.push(pid), (grew = true));
  }
  return out.filter((p) => parent.has(p));
}
function pssKb(pids) {
  let kb = 0;
  for (const p of pids) {
    try {
      kb += Number(/^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/smaps_rollup`, "latin1"))[1]);
    } catch {}
  }
  return kb;
}
/// Memory only this tree holds: Pss_Anon (its heaps and stacks) and USS (Private_Clean +
/// Private_Dirty). PSS also charges each process its share of every shared library page, and
/// that share grows when other programs mapping the same libraries (WebKit, Mesa) exit, so PSS
/// alone can "grow" while the app allocates nothing.
function ownKb(pids) {
  let anon = 0, uss = 0;
  for (const p of pids) {
    try {
      const r = fs.readFileSync(`/proc/${p}/smaps_rollup`, "latin1");
      const f = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(r)?.[1] ?? 0);
      anon += f("Pss_Anon");
      uss += f("Private_Clean") + f("Private_Dirty");
    } catch {}
  }
  return `anon ${mb(anon)} MB, USS ${mb(uss)} MB`;
}
function ticks(pids) {
  const m = new Map();
  for (const p of pids) {
    try {
      const f = statFields(p);
      m.set(p, Number(f[11]) + Number(f[12]));
    } catch {}
  }
  return m;
}
/// Run time (ns) and wake-ups of every thread of the tree, by "process/thread name"
/// (/proc/PID/task/TID/schedstat: ns on the CPU, ns waiting to run, times run).
function threadTimes(pids) {
  const m = new Map();
  for (const p of pids) {
    let tids = [];
    try {
      tids = fs.readdirSync(`/proc/${p}/task`);
    } catch {}
    for (const t of tids) {
      try {
        const [ns, , runs] = fs.readFileSync(`/proc/${p}/task/${t}/schedstat`, "latin1").trim().split(/\s+/).map(Number);
        const comm = fs.readFileSync(`/proc/${p}/task/${t}/comm`, "latin1").trim();
        m.set(`${p}/${t}`, { comm, ns, runs });
      } catch {}
    }
  }
  return m;
}
/// % of one core used by the app's tree over `seconds` (THREAD_BREAKDOWN=1: and per thread name,
/// ms and wake-ups over the window).
async function cpuOver(root, seconds) {
  const before = ticks(tree(root));
  const threadsBefore = process.env.THREAD_BREAKDOWN ? threadTimes(tree(root)) : null;
  const t0 = Date.now();
  await sleep(seconds * 1000);
  if (threadsBefore) {
    const byName = new Map();
    for (const [id, t] of threadTimes(tree(root))) {
      const b = threadsBefore.get(id) ?? { ns: 0, runs: 0 };
      const sum = byName.get(t.comm) ?? { ms: 0, runs: 0, n: 0 };
      sum.ms += (t.ns - b.ns) / 1e6;
      sum.runs += t.runs - b.runs;
      sum.n += 1;
      byName.set(t.comm, sum);
    }
    const rows = [...byName].filter(([, v]) => v.runs > 0).sort((a, b) => b[1].ms - a[1].ms);
    console.log(`  (per thread over ${seconds} s: ${rows.map(([c, v]) => `${c}${v.n > 1 ? ` ×${v.n}` : ""} ${v.ms.toFixed(1)} ms/${v.runs} runs`).join(", ")})`);
  }
  const after = ticks(tree(root));
  let used = 0;
  const each = [];
  for (const [p, t] of after) {
    const d = t - (before.get(p) ?? 0);
    used += d;
    let comm = String(p);
    try {
      comm = fs.readFileSync(`/proc/${p}/comm`, "latin1").trim();
    } catch {}
    if (d > 0) each.push(`${comm} ${((100 * d) / HZ / ((Date.now() - t0) / 1000)).toFixed(3)} %`);
  }
  if (process.env.CPU_BREAKDOWN) console.log(`  (per process: ${each.join(", ") || "none"})`);
  return (100 * used) / HZ / ((Date.now() - t0) / 1000);
}
function webProcesses(root) {
  return tree(root).filter((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/comm`, "latin1").startsWith("WebKitWebProces");
    } catch {
      return false;
    }
  });
}
const mb = (kb) => (kb / 1024).toFixed(1);
/// PSS per process of the tree, by command name and thread count: where the memory is.
function breakdown(root) {
  return tree(root).map((p) => {
    try {
      const comm = fs.readFileSync(`/proc/${p}/comm`, "latin1").trim();
      const threads = /^Threads:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/status`, "latin1"))[1];
      return `${comm} ${mb(pssKb([p]))} MB (${threads} threads)`;
    } catch {
      return `${p} gone`;
    }
  }).join(", ");
}
const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
async function waitFor(what, f, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const v = await f();
      if (v) return v;
    } catch {}
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}
function appPids() {
  const real = fs.realpathSync(APP);
  return fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number).filter((p) => {
    try {
      // Not its window host: the same binary, run by the app with --window-host.
      return fs.readlinkSync(`/proc/${p}/exe`) === real && fs.readFileSync(`/proc/${p}/environ`, "latin1").includes(`AGENT_TRAY_HOME=${env.AGENT_TRAY_HOME}`) && !fs.readFileSync(`/proc/${p}/cmdline`, "latin1").split("\0").includes("--window-host");
    } catch {
      return false;
    }
  });
}

const sleepers = [];
function feed() {
  for (let i = 0; i < SESSIONS; i++) {
    if (!sleepers[i]) sleepers[i] = start("sleep", ["3600"]);
    const cwd = path.join(world, "proj", `p${i}`);
    fs.mkdirSync(cwd, { recursive: true });
    const pid = String(sleepers[i].pid);
    for (const ev of ["SessionStart", "UserPromptSubmit", "Stop"]) cli("observe", "--session", `s${i}`, "--event", ev, "--cwd", cwd, "--pid", pid);
  }
}
const uiCounters = () => driver.executeScript(() => ({ ticks: window.__agentTrayTimerTicks, writes: window.__agentTrayClockWrites ?? NaN, built: window.__agentTrayRowsBuilt ?? NaN }));
/// CPU over VISIBLE_SECS and what the UI did meanwhile (clock wake-ups, times rewritten).
async function visibleCpu(app) {
  const before = await uiCounters();
  const cpu = await cpuOver(app, VISIBLE_SECS);
  const after = await uiCounters();
  return `${cpu.toFixed(3)} % of a core (UI: ${after.ticks - before.ticks} clock wake-ups, ${after.writes - before.writes} times rewritten, ${after.built - before.built} rows built)`;
}

const { trayMenu, menuItems, firstSessionItem, menuOpened, menuClick, menuClosed, clickIcon, keys } = trayHost(env);

/// PSS split into what the app's heaps hold (anon) and its mapped files (libraries): the
/// window's cost after it closes is in one or the other, and only anon is the app's to give back.
function split(pids) {
  let anon = 0, file = 0;
  for (const p of pids) {
    try {
      const r = fs.readFileSync(`/proc/${p}/smaps_rollup`, "latin1");
      const f = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(r)?.[1] ?? 0);
      anon += f("Pss_Anon");
      file += f("Pss_File");
    } catch {}
  }
  return `anon ${mb(anon)} MB, files ${mb(file)} MB`;
}

/// PSS per mapped file name (anonymous memory as [anon], the heap as [heap]) of one process: what
/// the window left behind, by library, is the difference of two of these.
function pssByMapping(pid) {
  const by = new Map();
  let name = null;
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, "latin1").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = (head[1] || "[anon]").split("/").pop();
      continue;
    }
    const pss = /^Pss:\s+(\d+)/.exec(line);
    if (pss) by.set(name, (by.get(name) ?? 0) + Number(pss[1]));
  }
  return by;
}
function grownSince(before, after, top = 8) {
  return [...after]
    .map(([name, kb]) => [name, kb - (before.get(name) ?? 0)])
    .filter(([, kb]) => kb >= 100)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, kb]) => `${name} +${mb(kb)}`)
    .join(", ");
}

/// When the app's log says a window's page set its listeners (`window_page_listening`, logged as
/// the page's catch-up call reaches the app, after its first paint) at or after `since` (epoch
/// ms): its time, or undefined. Times an open with no WebDriver attached.
function pageListeningAfter(since) {
  const logs = path.join(env.AGENT_TRAY_HOME, "logs");
  for (const file of fs.existsSync(logs) ? fs.readdirSync(logs) : []) {
    for (const line of fs.readFileSync(path.join(logs, file), "utf8").split("\n")) {
      if (!line.includes("window_page_listening")) continue;
      const at = Date.parse(/^(\S+Z)/.exec(line)?.[1] ?? "");
      if (at >= since) return at;
    }
  }
  return undefined;
}

/// LEGS=closed (issue 43.3): the window's memory given back. The app as users run it (no
/// automation): PSS with the window never opened, then after each of CLOSE_CYCLES opens (a
/// second launch) and closes (Esc), CLOSED_AFTER seconds (default 15) after the close, then CPU
/// over CLOSED_SECS. Both figures come from the same run, so the machine's noise moves both.
/// AGENT_TRAY_WINDOW_IN_PROCESS=1 measures the window kept in the app's own process (the design
/// before the window host), for a before/after in one sitting.
async function closedLeg() {
  delete env.TAURI_WEBVIEW_AUTOMATION;
  const after = secs("CLOSED_AFTER", 15);
  const cycles = secs("CLOSE_CYCLES", 3);
  start("trayer", ["--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "120", "--heighttype", "pixel", "--height", "32"]);
  start(APP, ["--background"]);
  await waitFor("the engine", () => cli("list", "--json"));
  const app = await waitFor("the app", () => appPids()[0]);
  feed();
  await sleep(after * 1000);
  console.log(`\n## 4c. the window's memory given back (${SESSIONS} sessions, no automation)`);
  const neverOpened = pssByMapping(app);
  console.log(`never opened, ${after} s after the start: PSS ${mb(pssKb(tree(app)))} MB (${split(tree(app))}): ${breakdown(app)}`);
  const onScreen = [];
  const listening = [];
  for (let cycle = 1; cycle <= cycles; cycle++) {
    const asked = Date.now();
    start(APP, []); // a second launch: opens the running app's window
    await waitFor("the window", () => execFileSync("xdotool", ["search", "--onlyvisible", "--name", "^Agent Tray$"], { env, encoding: "utf8" }).trim());
    onScreen.push(Date.now() - asked);
    listening.push((await waitFor("the page listening", () => pageListeningAfter(asked))) - asked);
    await waitFor("the window's web process", () => webProcesses(app).length > 0);
    await sleep(3000);
    const open = pssKb(tree(app));
    const shown = execFileSync("xdotool", ["search", "--onlyvisible", "--name", "^Agent Tray$"], { env, encoding: "utf8" }).trim().split("\n")[0];
    execFileSync("xdotool", ["windowfocus", "--sync", shown], { env });
    execFileSync("xdotool", ["key", "Escape"], { env });
    const closedAt = Date.now();
    await waitFor("the web process to end", () => webProcesses(app).length === 0);
    await sleep(Math.max(0, after * 1000 - (Date.now() - closedAt)));
    console.log(`open ${cycle} (PSS ${mb(open)} MB open), ${after} s after closing: PSS ${mb(pssKb(tree(app)))} MB (${split(tree(app))}): ${breakdown(app)}`);
  }
  console.log(`grown since never opened (MB, by mapping): ${grownSince(neverOpened, pssByMapping(app))}`);
  // The second launch to the window mapped (polled every 20 ms): what starting the window host
  // adds, without WebDriver (which keeps the host; leg 3 measures the paint under it).
  const where = process.env.AGENT_TRAY_WINDOW_IN_PROCESS === "1" ? " (window in the app's process)" : "";
  console.log(`a second launch to the window on screen: p50 ${pct(onScreen, 0.5)} ms (all: ${onScreen.join(" ")})${where}`);
  console.log(`a second launch to its page painted and listening: p50 ${pct(listening, 0.5)} ms (all: ${listening.join(" ")})${where}`);
  console.log(`CPU over ${CLOSED_SECS} s after the last close: ${(await cpuOver(app, CLOSED_SECS)).toFixed(3)} % of a core`);
}

let driver;
try {
  if (LEGS === "closed") await closedLeg();
  // 1. --background: no window ever.
  if (LEGS !== "window" && LEGS !== "latency" && LEGS !== "closed") {
  start(APP, ["--background"]);
  await waitFor("the engine", () => cli("list", "--json"));
  const app = await waitFor("the app", () => appPids()[0]);
  feed();
  await sleep(10_000);
  const t0 = Date.now();
  const children = tree(app).length - 1;
  console.log(`\n## 1. --background, ${SESSIONS} sessions, ${SESSIONS} live processes (${children} child processes of the app)`);
  const bgCpu = cpuOver(app, BG_SECS);
  await sleep(Math.max(0, 60_000 - (Date.now() - t0)));
  const pss1 = pssKb(tree(app));
  console.log(`PSS at minute 1: ${mb(pss1)} MB (${ownKb(tree(app))}): ${breakdown(app)}`);
  console.log(`CPU over ${BG_SECS} s: ${(await bgCpu).toFixed(3)} % of a core`);
  await sleep(Math.max(0, FLAT_SECS * 1000 - (Date.now() - t0)));
  const pss10 = pssKb(tree(app));
  console.log(`PSS at ${FLAT_SECS / 60} min: ${mb(pss10)} MB (${(((pss10 - pss1) / pss1) * 100).toFixed(1)} % from minute 1; ${ownKb(tree(app))})`);
  for (const p of appPids()) process.kill(p, "SIGTERM");
  await waitFor("the app to exit", () => appPids().length === 0);
  if (process.env.STOP_AFTER === "1") throw new Error("stopped after leg 1 (STOP_AFTER=1)");
  }
  if (LEGS !== "background" && LEGS !== "closed") {

  // 2-6 need the page: the app under WebKitWebDriver (which starts it with its window open).
  const port = await new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  start("trayer", ["--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "120", "--heighttype", "pixel", "--height", "32"]);
  start("WebKitWebDriver", [`--port=${port}`]);
  await waitFor("WebKitWebDriver", () => new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => (s.end(), resolve(true)));
    s.on("error", () => resolve(false));
  }));
  driver = await new Builder().usingServer(`http://127.0.0.1:${port}`)
    .withCapabilities({ browserName: "wry", "webkitgtk:browserOptions": { binary: APP, args: [] } }).build();
  const attach = () => waitFor("a window", async () => {
    for (const h of await driver.getAllWindowHandles()) {
      try {
        await driver.switchTo().window(h);
        // The window's page (#app), not the popover's (a menu opening starts both).
        if ((await driver.executeScript(() => document.body.dataset.ready === "true" && !!document.getElementById("app")))) return true;
      } catch {}
    }
    return false;
  });
  await attach();
  const app2 = await waitFor("the app", () => appPids()[0]);
  feed();
  await sleep(5000);
  if (LEGS !== "latency") {
  console.log(`\n## 2. window open and visible, ${SESSIONS} sessions`);
  console.log(`just fed (all ${SESSIONS} rows show seconds for their first hour: the clock's worst case): CPU over ${VISIBLE_SECS} s: ${await visibleCpu(app2)}; PSS ${mb(pssKb(tree(app2)))} MB: ${breakdown(app2)}`);
  // The steady state: rows in their state for over an hour show minutes. A state's start is the
  // engine's clock (observe --at does not move it), so the page's rows are aged by two hours
  // where the clock reads them (data-since); the clock then runs as it does for such rows.
  await driver.executeScript(() => {
    for (const t of document.querySelectorAll(".time[data-since]")) t.dataset.since = new Date(Date.parse(t.dataset.since) - 7_200_000).toISOString();
  });
  await sleep(3000);
  console.log(`steady state (every row in its state for over an hour, showing minutes): CPU over ${VISIBLE_SECS} s: ${await visibleCpu(app2)}`);
  if (process.env.PROBE_FOCUS) {
    console.log(`focused: ${await driver.executeScript(() => document.activeElement?.outerHTML.slice(0, 80))}`);
    await driver.executeScript(() => document.activeElement?.blur());
    console.log(`blurred: CPU over ${VISIBLE_SECS} s: ${(await cpuOver(app2, VISIBLE_SECS)).toFixed(3)} %`);
    await driver.executeScript(() => (document.body.style.display = "none"));
    console.log(`page hidden by CSS: CPU over ${VISIBLE_SECS} s: ${(await cpuOver(app2, VISIBLE_SECS)).toFixed(3)} %`);
  }
  if (process.env.HOLD_SECS) {
    console.log(`holding: web ${webProcesses(app2).join(" ")}, app ${app2}`);
    await sleep(Number(process.env.HOLD_SECS) * 1000);
  }
  if (process.env.STOP_AFTER === "2") throw new Error("stopped after leg 2 (STOP_AFTER=2)");

  /// Runs in the page: its phases from navigation start (the HTML in, the module script starting,
  /// the rows built, the DOM done, `load`, the first frame's callback and the next) and every mark.
  const pagePhases = () => {
    const n = performance.getEntriesByType("navigation")[0];
    const mark = (name) => performance.getEntriesByName(name)[0]?.startTime;
    const marks = Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, m.startTime]));
    return { html: n?.responseEnd, start: mark("agent-tray:start"), rows: mark("agent-tray:rows"), dcl: n?.domContentLoadedEventEnd, load: n?.loadEventStart, listening: mark("agent-tray:listening"), caughtUp: mark("agent-tray:caught-up"), frame: mark("agent-tray:frame"), painted: window.__agentTrayPaintedAt - performance.timeOrigin, marks };
  };
  const close = async () => {
    try {
      await driver.executeScript(() => void setTimeout(() => window.__TAURI_INTERNALS__.invoke("hide_window"), 50));
    } catch {}
    await waitFor("the window's WebKitWebProcess to go", () => webProcesses(app2).length === 0, 10_000).catch(() => {});
  };
  /// One open: `trigger()` asks for the window; the time to the first frame holding the rows,
  /// and to the page's navigation start (the shell's part: its own work, the window and the
  /// WebKit web process).
  const openOnce = async (trigger, before = async () => {}) => {
    await close();
    await sleep(500);
    await before();
    const t = Date.now();
    await trigger();
    await attach();
    const painted = await waitFor("the first paint", () => driver.executeScript(() => window.__agentTrayPaintedAt));
    const rows = await driver.executeScript(() => document.querySelectorAll(".row[data-session-id]").length);
    if (rows < SESSIONS) throw new Error(`painted with ${rows} rows`);
    const origin = await driver.executeScript(() => Math.round(performance.timeOrigin));
    // The page's part, from its navigation start (see pagePhases and ui/src/main.ts).
    const phases = await driver.executeScript(pagePhases);
    return { t, painted: painted - t, toPage: origin - t, phases };
  };
  const report = (label, runs, extra = "") => {
    const opens = runs.map((r) => r.painted);
    const toPage = runs.map((r) => r.toPage);
    console.log(`${label}: p50 ${pct(opens, 0.5)} ms, p95 ${pct(opens, 0.95)} ms (all: ${opens.join(" ")})`);
    console.log(`  of which to the page's navigation start: p50 ${pct(toPage, 0.5)} ms, p95 ${pct(toPage, 0.95)} ms${extra}`);
    const phase = (k) => Math.round(pct(runs.map((r) => r.phases[k] ?? NaN), 0.5));
    console.log(`  from navigation start (p50): HTML in ${phase("html")} ms, the script starts ${phase("start")} ms, rows built ${phase("rows")} ms, DOMContentLoaded ${phase("dcl")} ms, load ${phase("load")} ms, first frame ${phase("frame")} ms, the next (painted) ${phase("painted")} ms; listeners set ${phase("listening")} ms, snapshot caught up ${phase("caughtUp")} ms`);
    // MARKS=1: every performance mark the page set, p50 from navigation start, in time order:
    // where a build with extra marks spends. (WebKit times no resource loaded through the app's
    // own URL scheme, so files have no entries to show.)
    if (process.env.MARKS) {
      const names = [...new Set(runs.flatMap((r) => Object.keys(r.phases.marks ?? {})))];
      const marks = names
        .map((name) => [name, Math.round(pct(runs.map((r) => r.phases.marks?.[name] ?? NaN), 0.5))])
        .sort((a, b) => a[1] - b[1])
        .map(([name, t]) => `${name} ${t}`)
        .join(", ");
      console.log(`  marks (p50): ${marks}`);
    }
  };
  console.log(`\n## 3. open-to-painted (the request → first frame with ${SESSIONS} rows), 20 opens each`);
  /// `count` opens, each by starting `cmd args` (a second launch, or the desktop entry's
  /// `agent-tray open`), which must exit 0; `before` runs after each close (see openOnce).
  const opensBy = async (cmd, args, count, before = async () => {}) => {
    const runs = [];
    for (let i = 0; i < count; i++) {
      let launcher;
      runs.push(await openOnce(async () => {
        launcher = start(cmd, args);
      }, before));
      await waitFor(`${path.basename(cmd)} to exit`, () => launcher.exitCode !== null, 10_000);
      if (launcher.exitCode !== 0) throw new Error(`${path.basename(cmd)} ${args.join(" ")} exited ${launcher.exitCode}`);
    }
    return runs;
  };
  // What the desktop entry runs (src/app_launch.rs): the static CLI asks the running app, so a
  // launch does not pay for loading GTK and WebKit in a process that only hands over.
  const opensThroughCli = (count, before) => opensBy(CLI, ["open"], count, before);
  /// Opened 4 s after each close (openOnce waits 0.5 s, then 3 s more): the app has given its
  /// memory back by then (2 s after the window closed, see src-tauri's at_rest).
  const rested = () => sleep(3000);
  // OPEN_ONLY=1: only the opens through `agent-tray open` (OPENS of them, default 20), then stop:
  // a quick loop for work on the page's start.
  if (process.env.OPEN_ONLY) {
    const runs = await opensThroughCli(Number(process.env.OPENS ?? 20));
    report("a second launch from the desktop entry (agent-tray open)", runs);
    // RUNS_JSON=file: each open as measured (its request's epoch ms, the page's phases and
    // marks), to line up with a system-wide profile recorded on the wall clock.
    if (process.env.RUNS_JSON) fs.writeFileSync(process.env.RUNS_JSON, JSON.stringify(runs));
    throw new Error("stopped after the opens (OPEN_ONLY=1)");
  }
  const launchRuns = await opensBy(APP, [], 20);
  const launches = [];
  // The second launch's own run time, measured apart (its exit is seen late through the event
  // loop above): start to exit, with the window closed as in the runs above.
  for (let i = 0; i < 5; i++) {
    await close();
    await sleep(500);
    const t = process.hrtime.bigint();
    execFileSync(APP, [], { env, stdio: "ignore", timeout: 10_000 });
    launches.push(Number((process.hrtime.bigint() - t) / 1_000_000n));
    await attach();
  }
  report("a second launch", launchRuns, `; the second launch itself (start to exit) p50 ${pct(launches, 0.5)} ms`);
  const openRuns = await opensThroughCli(20);
  const openLaunches = [];
  for (let i = 0; i < 5; i++) {
    await close();
    await sleep(500);
    const t = process.hrtime.bigint();
    execFileSync(CLI, ["open"], { env, stdio: "ignore", timeout: 10_000 });
    openLaunches.push(Number((process.hrtime.bigint() - t) / 1_000_000n));
    await attach();
  }
  report("a second launch from the desktop entry (agent-tray open)", openRuns, `; agent-tray open itself (start to exit) p50 ${pct(openLaunches, 0.5)} ms`);
  // After the app has given its memory back: its pages of WebKit, GTK and its own binary are
  // paged out and read back as the window opens.
  const restedOpens = Number(process.env.RESTED_OPENS ?? 8);
  const restedRuns = await opensBy(APP, [], restedOpens, rested);
  report("a second launch after the app gave its memory back (opened 4 s after closing)", restedRuns);
  // The same through the menu entry's agent-tray open: how a user opens the window long after
  // closing it (the network process ended too, and started again beside the web process).
  const restedOpenRuns = await opensThroughCli(restedOpens, rested);
  report("agent-tray open after the app gave its memory back (opened 4 s after closing)", restedOpenRuns);
  // The tray's menu, in process: a session's item, clicked through the app indicator's
  // dbusmenu on the private bus (what the tray host sends when the user clicks it). The menu's
  // "Open Agent Tray" shows the popover, not this window.
  const menu = trayMenu(app2);
  if (menu) {
    const trayRuns = [];
    for (let i = 0; i < 20; i++) {
      trayRuns.push(await openOnce(async () => {
        const item = firstSessionItem(menu);
        if (!item) throw new Error("no session item in the tray menu");
        menuClick(menu, item.id);
      }));
    }
    report("the tray menu's session item (dbusmenu Event \"clicked\", dbus-send's own start included)", trayRuns);
    // As a StatusNotifierItem host does it: the menu opens (AboutToShow and an "opened" event on
    // its root), the user reads it and clicks, the menu closes. The app starts its pages as the
    // menu opens (src-tauri/src/menu_prewarm.rs); timed from the click, with the click at once
    // and after 400 ms (a quick hand), 20 opens each.
    for (const delay of [0, 400]) {
      const menuRuns = [];
      for (let i = 0; i < 20; i++) {
        menuRuns.push(await openOnce(async () => {
          const item = firstSessionItem(menu);
          if (!item) throw new Error("no session item in the tray menu");
          menuClick(menu, item.id);
          menuClosed(menu);
        }, async () => {
          menuOpened(menu);
          await sleep(delay);
        }));
      }
      report(`the tray menu opened as a StatusNotifierItem host opens it, a session clicked ${delay} ms later (timed from the click)`, menuRuns);
    }
    // The menu's "Open Agent Tray": the popover, a page of its own (all the sessions, needs-you
    // first), created on the click and destroyed when it closes. Opened with the window closed.
    const openItem = menuItems(menu).find((m) => m.label === "Open Agent Tray");
    if (!openItem) throw new Error("no Open item in the tray menu");
    await close();
    const popoverRuns = [];
    for (let i = 0; i < 20; i++) {
      await waitFor("no web process before the popover opens", () => webProcesses(app2).length === 0, 10_000);
      await sleep(500);
      const t = Date.now();
      menuClick(menu, openItem.id);
      const painted = await waitFor("the popover's first paint", async () => {
        for (const h of await driver.getAllWindowHandles()) {
          try {
            await driver.switchTo().window(h);
            const at = await driver.executeScript(() => (document.getElementById("popover") ? window.__agentTrayPaintedAt : undefined));
            if (typeof at === "number") return at;
          } catch {}
        }
        return undefined;
      });
      const rows = await driver.executeScript(() => document.querySelectorAll(".pop-row").length);
      if (rows < SESSIONS) throw new Error(`the popover painted with ${rows} rows`);
      const origin = await driver.executeScript(() => Math.round(performance.timeOrigin));
      const phases = await driver.executeScript(pagePhases);
      popoverRuns.push({ t, painted: painted - t, toPage: origin - t, phases });
      try {
        await driver.executeScript(() => void setTimeout(() => window.__TAURI_INTERNALS__.invoke("hide_popover"), 50));
      } catch {}
    }
    await waitFor("the popover's web process to go", () => webProcesses(app2).length === 0, 10_000);
    report("the tray menu's Open Agent Tray (the popover, dbusmenu Event \"clicked\")", popoverRuns);
  } else {
    console.log("the tray menu: not found on the bus (no dbusmenu), not measured");
  }
  // An XEmbed tray (trayer): a click on the icon pops the GtkMenu up in the app, which starts
  // the pages as the menu shows (menu_prewarm); the user moves to the first session (Down) and
  // chooses it (Return) 400 ms after the click. Timed from the Return (xdotool's start included).
  {
    const xembedRuns = [];
    for (let i = 0; i < 20; i++) {
      xembedRuns.push(await openOnce(async () => {
        keys("Return");
      }, async () => {
        clickIcon();
        await sleep(400);
        keys("Down");
      }));
    }
    report("an XEmbed tray's menu (trayer): the icon clicked, the first session chosen with the keyboard 400 ms later (timed from the Return)", xembedRuns);
  }
  if (process.env.STOP_AFTER === "3") throw new Error("stopped after leg 3 (STOP_AFTER=3)");

  await close();
  await sleep(10_000);
  console.log(`\n## 4. window opened then closed (from 10 s after closing)`);
  console.log(`PSS ${mb(pssKb(tree(app2)))} MB (${ownKb(tree(app2))}): ${breakdown(app2)}; CPU over ${CLOSED_SECS} s: ${(await cpuOver(app2, CLOSED_SECS)).toFixed(3)} % of a core`);
  }

  start(APP, []);
  await attach();
  await driver.executeScript(() => {
    window.__rowSeen = {};
    new MutationObserver(() => {
      for (const r of document.querySelectorAll(".row[data-session-id^='lat-']")) window.__rowSeen[r.dataset.sessionId] ??= Date.now();
    }).observe(document.body, { childList: true, subtree: true });
  });
  const sent = {};
  for (let i = 0; i < 200; i++) {
    sent[`lat-${i}`] = Date.now();
    cli("observe", "--session", `lat-${i}`, "--event", "SessionStart", "--cwd", path.join(world, "proj", "p0"));
    await sleep(30);
  }
  const seen = await waitFor("every row", async () => {
    const m = await driver.executeScript(() => window.__rowSeen);
    return Object.keys(m).length >= 200 ? m : null;
  });
  const lat = Object.keys(sent).map((id) => seen[id] - sent[id]);
  console.log(`\n## 5. hook (observe) to row in the DOM, 200 hooks`);
  console.log(`p50 ${pct(lat, 0.5)} ms, p99 ${pct(lat, 0.99)} ms, max ${Math.max(...lat)} ms`);

  if (LEGS !== "latency") {
  const kills = [];
  for (let i = 0; i < 20; i++) {
    const victim = sleepers[i];
    const t = Date.now();
    process.kill(victim.pid, "SIGKILL");
    await waitFor("ended", () => JSON.parse(cli("list", "--json")).find((s) => s.session_id === `s${i}`)?.state === "ended", 20_000);
    kills.push(Date.now() - t);
  }
  console.log(`\n## 6. kill -9 of a watched process → ended in list --json, 20 kills (polling list --json)`);
  console.log(`p50 ${pct(kills, 0.5)} ms, max ${Math.max(...kills)} ms`);
  }

  if (LEGS !== "latency") {
  // 4 again, as users run it: without WebDriver automation. Under TAURI_WEBVIEW_AUTOMATION the
  // app keeps WebKit's network process after its last window closes (WebKit ends the automation
  // session with it), so leg 4 above shows the tree with it; here the app ends it.
  await Promise.race([driver.quit(), sleep(10_000)]).catch(() => {});
  driver = undefined;
  for (const p of appPids()) process.kill(p, "SIGTERM");
  await waitFor("the app to exit", () => appPids().length === 0);
  delete env.TAURI_WEBVIEW_AUTOMATION;
  for (let i = 0; i < 20; i++) sleepers[i] = undefined; // the ones leg 6 killed: new live ones
  start(APP, ["--background"]);
  await waitFor("the engine", () => cli("list", "--json"));
  const app3 = await waitFor("the app", () => appPids()[0]);
  feed();
  start(APP, []); // a second launch: opens the running app's window
  await waitFor("the window's web process", () => webProcesses(app3).length > 0);
  await sleep(5000);
  const shown = execFileSync("xdotool", ["search", "--onlyvisible", "--name", "^Agent Tray$"], { env, encoding: "utf8" }).trim().split("\n")[0];
  execFileSync("xdotool", ["windowfocus", "--sync", shown], { env });
  execFileSync("xdotool", ["key", "Escape"], { env });
  const closedAt = Date.now();
  await waitFor("the web process to end", () => webProcesses(app3).length === 0);
  const webkitLeft = () => tree(app3).slice(1).filter((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/comm`, "latin1").startsWith("WebKit");
    } catch {
      return false;
    }
  }).length;
  await waitFor("no WebKit process left", () => webkitLeft() === 0, 15_000).catch(() => {});
  const gone = ((Date.now() - closedAt) / 1000).toFixed(1);
  await sleep(Math.max(0, 10_000 - (Date.now() - closedAt)));
  console.log(`\n## 4b. window opened then closed, no automation (from 10 s after closing; ${webkitLeft()} WebKit processes left, the last gone ${gone} s after closing)`);
  console.log(`PSS ${mb(pssKb(tree(app3)))} MB (${ownKb(tree(app3))}): ${breakdown(app3)}; CPU over ${CLOSED_SECS} s: ${(await cpuOver(app3, CLOSED_SECS)).toFixed(3)} % of a core`);
  }
  }
} finally {
  try {
    await Promise.race([driver?.quit(), sleep(10_000)]);
  } catch {}
  for (const p of appPids()) process.kill(p, "SIGTERM");
  for (const c of started.reverse()) {
    try {
      c.kill("SIGKILL");
    } catch {}
  }
  await sleep(500);
  // KEEP_RUN_DIR=1 keeps the world (the app's and the window host's logs) for a look afterwards.
  if (!process.env.KEEP_RUN_DIR) fs.rmSync(world, { recursive: true, force: true });
}
