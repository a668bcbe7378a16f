"""Stands in for Factory Droid's interactive UI, which needs a Factory login offline: runs the
agent process the UI runs (`droid exec --input-format stream-jsonrpc --output-format
stream-jsonrpc`) as its child, opens a session (`droid.initialize_session`), sends one prompt
(`droid.add_user_message`), logs every line Droid writes to $DROID_RPC_LOG, and keeps the pipe open
until it is killed (Droid asks it for permissions with `droid.request_permission`; nobody answers).

  python3 droid_rpc.py <droid binary> <model id> <prompt>
"""
import json
import os
import subprocess
import sys
import threading
import uuid

VERSIONS = {"factoryApiVersion": "1.0.0", "factoryProtocolVersion": "1.206.0"}


def main():
    droid, model, prompt = sys.argv[1:4]
    log = open(os.environ.get("DROID_RPC_LOG", os.devnull), "a")
    child = subprocess.Popen([droid, "exec", "--input-format", "stream-jsonrpc", "--output-format", "stream-jsonrpc"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    session = threading.Event()
    found = {}

    def read():
        for line in child.stdout:
            log.write(line)
            log.flush()
            try:
                sid = (json.loads(line).get("result") or {}).get("sessionId")
            except ValueError:
                sid = None
            if sid and not session.is_set():
                found["sid"] = sid
                session.set()

    threading.Thread(target=read, daemon=True).start()

    def send(method, params, **extra):
        msg = {"jsonrpc": "2.0", "type": "request", "id": str(uuid.uuid4()), "method": method,
               "params": params, **VERSIONS, **extra}
        child.stdin.write(json.dumps(msg) + "\n")
        child.stdin.flush()

    send("droid.initialize_session", {"machineId": "agent-tray-e2e", "cwd": os.getcwd(), "modelId": model})
    if not session.wait(30):
        sys.exit("droid_rpc: no session from droid within 30 s")
    send("droid.add_user_message", {"text": prompt}, sessionId=found["sid"])
    child.wait()


if __name__ == "__main__":
    main()
