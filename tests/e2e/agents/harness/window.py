"""The real desktop app (`agent-tray-desktop`) in a private display, read through WebDriver.

Why this shape: the desktop suite (tests/desktop) drives the window with selenium from node, but
the real agents are driven from here (Python, stdlib only). WebKitWebDriver speaks the W3C
WebDriver protocol over plain HTTP + JSON, so a few urllib calls read the window's DOM with no
client library: the same capabilities as tests/desktop/e2e.test.mjs (`browserName: "wry"`, the
app's binary in `webkitgtk:browserOptions`, `TAURI_WEBVIEW_AUTOMATION=true` in its environment).

What runs, each started here and ended here by its pid (newest first):
  Xvfb            a private X server; `-displayfd` picks a free display, so parallel runs never clash
  dbus-daemon     a private session bus with no service folders: it activates nothing behind our back
  WebKitWebDriver on a free loopback port; it starts the app, which outlives the WebDriver session
                  (closing the window leaves it in the tray), so the app and its WebKit helpers are
                  ended by pid too
Everything inherits the world's environment (its marker too), so the world's sweep is the last
resort, never the plan.
"""
import base64
import json
import os
import select
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

from .tray import REPO, tray_bin
from .world import end_pids, pids_with_marker, proc_ppid

ARTIFACTS = os.environ.get("AGENT_E2E_ARTIFACTS") or os.path.join(REPO, "tests", "e2e", "agents", "artifacts")
BINDINGS = os.path.join(REPO, "ui", "src", "bindings.ts")

# Every row of the session list as data: the agent badge's text and computed colour, the row's
# raw state and its section, the project and (in its title) the cwd. textContent, not WebDriver's
# visible text: the test asserts on what the DOM holds.
ROWS_JS = """
return [...document.querySelectorAll('.row[data-session-id]')].map((r) => {
  const badge = r.querySelector('.agent');
  const project = r.querySelector('.project');
  return {
    session_id: r.dataset.sessionId,
    state: r.dataset.state,
    section: r.closest('section')?.dataset.section ?? null,
    name: badge ? badge.textContent : null,
    colour: badge ? getComputedStyle(badge).color : null,
    project: project ? project.textContent : null,
    cwd: project ? project.title : null,
  };
});
"""


class WindowError(AssertionError):
    pass


def desktop_bin():
    """The app's debug binary: $AGENT_TRAY_DESKTOP_BIN, else beside agent-tray (same target dir)."""
    b = os.environ.get("AGENT_TRAY_DESKTOP_BIN") or os.path.join(os.path.dirname(tray_bin()), "agent-tray-desktop")
    return os.path.abspath(b)


def registered_agents():
    """{agent id: (display name, "rgb(r, g, b)")} as the core registers them: the AGENTS table the
    core's bindings generate into the UI (ui/src/bindings.ts), which the window renders."""
    with open(BINDINGS) as f:
        for line in f:
            if line.startswith("export const AGENTS"):
                table = json.loads(line[line.index("=") + 1:].strip().rstrip(";"))
                break
        else:
            raise WindowError(f"no AGENTS table in {BINDINGS}")
    out = {}
    for a in table:
        h = a["colour"].lstrip("#")
        out[a["agent"]] = (a["name"], f"rgb({int(h[0:2], 16)}, {int(h[2:4], 16)}, {int(h[4:6], 16)})")
    return out


def _read_line_from(fd, timeout, what):
    """The first line written to pipe `fd` within `timeout` s (Xvfb's display, the bus address)."""
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise WindowError(f"{what} wrote nothing within {timeout}s")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise WindowError(f"{what} exited before writing its line")
            buf += chunk
    return buf.split(b"\n", 1)[0].decode().strip()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid):
    """pids of every live descendant of `pid` (the app's WebKitWebProcess, WebKitNetworkProcess)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            kids.setdefault(proc_ppid(int(d)), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class AppWindow:
    """The app under a private Xvfb + session bus, its window's DOM read through WebKitWebDriver."""

    def __init__(self, world, env=None):
        self.world = world
        self.app = desktop_bin()
        self.env = dict(env or world.env)
        self.procs = []  # Popen, in start order
        self.app_pids = []
        self.session = None
        self.url = None
        world.on_cleanup(self.stop)

    def check(self):
        if not (os.path.isfile(self.app) and os.access(self.app, os.X_OK)):
            raise WindowError(
                f"the desktop app's binary is missing: {self.app}. Build it first (tests/desktop/run.sh "
                "does, before this suite in scripts/test.sh; by hand: `npm --prefix ui ci && npm --prefix ui "
                "run build && cargo build -p agent-tray-desktop`), or set AGENT_TRAY_DESKTOP_BIN")
        missing = [t for t in ("Xvfb", "dbus-daemon", "WebKitWebDriver") if not shutil.which(t)]
        if missing:
            raise WindowError(f"{', '.join(missing)} not installed: run scripts/setup.sh --test")

    def _spawn(self, name, argv, **kw):
        log = open(self.world.path("logs", f"{name}.log"), "w")
        p = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             cwd=self.world.root, start_new_session=True, **kw)
        log.close()
        self.procs.append(p)
        return p

    def start(self, timeout=60):
        self.check()
        # A private X server on a display it picks itself.
        r, w = os.pipe()
        try:
            self._spawn("xvfb", ["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                        pass_fds=(w,))
            os.close(w)
            self.env["DISPLAY"] = ":" + _read_line_from(r, 15, "Xvfb")
        finally:
            os.close(r)
        # A private session bus that activates nothing (the tray and alerts log and carry on).
        conf = self.world.path("bus.conf")
        with open(conf, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={self.world.runtime_dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
""")
        r, w = os.pipe()
        try:
            self._spawn("dbus", ["dbus-daemon", f"--config-file={conf}", "--nofork", "--nopidfile",
                                 f"--print-address={w}"], pass_fds=(w,))
            os.close(w)
            self.env["DBUS_SESSION_BUS_ADDRESS"] = _read_line_from(r, 15, "dbus-daemon")
        finally:
            os.close(r)
        self.env.update({
            "TAURI_WEBVIEW_AUTOMATION": "true",
            # GTK and WebKit would ask the bus for an accessibility bus and dconf: there are none.
            "NO_AT_BRIDGE": "1", "GTK_A11Y": "none", "GSETTINGS_BACKEND": "memory",
        })
        port = _free_port()
        self._spawn("webkitwebdriver", ["WebKitWebDriver", f"--port={port}"])
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise WindowError(f"WebKitWebDriver did not listen on {port} within 15s")
                time.sleep(0.1)
        caps = {"browserName": "wry", "webkitgtk:browserOptions": {"binary": self.app, "args": []}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, timeout=timeout)["sessionId"]
        # WebKitWebDriver started the app: find it (its binary, this world's marker) to end it later.
        deadline = time.monotonic() + 10
        while not self.app_pids:
            self.app_pids = [p for p in pids_with_marker(self.world.id) if self._is_app(p)]
            if time.monotonic() > deadline:
                raise WindowError(f"no {self.app} process of this world found after the session started")
            time.sleep(0.1)
        self.wait_js("return document.body.dataset.ready", "true", 30, "the window's page ready")
        return self

    def _is_app(self, pid):
        try:
            return os.readlink(f"/proc/{pid}/exe") == os.path.realpath(self.app)
        except OSError:
            return False

    # -- W3C WebDriver over HTTP --------------------------------------------
    def _call(self, method, path, body=None, timeout=15):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return json.loads(resp.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            raise WindowError(f"WebDriver {method} {path} failed: {e.code} {e.read()[:500]!r}")
        except (urllib.error.URLError, OSError) as e:
            raise WindowError(f"WebDriver {method} {path} failed: {e}")

    def js(self, script, *args):
        return self._call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": list(args)})

    def wait_js(self, script, want, timeout, what):
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                last = self.js(script)
                if last == want:
                    return last
            except WindowError as e:
                last = e
            if time.monotonic() > deadline:
                raise WindowError(f"{what}: not seen within {timeout}s (last: {last!r})")
            time.sleep(0.2)

    def rows(self):
        return self.js(ROWS_JS)

    def screenshot(self, name):
        """Saves the window as ARTIFACTS/<name>.png; returns the path."""
        png = base64.b64decode(self._call("GET", f"/session/{self.session}/screenshot", timeout=30))
        os.makedirs(ARTIFACTS, exist_ok=True)
        path = os.path.join(ARTIFACTS, f"{name}.png")
        with open(path, "wb") as f:
            f.write(png)
        return path

    # -- alerts ----------------------------------------------------------------
    def start_dunst(self, world):
        """dunst on the app's bus, its context menu steered by tests/desktop/dunst-pick.sh to pick
        the action whose text `pick_action` last wrote (so dunst sends ActionInvoked, as for a
        person's choice). Returns `ctl(*args)`, which runs dunstctl on that bus."""
        import shutil
        if not shutil.which("dunst"):
            raise WindowError("dunst not installed: run scripts/setup.sh --test")
        picker = os.path.realpath(os.path.join(REPO, "tests", "desktop", "dunst-pick.sh"))
        rc = world.path("dunstrc")
        with open(rc, "w") as f:
            f.write(f"[global]\n    dmenu = {picker}\n")
        self._pick_file = world.path("dunst-pick")
        self.pick_action("Allow")
        self.env.update({"DUNST_PICK_FILE": self._pick_file, "DUNST_MENU_LOG": world.path("logs", "dunst-menu.log")})
        self._spawn("dunst", ["dunst", "-config", rc])
        self.dunst_menu_log = world.path("logs", "dunst-menu.log")
        return self.dunstctl

    def pick_action(self, text):
        """What dunst's menu picks next: the first action line holding `text`."""
        with open(self._pick_file, "w") as f:
            f.write(text)

    def dunstctl(self, *args):
        return subprocess.run(["dunstctl", *args], env=self.env, capture_output=True, text=True, timeout=10)

    def wait_alerts_displayed(self, n, timeout):
        """Waits until dunst shows `n` alerts; returns the count it shows then (as text)."""
        deadline = time.monotonic() + timeout
        while self.dunstctl("count", "displayed").stdout.strip() != str(n) and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.dunstctl("count", "displayed").stdout.strip()

    def pick_until(self, done, timeout=30):
        """Opens dunst's menu (which picks) until `done()` holds. The app listens for an alert's
        ActionInvoked just after showing it; a pick within those milliseconds on a loaded machine
        is a signal nobody hears and dunst keeps the alert up, so a pick is repeated while the
        alert stays unanswered (a person never clicks that fast). Returns the number of picks, or
        raises with dunst's menus."""
        deadline = time.monotonic() + timeout
        picks = 0
        while not done() and time.monotonic() < deadline:
            self.dunstctl("context")
            picks += 1
            waited = time.monotonic() + 4
            while not done() and time.monotonic() < waited:
                time.sleep(0.1)
        if not done():
            menus = open(self.dunst_menu_log).read() if os.path.exists(self.dunst_menu_log) else "(dunst never opened its menu)"
            raise WindowError(f"the alert's pick did nothing after {picks} picks; dunst's menus:\n{menus}")
        return picks

    # -- the end ---------------------------------------------------------------
    def stop(self):
        """The WebDriver session, then the app and its WebKit helpers, then what start() spawned,
        newest first; each by its pid. Returns the pids that would not end."""
        if self.session:
            try:
                self._call("DELETE", f"/session/{self.session}", timeout=10)
            except WindowError:
                pass  # the session may be gone with its window
            self.session = None
        left = []
        for app in self.app_pids:
            helpers = _descendants(app)
            left += end_pids([app])
            left += end_pids(helpers)
        self.app_pids = []
        for p in reversed(self.procs):
            left += end_pids([p.pid])
            try:
                p.wait(timeout=1)
            except subprocess.TimeoutExpired:
                left.append(p.pid)
        self.procs = []
        return left
