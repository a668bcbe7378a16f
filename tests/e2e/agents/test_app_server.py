"""Issue 10, item 1: Codex through its managed app-server (the default since 0.171), with no
hooks installed: what no file says (an approval wait) comes from the server's control socket,
and the TUI's death ends its session at once although the server keeps the thread's lock."""
import os
import time

from e2e_base import ScenarioTest, POLL
from test_harness import flock_holder


class CodexAppServer(ScenarioTest):
    def _ready_with_one_turn(self):
        """Starts the TUI (default mode: it starts the app-server) and runs one plain turn, so
        the thread has its rollout and the session is listed with the TUI's pid."""
        a = self.setup_codex(hooks=False, app_server=True)
        a.start()
        a.wait_ready()
        t = self.since()
        a.prompt("hello")
        a.wait_turn_done("ok")
        self.wait_state("idle", 10, since=t, what="idle after a first plain turn")
        self.assertTrue(a.daemon_pids(), "default mode: expected Codex to record its app-server's pid")
        return a

    def test_codex_approval_wait_seen_with_no_hooks_through_the_app_server(self):
        """The rollout never records an approval wait; the app-server says waitingOnApproval:
        waiting_for_permission within 1 s of the prompt on screen, on the TUI's pid."""
        a = self._ready_with_one_turn()
        t_prompt = self.since()
        a.prompt("SLEEP 1 TOOL touch x_file")
        t_dialog = a.wait_permission()
        t_wfp, s = self.wait_state("waiting_for_permission", 5, since=t_prompt,
                                   what="waiting_for_permission with no hooks (app-server thread/status/changed)")
        self.assert_within(t_wfp, t_dialog, 1.0, "waiting_for_permission", "approval prompt")
        self.assert_pid_is_agent()
        servers = set(a.daemon_pids())
        self.assertNotIn(self.the_session().get("pid"), servers, "the session was bound to the app-server's pid")
        t_esc = self.since()
        a.escape()
        a.wait_interrupted()
        self.wait_state("idle", 5, since=t_esc, what="idle after Esc at the approval prompt")

    def test_codex_tui_kill_ends_its_session_within_a_second_while_the_server_keeps_the_lock(self):
        a = self._ready_with_one_turn()
        # The TUI's pid comes from the rollout feed (the lock's holder), a moment after the turn.
        _, s = self.tl.wait(a.name, a.cwd, lambda s: s.get("pid") == a.pid,
                            f"listed with the TUI's pid {a.pid}", 10)
        lock = os.path.join(self.world.codex_home, "thread-writer-locks", s["session_id"] + ".lock")
        # The claim is about a connected feed: the rollout can list the session (and its pid) before
        # the feed's reconnect backoff (up to 2 s) has reached the server. Killing before that
        # measured the backoff, not the kill (one CI run: 1.19 s).
        deadline = time.monotonic() + 10
        while "codex_app_server_connected" not in self.tray.daemon_log(tail=10**7):
            self.assertLess(time.monotonic(), deadline, "the app-server feed never connected; daemon log:\n"
                            + self.tray.daemon_log())
            time.sleep(0.05)
        t_kill = self.since()
        a.kill9()
        t_end, _ = self.wait_state("ended", 5, since=t_kill, what=f"ended after kill -9 of the TUI (pid {a.pid})")
        self.assertLessEqual(t_end - t_kill, 1.0 + POLL,
                             f"ended {t_end - t_kill:.2f}s after the kill; expected within 1 s\n"
                             + self.tl.describe(self.agent.name, self.agent.cwd))
        holder = flock_holder(lock)
        self.assertIn(holder, set(a.daemon_pids()) | {p for p, _ in a.app_servers()},
                      f"expected the app-server to still hold the thread's lock when the session ended; holder {holder}")


class DoctorWithRealAgents(ScenarioTest):
    """`doctor` against the configs `install` wrote for the real agents, after a real Codex turn
    delivered hooks: it fails with the right line when the hook binary moved, and when the
    engine cannot be reached (tests/doctor_delivery.rs has the synthetic versions)."""

    def test_doctor_names_a_moved_hook_binary_and_an_unreachable_engine(self):
        import shutil
        from harness.agents import claude_bin, codex_bin
        for name, b in (("claude", claude_bin()), ("codex", codex_bin())):
            os.symlink(b, os.path.join(self.world.bin, name))
        old = self.world.path("old-bin")
        os.makedirs(old)
        copy = os.path.join(old, "agent-tray")
        shutil.copy2(self.tray.bin, copy)
        real = self.tray.bin
        self.tray.bin = copy
        self.tray.install("--claude")
        self.tray.install("--codex", "--trust")
        self.tray.bin = real
        a = self.codex(daemon=True)
        self.agent = a
        self.tray.start_daemon()
        self.tl = self.timeline()
        a.start()
        a.wait_ready()
        t = self.since()
        a.prompt("hello")
        a.wait_turn_done("ok")
        self.wait_state("idle", 10, since=t, what="idle after a turn whose hooks ran the copied agent-tray")
        # Positive control: the agent-tray the hooks run finds nothing wrong.
        self.tray.bin = copy
        r = self.tray.run("doctor", check=False)
        self.tray.bin = real
        self.assertEqual(r.returncode, 0, f"doctor failed with every hook in place:\n{r.stdout}{r.stderr}")
        os.remove(copy)
        r = self.tray.run("doctor", check=False)
        text = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, f"doctor passed with the hook binary gone:\n{text}")
        for line in ("✗ Claude Code hook binary moved", "✗ Codex hook binary moved"):
            self.assertTrue(any(l.startswith(line) and copy in l for l in text.splitlines()),
                            f"no line starting {line!r} naming {copy}:\n{text}")
        self.tray.install("--claude")
        self.tray.install("--codex", "--trust")
        self.tray.stop_daemon()
        r = self.tray.run("doctor", check=False)
        text = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, f"doctor passed with no engine:\n{text}")
        self.assertTrue(any(l.startswith("✗ Agent Tray's engine cannot be reached") for l in text.splitlines()),
                        f"no engine line:\n{text}")
