// The real app end to end: the debug binary under Xvfb, driven through WebKitWebDriver, fed by
// the real `agent-tray` CLI over the app's own control socket, with a real process killed, its
// desktop alert read from a private session bus, and the tray menu opened through a real tray
// host (trayer) with xdotool.
//
// Run by run.sh inside `dbus-run-session` with DISPLAY set to a private Xvfb, and with
// NOTIFY_LOG naming the file where dbus-monitor writes Notify calls.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { Builder, By, until } from "selenium-webdriver";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const target = process.env.CARGO_TARGET_DIR ?? path.join(root, "target");
const APP = path.join(target, "debug/agent-tray-desktop");
const CLI = path.join(target, "debug/agent-tray");
const NOTIFY_LOG = process.env.NOTIFY_LOG;
const artifacts = path.join(here, "artifacts");

const world = fs.mkdtempSync(path.join(os.tmpdir(), "agent-tray-e2e-"));
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
  NO_AT_BRIDGE: "1",
  // The pid watcher ticks every 10 s in use; half a second keeps the kill test short.
  AGENT_TRAY_PID_WATCH_INTERVAL_MS: "500",
};
for (const dir of [env.HOME, env.XDG_RUNTIME_DIR, path.join(world, "proj/api-server"), path.join(world, "proj/web")]) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
}

const children = [];
let driver;

function start(cmd, args, options = {}) {
  const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"], ...options });
  const log = fs.createWriteStream(path.join(world, `${path.basename(cmd)}-${children.length}.log`));
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  children.push(child);
  return child;
}

function cli(...args) {
  return execFileSync(CLI, args, { env, encoding: "utf8", timeout: 10_000 });
}

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(what, f, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await f();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

// textContent, not WebDriver's getText: WebKit's "visible text" drops text inside isolated,
// overflow-clipped spans, and the test asserts on what the DOM holds.
const text = (selector) => driver.executeScript((sel) => document.querySelector(sel)?.textContent ?? "", selector);

const sectionOf = (id) =>
  driver.executeScript(
    (id) => document.querySelector(`.row[data-session-id="${id}"]`)?.closest("section")?.dataset.section ?? null,
    id,
  );

/// Whether the app's window is mapped on the display (WebDriver can still read a hidden one).
function appWindowVisible() {
  try {
    return execFileSync("xdotool", ["search", "--onlyvisible", "--name", "^Agent Tray$"], { env, encoding: "utf8" }).trim() !== "";
  } catch {
    return false; // xdotool exits 1 when no window matches
  }
}

before(async () => {
  assert.ok(fs.existsSync(APP), `build the app first: ${APP}`);
  assert.ok(fs.existsSync(CLI), `build the CLI first: ${CLI}`);
  assert.ok(process.env.DISPLAY, "run under Xvfb (run.sh does)");
  assert.ok(process.env.DBUS_SESSION_BUS_ADDRESS, "run under dbus-run-session (run.sh does)");
  fs.mkdirSync(artifacts, { recursive: true });
  // A tray host on the private bus: ayatana falls back to a classic tray icon inside it.
  start("trayer", ["--edge", "top", "--align", "right", "--widthtype", "pixel", "--width", "120", "--heighttype", "pixel", "--height", "32"]);
  const port = await freePort();
  start("WebKitWebDriver", [`--port=${port}`]);
  await waitFor("WebKitWebDriver", () => new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1", () => { s.end(); resolve(true); });
    s.on("error", () => resolve(false));
  }));
  driver = await new Builder()
    .usingServer(`http://127.0.0.1:${port}`)
    .withCapabilities({ browserName: "wry", "webkitgtk:browserOptions": { binary: APP, args: [] } })
    .build();
  await driver.wait(until.elementLocated(By.css("body[data-ready='true']")), 20_000);
});

after(async () => {
  try {
    await driver?.quit();
  } catch {
    // the app may already be gone
  }
  for (const child of children.reverse()) {
    child.kill("SIGTERM");
  }
  await new Promise((r) => setTimeout(r, 1000));
  for (const child of children) {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
  if (!process.env.KEEP_E2E_WORLD) fs.rmSync(world, { recursive: true, force: true });
});

test("the app hosts the engine: the CLI talks to its socket", async () => {
  const footer = await text("#footer");
  assert.match(footer, /engine on .*agent-tray\.sock/, footer);
  assert.match(cli("list"), /No sessions/);
  assert.match(await text("#empty"), /No sessions yet/);
});

test("a session appears within a second of its first hook and moves through its states live", async () => {
  const cwd = path.join(world, "proj/api-server");
  const t0 = Date.now();
  cli("observe", "--session", "e2e-1", "--event", "SessionStart", "--cwd", cwd);
  await waitFor("the row", async () => (await sectionOf("e2e-1")) === "idle", 1000);
  assert.ok(Date.now() - t0 <= 1500, "within about a second");
  assert.match(await text('.row[data-session-id="e2e-1"]'), /api-server/);
  cli("observe", "--session", "e2e-1", "--event", "UserPromptSubmit");
  await waitFor("working", async () => (await sectionOf("e2e-1")) === "working", 2000);
  cli("observe", "--session", "e2e-1", "--event", "PermissionRequest", "--tool", "Bash");
  await waitFor("needs you", async () => (await sectionOf("e2e-1")) === "needs_you", 2000);
  await waitFor("the alert", () => NOTIFY_LOG && fs.readFileSync(NOTIFY_LOG, "utf8").includes("api-server: Claude needs permission to run Bash"), 5000);
  cli("observe", "--session", "e2e-1", "--event", "Stop");
  await waitFor("idle", async () => (await sectionOf("e2e-1")) === "idle", 2000);
});

test("a killed agent process ends its session and raises a desktop alert", async () => {
  const victim = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
  children.push(victim);
  const cwd = path.join(world, "proj/web");
  cli("observe", "--session", "e2e-kill", "--event", "SessionStart", "--cwd", cwd, "--pid", String(victim.pid));
  cli("observe", "--session", "e2e-kill", "--event", "UserPromptSubmit", "--pid", String(victim.pid));
  await waitFor("working", async () => (await sectionOf("e2e-kill")) === "working", 2000);
  // The watcher ends only a pid it has seen alive: let a few of its ticks (500 ms here) see it.
  await new Promise((r) => setTimeout(r, 2000));
  // Only this alert on screen, so the click below lands on it (dunst lists the oldest first).
  execFileSync("dunstctl", ["close-all"], { env });
  process.kill(victim.pid, "SIGKILL");
  await waitFor("ended", async () => (await sectionOf("e2e-kill")) === "ended", 5000);
  const needle = `web: Claude's process ${victim.pid} died`;
  await waitFor("the alert", () => fs.readFileSync(NOTIFY_LOG, "utf8").includes(needle), 5000);
  assert.match(cli("list", "--json"), /"e2e-kill"[\s\S]*"ended"|"ended"[\s\S]*"e2e-kill"/);
});

test("clicking the desktop alert opens the window on its session", async () => {
  // The user looks at another row, hides the window (Esc), then clicks the alert for the
  // killed process in the notification server (dunst, on the private bus).
  // A click on the row itself (not on one of its action buttons, which would launch things).
  await driver.executeScript(() => document.querySelector('.row[data-session-id="e2e-1"]').click());
  await waitFor("e2e-1 selected", async () =>
    (await driver.executeScript(() => document.querySelector('.row[aria-selected="true"]')?.dataset.sessionId)) === "e2e-1", 2000);
  await driver.actions().sendKeys("\uE00C").perform();
  await waitFor("the window hidden", () => !appWindowVisible(), 3000);
  await waitFor("the alert on screen", () => execFileSync("dunstctl", ["count", "displayed"], { env, encoding: "utf8" }).trim() === "1", 3000);
  execFileSync("dunstctl", ["action", "0"], { env });
  await waitFor("the window shown again", () => appWindowVisible(), 5000);
  await waitFor("the alert's session selected", async () =>
    (await driver.executeScript(() => document.querySelector('.row[aria-selected="true"]')?.dataset.sessionId)) === "e2e-kill", 5000);
});

test("the tray menu lists the sessions and choosing one selects it in the window", async () => {
  cli("observe", "--session", "e2e-tray", "--event", "SessionStart", "--cwd", path.join(world, "proj/api-server"));
  cli("observe", "--session", "e2e-tray", "--event", "PermissionRequest", "--tool", "Edit");
  await waitFor("needs you", async () => (await sectionOf("e2e-tray")) === "needs_you", 2000);
  // Let the tray settle (it renders 100 ms after a change), and clear dunst's popups: they sit
  // in the same top-right corner as the tray and would take the click.
  await new Promise((r) => setTimeout(r, 800));
  execFileSync("dunstctl", ["close-all"], { env });
  await waitFor("no popup over the tray", () => execFileSync("dunstctl", ["count", "displayed"], { env, encoding: "utf8" }).trim() === "0", 3000);
  // Hide the window first: with it focused, the keys below would move its own selection and
  // the test would pass without the menu ever opening.
  await driver.actions().sendKeys("\uE00C").perform();
  await waitFor("the window hidden", () => !appWindowVisible(), 3000);
  // trayer's panel is the window of class "trayer" that spans the tray (its 10x10 child and
  // leader are not).
  const geometries = execFileSync("xdotool", ["search", "--class", "trayer"], { env, encoding: "utf8" })
    .trim().split("\n").filter(Boolean)
    .map((id) => Object.fromEntries(execFileSync("xdotool", ["getwindowgeometry", "--shell", id], { env, encoding: "utf8" })
      .trim().split("\n").map((l) => l.split("="))));
  assert.ok(geometries.length > 0, "trayer is running");
  const g = geometries.reduce((a, b) => (Number(b.WIDTH) > Number(a.WIDTH) ? b : a));
  // The only icon in the tray sits at its right end (the tray is right-aligned).
  const x = Number(g.X) + Number(g.WIDTH) - 16;
  const y = Number(g.Y) + Number(g.HEIGHT) / 2;
  execFileSync("xdotool", ["mousemove", String(x), String(y), "click", "1"], { env });
  await new Promise((r) => setTimeout(r, 1000));
  execFileSync("import", ["-window", "root", path.join(artifacts, "e2e-tray-menu.png")], { env });
  // Sessions that need the user come first: e2e-1 is idle, e2e-kill ended, e2e-tray waits.
  execFileSync("xdotool", ["key", "Down", "Return"], { env });
  await waitFor("the window shown by the menu", () => appWindowVisible(), 5000);
  await waitFor("the chosen session selected", async () =>
    (await driver.executeScript(() => document.querySelector('.row[aria-selected="true"]')?.dataset.sessionId)) === "e2e-tray", 5000);
  await driver.takeScreenshot().then((png) => fs.writeFileSync(path.join(artifacts, "e2e-window.png"), png, "base64"));
});
