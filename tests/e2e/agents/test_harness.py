"""The harness itself, without Agent Tray: the real agents reach every state on screen,
and a trivial recording hook sees the hook events the fixtures show."""
import json
import os
import time

from e2e_base import E2ETest
from harness.recorder import Recorder, install_claude_recording_hooks, install_codex_recording_hooks
from harness.agents import ancestry
from harness.world import pid_alive


def flock_holder(path):
    """pid holding a flock on path, from /proc/locks (None if free)."""
    try:
        ino = os.stat(path).st_ino
    except OSError:
        return None
    for line in open("/proc/locks"):
        f = line.split()
        if len(f) >= 6 and f[1] == "FLOCK" and f[5].split(":")[-1] == str(ino):
            return int(f[4])
    return None


def subseq(needle, hay):
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


class HarnessClaude(E2ETest):
    def test_claude_permission_flow_with_recording_hook(self):
        rec = Recorder(self.world)
        install_claude_recording_hooks(self.world, rec)
        a = self.claude()
        a.start()
        self.assertEqual(os.path.basename(os.readlink(f"/proc/{a.pid}/exe")), "claude")
        a.wait_ready()
        # The file follows the screen by some ms (measured: busy ~40 ms after the spinner): poll.
        sf = a.wait_sessions_status("idle")
        self.assertIsNotNone(sf, "sessions/<pid>.json not written after start")
        self.assertEqual(sf.get("status"), "idle", sf)
        a.prompt("SLEEP 2 TOOL touch made-by-tool && sleep 1")
        a.wait_working()
        sf = a.wait_sessions_status("busy", timeout=1.5)  # the mock holds the reply 2 s
        self.assertEqual((sf or {}).get("status"), "busy", sf)
        a.wait_permission()
        sf = a.wait_sessions_status("waiting")
        self.assertEqual((sf or {}).get("status"), "waiting", sf)
        a.approve()
        a.wait_turn_done("done")
        self.assertTrue(os.path.exists(os.path.join(a.cwd, "made-by-tool")), "the approved command did not run")
        sf = a.wait_sessions_status("idle")
        self.assertEqual((sf or {}).get("status"), "idle", sf)
        a.exit()
        self.assertIsNone(a.sessions_file(), "sessions file left after a clean /exit")
        deadline = time.monotonic() + 5
        while "SessionEnd" not in rec.events() and time.monotonic() < deadline:
            time.sleep(0.1)
        ev = rec.events()
        want = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "SessionEnd"]
        self.assertTrue(subseq(want, ev), f"hook events {ev} lack {want} in order")
        recs = rec.records()
        # A command hook runs under `sh -c`: parent sh, grandparent claude (the fixture's chain).
        chain = [c for _, c in recs[0]["ancestry"][:2]]
        self.assertEqual(chain, ["sh", "claude"], recs[0]["ancestry"])
        self.assertEqual(recs[0]["ancestry"][1][0], a.pid)
        end = [r for r in recs if (r["payload"] or {}).get("hook_event_name") == "SessionEnd"][0]
        self.assertEqual(end["payload"].get("reason"), "prompt_input_exit")
        # The hook sees the world's env (agent-tray's hook needs AGENT_TRAY_HOME to find its journal).
        self.assertEqual(recs[0]["env"].get("AGENT_TRAY_HOME"), self.world.tray_home)
        paths = set(a.mock.paths())
        self.assertEqual(paths, {"POST /v1/messages?beta=true"}, f"claude asked the mock for {paths}")

    def test_claude_kill9_leaves_sessions_file_and_no_session_end(self):
        rec = Recorder(self.world)
        install_claude_recording_hooks(self.world, rec)
        a = self.claude()
        a.start()
        a.wait_ready()
        a.prompt("SLEEP 30")
        a.wait_working()
        a.kill9()
        self.assertFalse(pid_alive(a.pid))
        time.sleep(1.5)
        self.assertIsNotNone(a.sessions_file(), "claude's sessions file is expected to stay after kill -9")
        self.assertNotIn("SessionEnd", rec.events())


class HarnessCodex(E2ETest):
    def _flow(self, daemon):
        rec = Recorder(self.world)
        a = self.codex(daemon=daemon)
        install_codex_recording_hooks(self.world, rec)
        self.tui_pid = a.start()
        self.assertEqual(os.path.basename(os.readlink(f"/proc/{a.pid}/exe")), "codex")
        a.wait_ready()
        a.prompt("say hi")
        a.wait_turn_done("ok")
        a.prompt("SLEEP 2 TOOL touch x_file")
        a.wait_working()
        a.wait_permission()
        servers = a.app_servers()
        if daemon:
            self.assertTrue(servers, "default mode: expected a background `codex app-server`")
        else:
            self.assertFalse(servers, f"--no-daemon: unexpected app-server {servers}")
        a.escape()
        a.wait_interrupted()
        self.assertFalse(os.path.exists(os.path.join(a.cwd, "x_file")), "Esc should have refused the command")
        deadline = time.monotonic() + 5
        while "Interrupt" not in rec.events() and time.monotonic() < deadline:
            time.sleep(0.1)
        a.exit()
        if not daemon:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and "SessionEnd" not in rec.events():
                time.sleep(0.1)
        ev = rec.events()
        want = ["SessionStart", "UserPromptSubmit", "Stop", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Interrupt"]
        self.assertTrue(subseq(want, [e for e in ev if not e.startswith("notify:")]), f"hook events {ev} lack {want} in order")
        self.assertIn("notify:agent-turn-complete", ev)
        hooks = [r for r in rec.records() if r["label"] != "NOTIFY"]
        parent_pid, parent_comm = hooks[0]["ancestry"][0]
        self.assertEqual(parent_comm, "codex")
        self.assertEqual(hooks[0]["env"].get("AGENT_TRAY_HOME"), self.world.tray_home)
        rollouts = a.rollouts()
        self.assertTrue(rollouts, "no rollout written")
        types = []
        for r in rollouts:
            for line in open(r):
                try:
                    p = json.loads(line).get("payload", {})
                except ValueError:
                    continue
                if isinstance(p, dict) and p.get("type") in ("task_started", "task_complete", "turn_aborted"):
                    types.append(p["type"])
        self.assertTrue(subseq(["task_started", "task_complete", "task_started", "turn_aborted"], types), types)
        return rec, ev, hooks, parent_pid, servers

    def test_codex_no_daemon_flow_with_recording_hook(self):
        rec, ev, hooks, parent_pid, _ = self._flow(daemon=False)
        self.assertIn("SessionEnd", ev, f"--no-daemon /quit should fire SessionEnd; saw {ev}")
        self.assertTrue(all(h["ancestry"][0][1] == "codex" for h in hooks))

    def test_codex_default_mode_flow_with_recording_hook(self):
        rec, ev, hooks, parent_pid, servers = self._flow(daemon=True)
        # Hooks run from the app-server, whose parent is the TUI (while the TUI lives).
        server_pids = {p for p, _ in servers}
        self.assertIn(parent_pid, server_pids, f"hook parent {parent_pid} is not an app-server {servers}")
        self.assertEqual(hooks[0]["ancestry"][1][0], self.tui_pid, hooks[0]["ancestry"])
        # The app-server outlives the TUI, and still holds the thread's writer lock after /quit.
        alive = [p for p in server_pids if pid_alive(p)]
        self.assertTrue(alive, "default mode: the app-server was expected to outlive the TUI")
        sid = hooks[0]["payload"]["session_id"]
        holder = flock_holder(os.path.join(self.world.codex_home, "thread-writer-locks", sid + ".lock"))
        self.assertIn(holder, server_pids, f"after /quit the thread lock is held by {holder}, not the app-server")

    def test_codex_default_mode_kill9_leaves_app_server_holding_the_lock(self):
        rec = Recorder(self.world)
        a = self.codex(daemon=True)
        install_codex_recording_hooks(self.world, rec)
        a.start()
        a.wait_ready()
        a.prompt("SLEEP 30")
        a.wait_working()
        deadline = time.monotonic() + 10
        while "UserPromptSubmit" not in rec.events() and time.monotonic() < deadline:
            time.sleep(0.1)
        sid = next((r["payload"]["session_id"] for r in rec.records() if isinstance(r["payload"], dict)), None)
        self.assertIsNotNone(sid, f"no hook recorded mid-turn: {rec.events()}")
        lock = os.path.join(self.world.codex_home, "thread-writer-locks", sid + ".lock")
        self.assertIsNotNone(flock_holder(lock), "thread lock not held mid-turn")
        a.kill9()
        time.sleep(1.5)
        servers = {p for p, _ in a.app_servers()}
        self.assertTrue(servers, "the app-server died with the TUI")
        self.assertIn(flock_holder(lock), servers, "after kill -9 of the TUI the app-server should still hold the lock")
        self.assertNotIn("SessionEnd", rec.events())

    def test_codex_exiting_before_its_prompt_is_shown_in_full_and_started_once_more(self):
        """wait_ready() starts a Codex that died before its prompt once more, and keeps what it
        printed (all of it, not only the last screen); here the first start has a flag Codex
        does not know."""
        a = self.codex(daemon=False)
        a.start("--no-such-flag")
        a._extra = []
        a.wait_ready()
        self.assertEqual(len(a.exits_before_prompt), 1, a.exits_before_prompt)
        self.assertIn("the program exited", a.exits_before_prompt[0])
        self.assertIn("--no-such-flag", a.exits_before_prompt[0])
        a.exit()

    def test_codex_hook_review_screen_is_skipped_and_the_app_server_killed_by_pid(self):
        """Codex 0.171 stops at "Hooks need review" when hooks.json holds untrusted hooks, and
        its managed app-server outlives the TUI: the harness gets past the one and ends the
        other by the pids in app-server-daemon/*.pid, leaving nothing of this world running."""
        a = self.codex(daemon=True)
        with open(os.path.join(self.world.codex_home, "hooks.json"), "w") as f:
            json.dump({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/true"}]}]}}, f)
        a.start()
        a.wait_ready()
        a.prompt("hello")
        a.wait_turn_done("ok")
        self.assertGreaterEqual(a.hook_reviews_skipped, 1, "the hook-review screen never showed (untrusted hook)")
        pids = a.daemon_pids()
        self.assertTrue(pids and all(pid_alive(p) for p in pids),
                        f"expected the managed app-server's recorded pids to be alive, got {pids}")
        a.exit()
        self.assertTrue(any(pid_alive(p) for p in pids), "the app-server did not outlive the TUI")
        killed = a.kill_app_server()
        self.assertEqual(set(killed) & set(pids), set(pids))
        self.assertFalse([p for p in pids if pid_alive(p)], "app-server still alive after kill_app_server")
        a.tmux.kill_server()
        time.sleep(0.3)
        left = [p for p in self.world.processes() if pid_alive(p)]
        self.assertFalse(left, f"processes of this world still running: {[(p, ancestry(p)) for p in left]}")
