#!/usr/bin/env python3
"""Codex's server route (issue 39), our part of an answer: from `agent-tray answer` being started
to the reply frame reaching Codex's background server.

A stand-in for Codex's managed app-server (a WebSocket over the unix socket
$CODEX_HOME/app-server-control/app-server-control.sock, its pid in
app-server-daemon/daemon.pid, as 0.171 keeps them) serves one thread and asks it
`item/tool/requestUserInput` again and again; `agent-tray daemon`'s app-server feed lists each
question, and the time from starting `agent-tray answer ID --choice Red` to the server receiving
the reply frame is taken. Whole processes, as a user's CLI call is. Everything runs in a temp
home; nothing of the user's is touched.

Usage: benches/codex_server_answer.py [path/to/agent-tray]   (default target/release/agent-tray)
RUNS=N sets the answers (default 100). Prints p50/p90/p99 in ms.
"""
import base64
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
THREAD = "01a248a8-0000-7000-8000-00000000beef"


def frame(obj):
    data = json.dumps(obj).encode()
    n = len(data)
    head = bytes([0x81]) + (bytes([n]) if n < 126 else
                            bytes([126]) + struct.pack(">H", n) if n < 65536 else
                            bytes([127]) + struct.pack(">Q", n))
    return head + data


def read_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def read_frame(conn):
    b0, b1 = read_exact(conn, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack(">H", read_exact(conn, 2))[0]
    elif n == 127:
        n = struct.unpack(">Q", read_exact(conn, 8))[0]
    mask = read_exact(conn, 4) if b1 & 0x80 else b"\0\0\0\0"
    data = bytes(b ^ mask[i % 4] for i, b in enumerate(read_exact(conn, n)))
    return b0 & 0x0F, data


class FakeServer:
    def __init__(self, codex_home, cwd):
        self.cwd = cwd
        self.replies = {}  # request id -> monotonic time the reply arrived
        self.lock = threading.Lock()
        self.conn = None
        self.subscribed = threading.Event()
        control = os.path.join(codex_home, "app-server-control")
        daemon = os.path.join(codex_home, "app-server-daemon")
        os.makedirs(control, mode=0o700)
        os.makedirs(daemon, mode=0o700)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(os.path.join(control, "app-server-control.sock"))
        self.sock.listen(4)
        with open(os.path.join(daemon, "daemon.pid"), "w") as f:
            json.dump({"pid": os.getpid()}, f)
        threading.Thread(target=self.accept, daemon=True).start()

    def send(self, obj):
        with self.lock:
            self.conn.sendall(frame(obj))

    def accept(self):
        while True:
            conn, _ = self.sock.accept()
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")][0]
            accept = base64.b64encode(hashlib.sha1(key + GUID.encode()).digest())
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            self.conn = conn
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        try:
            while True:
                op, data = read_frame(conn)
                if op == 8:
                    return
                if op != 1:
                    continue
                m = json.loads(data)
                method = m.get("method")
                if method == "initialize":
                    self.send({"id": m["id"], "result": {"userAgent": "fake"}})
                elif method == "thread/loaded/list":
                    self.send({"id": m["id"], "result": {"data": []}})
                    self.send({"method": "thread/started", "params": {"thread": {
                        "id": THREAD, "cwd": self.cwd, "ephemeral": False, "parentThreadId": None}}})
                    self.send({"method": "thread/status/changed", "params": {"threadId": THREAD, "status": {
                        "type": "active", "activeFlags": ["waitingOnUserInput"]}}})
                elif method == "thread/resume":
                    self.send({"id": m["id"], "result": {"thread": {"id": THREAD, "cwd": self.cwd, "ephemeral": False}}})
                    self.subscribed.set()
                elif method is None and "id" in m:
                    self.replies[m["id"]] = time.monotonic()
        except (ConnectionError, OSError):
            return

    def ask(self, k):
        self.send({"id": k, "method": "item/tool/requestUserInput", "params": {
            "threadId": THREAD, "turnId": "turn-1", "itemId": f"call_{k}", "isBlocking": True,
            "questions": [{"id": "colour", "header": "Colour", "question": "Which colour?", "isOther": False,
                           "isSecret": False, "options": [{"label": "Red", "description": "warm"},
                                                          {"label": "Blue", "description": "cool"}]}]}})


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "release", "agent-tray")
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} not found: build it (cargo build --release -p agent-tray) or pass its path")
    runs = int(os.environ.get("RUNS", "100"))
    tmp = tempfile.mkdtemp(prefix="codex-answer-bench-")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(tmp, "home"),
           "AGENT_TRAY_HOME": os.path.join(tmp, "tray"), "XDG_RUNTIME_DIR": os.path.join(tmp, "run"),
           "CODEX_HOME": os.path.join(tmp, "codex"), "CLAUDE_CONFIG_DIR": os.path.join(tmp, "claude")}
    for d in ("home", "tray", "run", "codex", "claude", "proj"):
        os.makedirs(os.path.join(tmp, d), mode=0o700)
    server = FakeServer(env["CODEX_HOME"], os.path.join(tmp, "proj"))
    daemon = subprocess.Popen([binary, "daemon"], env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not server.subscribed.wait(30):
            sys.exit("the engine's app-server feed never subscribed to the fake server's thread")
        seen, times = set(), []
        for k in range(1, runs + 1):
            server.ask(k)
            deadline = time.monotonic() + 10
            new = []
            while not new and time.monotonic() < deadline:
                out = subprocess.run([binary, "pending", "--json"], env=env, capture_output=True, text=True)
                new = [r["id"] for r in json.loads(out.stdout or "[]") if r["id"] not in seen]
                if not new:
                    time.sleep(0.01)
            if not new:
                sys.exit(f"question {k} never listed")
            seen.add(new[0])
            t0 = time.monotonic()
            subprocess.run([binary, "answer", new[0], "--choice", "Red"], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            t_exit = time.monotonic()
            while k not in server.replies and time.monotonic() - t0 < 5:
                time.sleep(0.0005)
            if k not in server.replies:
                sys.exit(f"no reply frame for question {k}")
            times.append((server.replies[k] - t0, t_exit - t0))
        frames = sorted(t for t, _ in times)
        exits = sorted(e for _, e in times)
        pct = lambda xs, p: xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000
        print(f"{runs} answers through the Codex server route ({binary})")
        print(f"  `answer` started -> reply frame at the server: p50 {pct(frames, 50):.1f} ms, "
              f"p90 {pct(frames, 90):.1f} ms, p99 {pct(frames, 99):.1f} ms")
        print(f"  `answer` started -> `answer` exited:           p50 {pct(exits, 50):.1f} ms, "
              f"p90 {pct(exits, 90):.1f} ms, p99 {pct(exits, 99):.1f} ms")
    finally:
        daemon.terminate()
        try:
            daemon.wait(5)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        server.sock.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
