"""A private tmux server per test: start a program in a pane, type, read the screen."""
import os
import re
import shlex
import subprocess
import time


class ScreenTimeout(AssertionError):
    pass


class Tmux:
    """`tmux -L <socket>` with its socket dir under the test's world (TMUX_TMPDIR)."""

    def __init__(self, socket_name, tmpdir, env, width=160, height=50):
        self.socket = socket_name
        self.tmpdir = tmpdir
        os.makedirs(tmpdir, mode=0o700, exist_ok=True)
        # The server inherits the environment of the client that starts it, and the
        # panes inherit the server's: so every tmux call runs in the test's env.
        self.env = dict(env, TMUX_TMPDIR=tmpdir)
        self.env.pop("TMUX", None)
        self.env.pop("TMUX_PANE", None)
        self.width, self.height = width, height
        self.started = False
        self.target = "main:0.0"
        # The server's own configuration, read as it starts, so it holds before the first pane
        # runs: remain-on-exit set after new-session came too late for a program that exited at
        # once (a Codex given a flag it does not know): its session, and the server, were gone
        # before the option, and the harness saw no pane at all (a CI run).
        self.conf = os.path.join(tmpdir, "tmux.conf")
        with open(self.conf, "w") as f:
            f.write("set-option -g remain-on-exit on\nset-option -g history-limit 5000\n")

    def cmd(self, *args, check=True, timeout=10):
        r = subprocess.run(["tmux", "-L", self.socket, "-f", self.conf, *args], env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return r.stdout

    def start(self, argv, cwd):
        """Runs argv (exec'd directly, no shell) in a new detached session."""
        # remain-on-exit (the server's configuration, above) keeps a dead pane so its exit
        # status can be read.
        self.cmd("new-session", "-d", "-s", "main", "-x", str(self.width), "-y", str(self.height),
                 "-c", cwd, "sh", "-c", "exec " + " ".join(shlex.quote(a) for a in argv))
        self.started = True

    def pane_info(self):
        out = self.cmd("display-message", "-p", "-t", self.target,
                       "#{pane_pid} #{pane_dead} #{pane_dead_status}", check=False).split()
        if not out:
            return None, True, None
        pid = int(out[0]) if out[0].isdigit() else None
        dead = len(out) > 1 and out[1] == "1"
        status = int(out[2]) if len(out) > 2 and out[2].lstrip("-").isdigit() else None
        return pid, dead, status

    def pane_pid(self):
        return self.pane_info()[0]

    def is_dead(self):
        return self.pane_info()[1]

    def capture(self, history=False):
        args = ["capture-pane", "-p", "-t", self.target]
        if history:
            args += ["-S", "-"]
        return self.cmd(*args, check=False)

    def send_keys(self, *keys):
        """tmux key names, e.g. "Enter", "Escape", "Down", "C-c"."""
        self.cmd("send-keys", "-t", self.target, *keys)

    def send_text(self, text):
        """Types literal text (no Enter)."""
        self.cmd("send-keys", "-t", self.target, "-l", text)

    def wait_for(self, pattern, timeout=30.0, interval=0.1, absent=False, what=None):
        """Waits until the screen matches `pattern` (regex, or a callable on the text).

        With absent=True, waits until it no longer matches. Returns the screen.
        On timeout raises ScreenTimeout carrying the last screen.
        """
        if callable(pattern):
            test = pattern
        else:
            rx = re.compile(pattern, re.M)
            test = lambda s: rx.search(s) is not None
        deadline = time.monotonic() + timeout
        screen = ""
        while True:
            screen = self.capture()
            if bool(test(screen)) != absent:
                return screen
            dead = self.is_dead()
            if dead or time.monotonic() > deadline:
                if dead:
                    # The program exited (its last output may have come after the capture
                    # above): one last look, then the whole history, since what it printed
                    # may have scrolled off the screen.
                    screen = self.capture()
                    if bool(test(screen)) != absent:
                        return screen
                    screen = self.capture(history=True)
                raise ScreenTimeout(
                    f"{'the program exited, and ' if dead else ''}"
                    f"screen did not {'lose' if absent else 'show'} {what or pattern!r} within {timeout:.0f}s; "
                    f"last screen:\n{screen.rstrip()}\n--- end of screen")
            time.sleep(interval)

    def wait_dead(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_dead():
                return True
            time.sleep(0.1)
        return False

    def kill_server(self):
        if self.started:
            self.cmd("kill-server", check=False)
            self.started = False
