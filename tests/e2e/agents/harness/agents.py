"""The real agents, driven interactively in a private tmux server.

ClaudeAgent and CodexAgent share one shape:
  configure()            write the agent's private config (mock endpoint, onboarding, trust)
  start()                launch in tmux; returns the agent's pid (the pane's process)
  wait_ready()           the prompt is up and takes input
  prompt(text)           type a prompt and Enter
  wait_permission()      the approval dialog is on screen (returns time.monotonic() when first seen)
  approve() / escape()   answer it
  wait_turn_done()       the turn has finished on screen
  exit()                 /exit or /quit, and wait for the process to go
  kill9()                SIGKILL the agent process the user sees
Every wait raises tmux.ScreenTimeout with the last screen on failure.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

from .tmux import Tmux, ScreenTimeout
from .world import HERE, end_pids, pid_alive, proc_comm, proc_exe_name, proc_ppid, proc_strings

NM = os.path.join(HERE, "node_modules")


def _find_bin(env_name, candidates):
    if os.environ.get(env_name):
        return os.environ[env_name]
    import glob
    for pat in candidates:
        for c in sorted(glob.glob(os.path.join(NM, pat))):
            if os.access(c, os.X_OK):
                return c
    return None


def claude_bin():
    return _find_bin("CLAUDE_BIN", ["@anthropic-ai/claude-code-linux-*/claude"])


def codex_bin():
    return _find_bin("CODEX_BIN", ["@openai/codex-linux-*/vendor/*/bin/codex"])


class Agent:
    """What every agent's driver shares; a subclass sets the constants below and its own start(),
    configure() and env(), and overrides what its TUI does differently."""
    name = "agent"
    READY = None  # regex: the prompt is up and takes input
    PERMISSION = None  # regex: the permission dialog is on screen
    PERMISSION_TIMEOUT = 30
    # Between the typed text and its Enter: sent together they can read as a paste (and the
    # Enter is lost); the TUIs added in issue 11 want a whole second.
    PROMPT_PAUSE = 0.3
    # Before the first Enter on a permission dialog (some drop keys as the dialog opens), and how
    # long each Enter waits for the dialog to close before the next.
    APPROVE_SETTLE = 0.0
    APPROVE_WAIT = 2.0
    WORKING_TIMEOUT = 30
    EXIT_COMMAND = "/exit"

    def __init__(self, world, mock, cwd=None):
        self.world = world
        self.mock = mock
        self.cwd = cwd or world.proj
        self.tmux = Tmux(f"e2e-{self.name}-{world.id}", world.path("tmux"), self.env())
        self.pid = None
        world.on_cleanup(self.tmux.kill_server)

    def env(self):
        return dict(self.world.env)

    # -- common driving ---------------------------------------------------
    def screen(self):
        return self.tmux.capture()

    def wait_for(self, pattern, timeout=30, **kw):
        return self.tmux.wait_for(pattern, timeout=timeout, **kw)

    def prompt(self, text):
        self._asked = len(self.mock.requests)  # what wait_working() counts from
        self.tmux.send_text(text)
        time.sleep(self.PROMPT_PAUSE)
        self.tmux.send_keys("Enter")

    def wait_permission(self, timeout=None):
        """Waits for the dialog; returns time.monotonic() when it was first seen."""
        self.wait_for(self.PERMISSION, timeout or self.PERMISSION_TIMEOUT, interval=0.05,
                      what=f"{self.name} permission dialog")
        return time.monotonic()

    def approve(self, tries=3, wait=None):
        """Enter on the dialog (its first option, "yes, once", is preselected) until it closes."""
        self.enter_until_gone(self.PERMISSION, tries, wait or self.APPROVE_WAIT, f"{self.name} permission dialog")

    def enter_until_gone(self, pattern, tries, wait, what):
        """Enter, again while `pattern` stays on screen (a dialog that dropped the key), at most
        `tries` times, each waiting `wait` s for it to close."""
        time.sleep(self.APPROVE_SETTLE)
        for attempt in range(tries):
            self.tmux.send_keys("Enter")
            try:
                self.wait_for(pattern, wait, absent=True, interval=0.05, what=f"{what} closed")
                return
            except ScreenTimeout:
                sys.stderr.write(f"[{self.name} approve] {what} still open {wait}s after Enter #{attempt + 1}\n")
                if os.environ.get("AGENT_E2E_DEBUG"):
                    sys.stderr.write(self.screen())
        raise ScreenTimeout(f"{what} still open after {tries} Enters; screen:\n{self.screen()}")

    def wait_working(self, timeout=None):
        """The turn is running: the mock was asked since the last prompt (a screen's spinner text
        changes between versions; the request does not)."""
        timeout = timeout or self.WORKING_TIMEOUT
        deadline = time.monotonic() + timeout
        while len(self.mock.requests) <= getattr(self, "_asked", 0):
            if time.monotonic() > deadline:
                raise ScreenTimeout(f"{self.name} never asked the mock within {timeout}s of the prompt; "
                                    f"screen:\n{self.screen()}")
            time.sleep(0.05)

    def exit(self, timeout=20):
        """The TUI's own exit command, then waits for the process to go."""
        self.prompt(self.EXIT_COMMAND)
        if not self.wait_gone(timeout):
            raise ScreenTimeout(f"{self.name} still running {timeout}s after {self.EXIT_COMMAND}; screen:\n{self.screen()}")

    def escape(self):
        self.tmux.send_keys("Escape")

    def alive(self):
        return self.pid is not None and pid_alive(self.pid)

    def kill9(self):
        os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while pid_alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.02)

    def wait_gone(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return True
            time.sleep(0.1)
        return False

    def _start(self, argv):
        self.tmux.start(argv, self.cwd)
        # A deadline, not a measure: on a loaded machine (the compiling lane beside this suite)
        # exec'ing a 400 MB binary took over 5 s once.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            pid, dead, _ = self.tmux.pane_info()
            # A program that exited at once did start: the next wait reports what it printed.
            # Until the pane's process has exec'd, it is tmux's own fork (its program is tmux, its
            # name tmux's: a CI run read that as the agent), then `sh -c exec …`.
            if pid and (dead or (proc_comm(pid) not in (None, "sh")
                                 and proc_exe_name(pid) not in (None, "tmux"))):
                self.pid = pid
                return pid
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not start in tmux; screen:\n{self.screen()}")


class ClaudeAgent(Agent):
    """`claude --permission-mode default`, talking to an AnthropicMock."""
    name = "claude"
    api_key = "sk-ant-api03-mock-e2e-0123456789abcdefghijklmnopqrstuvwxyz"

    READY = r"\? for shortcuts"
    PERMISSION = r"Do you want to proceed\?"
    # Claude's dialog ignores keys for a moment after it opens: an Enter sent as it appears is
    # dropped (measured: 0.05 s after it showed, always; seen up to 0.5 s on a loaded machine),
    # and the dialog then waits forever. approve() sends Enter again while the dialog stays up;
    # once it has closed no more keys are sent.
    APPROVE_WAIT = 1.5

    def env(self):
        e = dict(self.world.env)
        e.update({
            "ANTHROPIC_BASE_URL": self.mock.base_url,
            "ANTHROPIC_API_KEY": self.api_key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        })
        return e

    def configure(self):
        """$CLAUDE_CONFIG_DIR/.claude.json: onboarding done, the key approved, the folder trusted."""
        p = os.path.join(self.world.claude_config_dir, ".claude.json")
        doc = json.load(open(p)) if os.path.exists(p) else {}
        doc["hasCompletedOnboarding"] = True
        doc.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
        doc["customApiKeyResponses"].setdefault("approved", []).append(self.api_key[-20:])
        doc.setdefault("projects", {}).setdefault(self.cwd, {})["hasTrustDialogAccepted"] = True
        with open(p, "w") as f:
            json.dump(doc, f, indent=2)
        return self

    def start(self, *extra):
        b = claude_bin()
        if not b:
            raise RuntimeError("claude binary not found: run tests/e2e/agents/install.sh")
        return self._start([b, "--permission-mode", "default", *extra])

    def wait_ready(self, timeout=30):
        return self.wait_for(self.READY, timeout, what="claude prompt ready")

    def answer_question(self, tries=3, wait=2.0):
        """Enter on an AskUserQuestion dialog (the first option is preselected) until the turn
        ends ("● done": the mock's reply to the tool result). Like approve(), the dialog may
        drop an Enter sent as it opens. (The question stays in the transcript once answered,
        so its text is no sign of the dialog.)"""
        for attempt in range(tries):
            self.tmux.send_keys("Enter")
            try:
                self.wait_turn_done("done", timeout=wait)
                return
            except ScreenTimeout:
                sys.stderr.write(f"[claude answer] turn not done {wait}s after Enter #{attempt + 1}\n")
        raise ScreenTimeout(f"claude question not answered after {tries} Enters; screen:\n{self.screen()}")

    def wait_sessions_status(self, status, timeout=5.0):
        """Waits until sessions/<pid>.json says `status` (claude writes it some ms after its
        screen changes); returns the file as last read."""
        deadline = time.monotonic() + timeout
        while True:
            sf = self.sessions_file()
            if (sf or {}).get("status") == status or time.monotonic() > deadline:
                return sf
            time.sleep(0.02)

    def wait_working(self, timeout=20):
        """The spinner line ("esc to interrupt") of a running turn."""
        return self.wait_for(r"esc to interrupt", timeout, what="claude turn running")

    def wait_turn_done(self, reply="done", timeout=30):
        return self.wait_for(r"● " + reply + r"\s*$", timeout, what=f"claude reply {reply!r}")

    def sessions_file(self):
        p = os.path.join(self.world.claude_config_dir, "sessions", f"{self.pid}.json")
        try:
            return json.load(open(p))
        except (OSError, ValueError):
            return None


class CodexAgent(Agent):
    """The codex TUI talking to an OpenAIMock. daemon=False adds --no-daemon; by default
    the TUI starts its background `codex app-server`, which outlives it."""
    name = "codex"
    api_key = "sk-mock-codex-e2e"
    EXIT_COMMAND = "/quit"

    READY = r"mock-model .*· "
    APPROVAL = r"Would you like to run the following command\?"
    # Codex 0.171 shows this at start when hooks.json holds hooks not trusted yet
    # ("enter confirm · esc skip"); Esc continues without trusting them.
    HOOK_REVIEW = r"Hooks need review"

    def __init__(self, world, mock, cwd=None, daemon=False):
        super().__init__(world, mock, cwd)
        self.daemon = daemon
        self.hook_reviews_skipped = 0
        self.exits_before_prompt = []  # what wait_ready() saw each time Codex died before its prompt
        # Runs before the world's sweep by env marker: the managed app-server (and its
        # pid-update loop) outlive the TUI, so they are ended by the pids Codex recorded.
        world.on_cleanup(self.kill_app_server)

    def env(self):
        e = dict(self.world.env)
        e["MOCK_OPENAI_KEY"] = self.api_key
        return e

    def configure(self):
        """$CODEX_HOME/config.toml: a custom provider on the mock, the project trusted."""
        p = os.path.join(self.world.codex_home, "config.toml")
        head = ('model = "mock-model"\n'
                'model_provider = "mock"\n'
                'approval_policy = "on-request"\n'
                'check_for_update_on_startup = false\n')
        body = (f'\n[model_providers.mock]\nname = "mock"\nbase_url = "{self.mock.base_url}/v1"\n'
                'wire_api = "responses"\nenv_key = "MOCK_OPENAI_KEY"\n'
                'request_max_retries = 0\nstream_max_retries = 0\n'
                f'\n[projects."{self.cwd}"]\ntrust_level = "trusted"\n')
        old = open(p).read() if os.path.exists(p) else ""
        with open(p, "w") as f:
            f.write(head + old + body)
        return self

    def start(self, *extra):
        b = codex_bin()
        if not b:
            raise RuntimeError("codex binary not found: run tests/e2e/agents/install.sh")
        argv = [b]
        if not self.daemon:
            argv.append("--no-daemon")
        self._extra = list(extra)
        return self._start(argv + self._extra)

    def wait_for(self, pattern, timeout=30, **kw):
        try:
            return super().wait_for(pattern, timeout, **kw)
        except ScreenTimeout as e:
            raise ScreenTimeout(f"{e}\n{self.own_logs()}") from None

    def own_logs(self, lines=15):
        """The ends of the logs Codex keeps in this world (its managed app-server's stderr): what
        a failure message needs when the TUI died of an error from the server."""
        out = []
        for d in ("app-server-daemon", "log"):
            folder = os.path.join(self.world.codex_home, d)
            for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
                if name.endswith(".log"):
                    with open(os.path.join(folder, name), errors="replace") as f:
                        tail = f.read().splitlines()[-lines:]
                    out.append(f"--- {d}/{name} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(out) or "(codex wrote no log in this world)"

    def wait_ready(self, timeout=40, restarts=1):
        """The prompt with its model line; a hook-review screen on the way is skipped (Esc).

        Codex in its default mode first installs and starts its own app-server (a 400 MB copy
        into CODEX_HOME); in one CI run the TUI exited with an error during that start,
        which is Codex's and not what any test here looks at. Such an exit before the prompt
        is printed in full and Codex is started once more; a second one fails the test."""
        deadline = time.monotonic() + timeout
        flake_restart_used = False
        while True:
            try:
                screen = self.wait_for(f"{self.READY}|{self.HOOK_REVIEW}", max(1, deadline - time.monotonic()),
                                       what="codex prompt ready (model line) or its hook-review screen")
            except ScreenTimeout as e:
                # Codex 0.171 sometimes dies at start on a loaded machine with "timed out
                # discarding buffered terminal input" (its own TUI, twice in a row in one CI
                # run): that one known error gets one more start than any other exit.
                terminal_flake = "discarding buffered terminal input" in str(e)
                if terminal_flake and not flake_restart_used and self.tmux.is_dead():
                    flake_restart_used = True
                    restarts += 1
                if restarts < 1 or not self.tmux.is_dead():
                    raise
                restarts -= 1
                self.exits_before_prompt.append(str(e))
                sys.stderr.write(f"[codex] exited before its prompt; starting it once more. {e}\n")
                self.kill_app_server()
                self.tmux.kill_server()
                self.start(*getattr(self, "_extra", []))
                deadline = time.monotonic() + timeout
                continue
            if not re.search(self.HOOK_REVIEW, screen):
                return screen
            self.skip_hook_review()

    def skip_hook_review(self):
        """Esc on the hook-review screen, until it has closed."""
        for _ in range(5):
            self.tmux.send_keys("Escape")
            try:
                self.wait_for(self.HOOK_REVIEW, 2, absent=True, what="codex hook review closed")
                self.hook_reviews_skipped += 1
                return
            except ScreenTimeout:
                continue
        raise ScreenTimeout(f"codex hook-review screen stayed open after 5 Esc; screen:\n{self.screen()}")

    def prompt(self, text, tries=3):
        """Types `text` and Enter. The review can also come up a moment after the prompt showed
        (then it takes the Enter, and the text stays in the composer): skip it and press Enter
        again while the composer, the last `› ` line, still holds the text."""
        if re.search(self.HOOK_REVIEW, self.screen()):
            self.skip_hook_review()
        super().prompt(text)

        def still_typed(screen):
            lines = [ln.rstrip() for ln in screen.splitlines() if ln.startswith("› ")]
            return bool(lines) and lines[-1] == "› " + text

        for attempt in range(tries):
            try:
                self.wait_for(lambda s: not still_typed(s), 2, interval=0.1, what="codex composer sent")
                return
            except ScreenTimeout:
                sys.stderr.write(f"[codex prompt] {text!r} still in the composer after Enter #{attempt + 1}\n")
                if re.search(self.HOOK_REVIEW, self.screen()):
                    self.skip_hook_review()
                self.tmux.send_keys("Enter")

    def wait_permission(self, timeout=30):
        self.wait_for(self.APPROVAL, timeout, interval=0.05, what="codex approval prompt")
        return time.monotonic()

    def approve(self):
        self.tmux.send_keys("y")

    def wait_working(self, timeout=20):
        return self.wait_for(r"esc to interrupt", timeout, what="codex turn running")

    def wait_interrupted(self, timeout=20):
        return self.wait_for(r"Conversation interrupted", timeout, what="codex turn interrupted")

    def wait_turn_done(self, reply="ok", timeout=30):
        return self.wait_for(r"^• " + reply + r"\s*$", timeout, what=f"codex reply {reply!r}")

    def daemon_pids(self):
        """The pids Codex wrote for its managed app-server and its updater (JSON `{"pid": N}`)."""
        out = []
        for name in ("daemon.pid", "daemon-updater.pid"):
            try:
                pid = json.load(open(os.path.join(self.world.codex_home, "app-server-daemon", name)))["pid"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(pid, int) and pid > 1:
                out.append(pid)
        return out

    def kill_app_server(self, grace=1.0):
        """Ends the app-server daemon this world's Codex started, by the pids it recorded and the
        `app-server` processes of this world; returns the pids that were alive."""
        pids = [p for p in set(self.daemon_pids()) | {p for p, _ in self.app_servers()} if pid_alive(p)]
        end_pids(pids, grace, kill_wait=grace)
        return pids

    def app_servers(self):
        """pids of this world's `codex app-server` processes (default mode)."""
        out = []
        for p in self.world.processes():
            cmd = proc_strings(p, "cmdline")
            if len(cmd) > 1 and cmd[1] == b"app-server" and pid_alive(p):
                out.append((p, [c.decode(errors="replace") for c in cmd if c]))
        return out

    def rollouts(self):
        import glob
        return sorted(glob.glob(os.path.join(self.world.codex_home, "sessions", "*", "*", "*", "rollout-*.jsonl")))


def ancestry(pid, depth=8):
    out = []
    while pid and pid > 1 and len(out) < depth:
        out.append((pid, proc_comm(pid)))
        pid = proc_ppid(pid)
    return out
