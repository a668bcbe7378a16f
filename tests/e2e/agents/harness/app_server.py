"""A minimal client of Codex's managed app-server control socket
($CODEX_HOME/app-server-control/app-server-control.sock): a WebSocket over a unix socket, one
JSON-RPC message per text frame. Python stdlib only; enough to record what the server says."""
import base64
import json
import os
import select
import socket
import struct
import time

SOCKET = os.path.join("app-server-control", "app-server-control.sock")


class AppServerClient:
    def __init__(self, codex_home, timeout=5.0):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(timeout)
        self.s.connect(os.path.join(codex_home, SOCKET))
        key = base64.b64encode(os.urandom(16))
        self.s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.s.recv(4096)
            if not chunk:
                raise ConnectionError("app-server closed during the WebSocket handshake")
            buf += chunk
        head, self.buf = buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"no WebSocket upgrade: {head[:200]!r}")
        self.next_id = 0

    def send(self, obj):
        data = json.dumps(obj).encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.next_id

    def initialize(self):
        self.request("initialize", {"clientInfo": {"name": "agent-tray-e2e", "version": "0"}})
        self.send({"method": "initialized"})

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.s], [], [], left)[0]:
                return False
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("app-server closed the connection")
            self.buf += chunk
        return True

    def recv(self, timeout=0.2):
        """The next message (a dict), or None when nothing came within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            if not self._fill(2, deadline):
                return None
            b0, b1 = self.buf[0], self.buf[1]
            n, off = b1 & 0x7F, 2
            slack = deadline + 5  # a frame that has begun is read to its end
            if n == 126:
                self._fill(4, slack)
                n, off = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                self._fill(10, slack)
                n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
            if not self._fill(off + n, slack):
                raise EOFError("truncated frame")
            payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
            op = b0 & 0x0F
            if op == 8:
                raise EOFError("app-server sent close")
            if op in (1, 2):
                return json.loads(payload)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass
