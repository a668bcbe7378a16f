"""A private world per test: temp HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, AGENT_TRAY_HOME,
XDG_RUNTIME_DIR, a project dir; and the cleanup that kills every process started in it.

The real user's ~/.claude, ~/.claude.json and ~/.codex are never touched: HOME itself
is private. Worlds live under /var/tmp (Codex refuses to create its sandbox helper
links when CODEX_HOME is under /tmp).
"""
import os
import shutil
import signal
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/e2e/agents
BASE = os.environ.get("AGENT_E2E_BASE", "/var/tmp/agent-tray-e2e")
MARKER = "AGENT_E2E_WORLD"
RUN_MARKER = "AGENT_E2E_RUN"  # set by runner.py: one id for every world of a run


def proc_strings(pid, name):
    """/proc/<pid>/<name> (environ, cmdline) as its NUL-separated byte strings; [] once gone."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def pids_with_marker(value, marker=MARKER):
    """Every live process whose environment carries marker=value (and their kin:
    anything started under the world inherits it, e.g. codex's app-server)."""
    needle = f"{marker}={value}".encode()
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != me and needle in proc_strings(d, "environ"):
            out.append(int(d))
    return out


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def proc_exe_name(pid):
    """The base name of the program a process runs (None once it is gone)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return None


def proc_stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name (state first), or None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        return s[s.rindex(")") + 2:].split()
    except (OSError, ValueError):
        return None


def proc_ppid(pid):
    fields = proc_stat_fields(pid)
    try:
        return int(fields[1]) if fields else None
    except (ValueError, IndexError):
        return None


def pid_alive(pid):
    fields = proc_stat_fields(pid)
    return bool(fields) and fields[0] != "Z"


def describe_processes(pids):
    """Each pid's arguments, state, kernel wait channel and age, for a failure's message."""
    out = []
    try:
        uptime = float(open("/proc/uptime").read().split()[0])
    except OSError:
        uptime = 0.0
    for pid in pids:
        fields = proc_stat_fields(pid)
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            wchan = open(f"/proc/{pid}/wchan").read()
        except OSError:
            fields = None
        if not fields:
            out.append(f"{pid}: gone")
            continue
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
        out.append(f"{pid}: {b' '.join(argv[:6]).decode(errors='replace')} state={fields[0]} "
                   f"wchan={wchan} age={age:.1f}s")
    return "; ".join(out)


def end_pids(pids, grace=3.0, kill_wait=3.0):
    """SIGTERM, then SIGKILL after `grace` s, to each pid; waits up to `kill_wait` s more and
    returns those still alive then."""
    pids = [p for p in pids if p and pid_alive(p)]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, kill_wait)):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
            time.sleep(0.05)
    return [p for p in pids if pid_alive(p)]


class World:
    def __init__(self, name="t", keep=None):
        os.makedirs(BASE, exist_ok=True)
        self.id = uuid.uuid4().hex[:8]
        self.root = tempfile.mkdtemp(prefix=f"{name[:12]}-", dir=BASE)
        # AGENT_E2E_KEEP=1 keeps every world, =failed only those of failed tests.
        self.keep = keep if keep is not None else os.environ.get("AGENT_E2E_KEEP") == "1"
        d = lambda *p: self._mkdir(os.path.join(self.root, *p))
        self.home = d("home")
        self.claude_config_dir = d("claude")
        self.codex_home = d("codex")
        self.tray_home = d("tray")
        self.runtime_dir = d("run")
        os.chmod(self.runtime_dir, 0o700)
        self.proj = d("proj")
        self.logs = d("logs")
        self.bin = d("bin")
        self._cleanups = []
        self.env = {
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": self.home,
            "USER": os.environ.get("USER", "root"),
            "LOGNAME": os.environ.get("LOGNAME", "root"),
            "SHELL": "/bin/bash",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "xterm-256color",
            "TZ": "UTC",
            "NO_COLOR": "1",
            "XDG_RUNTIME_DIR": self.runtime_dir,
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "CLAUDE_CONFIG_DIR": self.claude_config_dir,
            "CODEX_HOME": self.codex_home,
            "AGENT_TRAY_HOME": self.tray_home,
            MARKER: self.id,
        }
        if os.environ.get(RUN_MARKER):
            self.env[RUN_MARKER] = os.environ[RUN_MARKER]
        for k in ("SSL_CERT_FILE", "SSL_CERT_DIR", "RUST_BACKTRACE"):
            if k in os.environ:
                self.env[k] = os.environ[k]

    @staticmethod
    def _mkdir(p):
        os.makedirs(p, exist_ok=True)
        return p

    def path(self, *p):
        return os.path.join(self.root, *p)

    def on_cleanup(self, fn):
        self._cleanups.append(fn)

    def processes(self):
        return pids_with_marker(self.id)

    def kill_all(self, grace=1.0):
        """SIGTERM then SIGKILL every process that carries this world's marker."""
        pids = self.processes()
        for p in pids:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
            time.sleep(0.05)
        for p in self.processes():
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(pid_alive(p) for p in self.processes()):
            time.sleep(0.05)
        return pids

    def cleanup(self):
        errors = []
        while self._cleanups:
            fn = self._cleanups.pop()
            try:
                fn()
            except Exception as e:  # keep cleaning
                errors.append(repr(e))
        self.kill_all()
        if not self.keep:
            for _ in range(3):
                shutil.rmtree(self.root, ignore_errors=True)
                if not os.path.exists(self.root):
                    break
                self.kill_all()  # something still writes there
                time.sleep(0.5)
            else:
                errors.append(f"could not remove {self.root}")
        return errors

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()


def sweep_run(run_id):
    """Last resort at the end of a run: SIGKILL whatever still carries this run's marker."""
    left = [(p, proc_comm(p)) for p in pids_with_marker(run_id, RUN_MARKER) if pid_alive(p)]
    for p, _ in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left
