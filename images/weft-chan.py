#!/usr/bin/env python3
"""weft-chan: the host end of the Weft guests' command channel.

One daemon per cluster ("serve") keeps a connection to each VM's second
serial port (a QEMU UNIX socket chardev, QEMU being the server) and speaks
the line protocol of images/init/weft-agent.  Clients ("exec", "status",
"wait", "stop") talk to the daemon over DIR/chan.sock with one JSON line
each way, so any number of commands can run at once, on one node or many.

  weft-chan.py serve  --dir DIR --nodes N
  weft-chan.py exec   --dir DIR [--timeout S] NODE[,NODE...]|all -- CMD...
  weft-chan.py status --dir DIR [--json]
  weft-chan.py wait   --dir DIR [--not-boot I=ID]... [--timeout S] NODES|all
  weft-chan.py stop   --dir DIR

Node I's serial socket is DIR/nodeI.cmd.sock.  docs/cluster.md describes
the protocol.  Standard library only.
"""

import argparse
import asyncio
import base64
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time

HELLO_PERIOD = 1.0      # seconds between hellos until a node answers READY
RECONNECT_PERIOD = 0.2  # seconds between connection attempts to a VM
KILL_GRACE = 10.0       # seconds to wait for a killed command's output
PROGRESS_PERIOD = 10.0  # seconds between "still waiting" lines
WAIT_POLL = 0.1         # seconds between status polls of `wait`


class Node:
    """One VM's channel: connects, tracks readiness, runs commands."""

    def __init__(self, index, path):
        self.index = index
        self.path = path
        self.writer = None
        self.connected = False
        self.ready = None          # dict from the last READY, or None
        self.boots = 0             # distinct boot ids seen
        self.last_boot = None
        self.pending = {}          # id -> [future, list of base64 lines]

    def info(self):
        d = {"node": self.index, "connected": self.connected,
             "ready": self.ready is not None, "boots": self.boots}
        if self.ready:
            d.update(self.ready)
        return d

    async def run(self):
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(self.path, limit=1 << 24)
            except OSError:
                await asyncio.sleep(RECONNECT_PERIOD)
                continue
            self.writer = writer
            self.connected = True
            hello = asyncio.ensure_future(self._hello())
            try:
                await self._read(reader)
            finally:
                hello.cancel()
                self.connected = False
                self.ready = None
                self.writer = None
                writer.close()
                for fut, _ in self.pending.values():
                    if not fut.done():
                        fut.set_exception(ConnectionError(
                            f"node{self.index}: connection lost (VM stopped or rebooted)"))
                self.pending.clear()
            await asyncio.sleep(RECONNECT_PERIOD)

    async def _hello(self):
        while self.ready is None:
            self._send(b"H\n")
            await asyncio.sleep(HELLO_PERIOD)

    def _send(self, data):
        if self.writer is not None:
            self.writer.write(data)

    async def _read(self, reader):
        current = None
        while True:
            try:
                line = await reader.readline()
            except (OSError, ValueError):
                return
            if not line:
                return
            line = line.decode("ascii", "replace").strip("\r\n")
            if current is not None:
                if line.startswith("E "):
                    parts = line.split()
                    if len(parts) == 3 and parts[1] == current:
                        ent = self.pending.pop(current, None)
                        if ent and not ent[0].done():
                            try:
                                out = base64.b64decode("".join(ent[1]))
                            except ValueError:
                                out = b"weft-chan: undecodable output\n"
                            ent[0].set_result((int(parts[2]), out))
                        current = None
                        continue
                ent = self.pending.get(current)
                if ent is not None:
                    ent[1].append(line)
                continue
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "READY" and len(parts) >= 6:
                boot = parts[1]
                if boot != self.last_boot:
                    self.boots += 1
                    self.last_boot = boot
                self.ready = {"boot_id": boot, "hostname": parts[2],
                              "kernel": parts[3], "driver": parts[4],
                              "adapters": int(parts[5]) if parts[5].isdigit() else 0,
                              "since": time.time()}
            elif parts[0] == "B" and len(parts) == 2:
                # The output of a command nobody waits for any more (timed
                # out, or its client left) is read and dropped.
                current = parts[1]

    async def execute(self, cmd, timeout):
        if self.ready is None:
            state = "connected, booting" if self.connected else "not running"
            raise ConnectionError(f"node{self.index} is not ready ({state})")
        cid = secrets.token_hex(8)
        fut = asyncio.get_running_loop().create_future()
        self.pending[cid] = [fut, []]
        self._send(b"R " + cid.encode() + b" " + base64.b64encode(cmd.encode()) + b"\n")
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            # Kill it; the agent then sends what the command had printed.
            self._send(b"K " + cid.encode() + b"\n")
            note = f"weft-chan: node{self.index}: command timed out after {timeout} s (killed)\n".encode()
            try:
                _, out = await asyncio.wait_for(fut, KILL_GRACE)
            except (asyncio.TimeoutError, ConnectionError):
                self.pending.pop(cid, None)
                out = b""
            return 124, out + note
        except asyncio.CancelledError:
            self._send(b"K " + cid.encode() + b"\n")
            self.pending.pop(cid, None)
            raise


class Daemon:
    def __init__(self, directory, nodes):
        self.dir = directory
        self.nodes = [Node(i, os.path.join(directory, f"node{i}.cmd.sock")) for i in range(nodes)]
        self.stop = asyncio.Event()

    async def handle(self, reader, writer):
        try:
            line = await reader.readline()
            req = json.loads(line)
            op = req.get("op")
            if op == "status":
                resp = {"nodes": [n.info() for n in self.nodes], "pid": os.getpid()}
            elif op == "exec":
                i = req.get("node")
                if not isinstance(i, int) or not 0 <= i < len(self.nodes):
                    raise ValueError(f"no node {i!r} (nodes 0..{len(self.nodes) - 1})")
                # A client that goes away (Ctrl-C) kills the command.
                task = asyncio.ensure_future(self.nodes[i].execute(str(req["cmd"]), req.get("timeout")))
                eof = asyncio.ensure_future(reader.read())
                done, _ = await asyncio.wait({task, eof}, return_when=asyncio.FIRST_COMPLETED)
                if task not in done:
                    task.cancel()
                    return
                eof.cancel()
                rc, out = task.result()
                resp = {"rc": rc, "out": base64.b64encode(out).decode()}
            elif op == "stop":
                resp = {"stopped": True}
                self.stop.set()
            else:
                raise ValueError(f"unknown op {op!r}")
        except (ValueError, KeyError, TypeError, ConnectionError) as e:
            resp = {"error": str(e)}
        try:
            writer.write(json.dumps(resp).encode() + b"\n")
            await writer.drain()
            writer.close()
        except OSError:
            pass

    async def main(self):
        path = os.path.join(self.dir, "chan.sock")
        if os.path.exists(path):
            os.unlink(path)
        server = await asyncio.start_unix_server(self.handle, path, limit=1 << 24)
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, self.stop.set)
        tasks = [asyncio.ensure_future(n.run()) for n in self.nodes]
        await self.stop.wait()
        server.close()
        for t in tasks:
            t.cancel()
        os.unlink(path)


def request(directory, req, timeout=None):
    path = os.path.join(directory, "chan.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        sys.exit(f"weft-chan: cannot reach the channel daemon at {path}: {e.strerror} "
                 "(is the cluster up?)")
    s.sendall(json.dumps(req).encode() + b"\n")
    f = s.makefile("rb")
    line = f.readline()
    s.close()
    if not line:
        sys.exit("weft-chan: the channel daemon closed the connection")
    return json.loads(line)


def parse_nodes(spec, directory):
    if spec == "all":
        return [n["node"] for n in request(directory, {"op": "status"})["nodes"]]
    out = []
    for part in spec.split(","):
        p = part[4:] if part.startswith("node") else part
        if not p.isdigit():
            sys.exit(f"weft-chan: bad node '{part}' (use N, nodeN, a comma list or all)")
        out.append(int(p))
    return out


def cmd_exec(a):
    nodes = parse_nodes(a.nodes, a.dir)
    cmd = " ".join(a.cmd) if len(a.cmd) > 1 else (a.cmd[0] if a.cmd else "")
    if not cmd:
        sys.exit("weft-chan: exec needs a command after --")
    results = {}

    def one(i):
        try:
            results[i] = request(a.dir, {"op": "exec", "node": i, "cmd": cmd, "timeout": a.timeout})
        except SystemExit as e:
            results[i] = {"error": str(e)}

    if len(nodes) == 1:
        one(nodes[0])
    else:
        threads = [threading.Thread(target=one, args=(i,)) for i in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    status = 0
    out = sys.stdout.buffer
    for i in nodes:
        r = results[i]
        rc = r.get("rc", 255)
        if len(nodes) > 1:
            out.write(f"--- node{i} (exit {rc}) ---\n".encode())
        if "error" in r:
            out.flush()
            print(f"weft-chan: {r['error']}", file=sys.stderr)
        else:
            out.write(base64.b64decode(r["out"]))
        out.flush()
        if rc != 0 and status == 0:
            status = rc
    return status


def cmd_status(a):
    r = request(a.dir, {"op": "status"})
    if a.json:
        print(json.dumps(r))
        return 0
    for n in r["nodes"]:
        state = "ready" if n["ready"] else ("booting" if n["connected"] else "down")
        extra = ""
        if n["ready"]:
            extra = f" {n['hostname']} kernel={n['kernel']} driver={n['driver']} adapters={n['adapters']}"
        print(f"node{n['node']}: {state} boots={n['boots']}{extra}")
    return 0


def pid_alive(directory, i):
    try:
        with open(os.path.join(directory, f"node{i}.pid")) as f:
            pid = int(f.read().split()[0])
        os.kill(pid, 0)
        return True
    except (OSError, ValueError, IndexError):
        return False


def cmd_wait(a):
    """Wait until every listed node is ready (with a boot id other than
    the one given by --not-boot), printing each as it comes.  A node whose
    QEMU process (DIR/nodeI.pid) is gone fails at once."""
    nodes = parse_nodes(a.nodes, a.dir)
    not_boot = {}
    for spec in a.not_boot or []:
        i, _, boot = spec.partition("=")
        not_boot[int(i)] = boot
    t0 = time.monotonic()
    waiting = set(nodes)
    failed = {}
    next_note = t0 + PROGRESS_PERIOD
    while waiting:
        st = {n["node"]: n for n in request(a.dir, {"op": "status"})["nodes"]}
        for i in sorted(waiting):
            n = st.get(i)
            if n is None:
                failed[i] = "no such node"
            elif n["ready"] and n["boot_id"] != not_boot.get(i):
                print(f"node{i} ready after {time.monotonic() - t0:.1f} s: kernel {n['kernel']}, "
                      f"driver {n['driver']}, {n['adapters']} adapter(s)", file=sys.stderr, flush=True)
            elif not pid_alive(a.dir, i):
                failed[i] = "its QEMU process exited"
            else:
                continue
            waiting.discard(i)
        if waiting and time.monotonic() - t0 > a.timeout:
            for i in waiting:
                n = st.get(i, {})
                failed[i] = ("booting: connected, no READY yet" if n.get("connected")
                             else "QEMU running, command channel not connected") + \
                            f" after {a.timeout:.0f} s"
            break
        if waiting and time.monotonic() >= next_note:
            next_note += PROGRESS_PERIOD
            states = ", ".join(f"node{i} " + ("booting" if st.get(i, {}).get("connected") else "starting")
                               for i in sorted(waiting))
            print(f"still waiting after {time.monotonic() - t0:.0f} s: {states}", file=sys.stderr, flush=True)
        if waiting:
            time.sleep(WAIT_POLL)
    for i in sorted(failed):
        print(f"node{i} FAILED: {failed[i]}", file=sys.stderr)
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(prog="weft-chan", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="op", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--dir", required=True)
    s.add_argument("--nodes", type=int, required=True)
    s = sub.add_parser("exec")
    s.add_argument("--dir", required=True)
    s.add_argument("--timeout", type=float, default=None)
    s.add_argument("nodes")
    s.add_argument("cmd", nargs=argparse.REMAINDER)
    s = sub.add_parser("status")
    s.add_argument("--dir", required=True)
    s.add_argument("--json", action="store_true")
    s = sub.add_parser("wait")
    s.add_argument("--dir", required=True)
    s.add_argument("--timeout", type=float, default=60)
    s.add_argument("--not-boot", action="append", metavar="I=BOOT_ID",
                   help="for node I, wait for a boot other than BOOT_ID")
    s.add_argument("nodes")
    s = sub.add_parser("stop")
    s.add_argument("--dir", required=True)
    a = p.parse_args()
    if a.op == "serve":
        asyncio.run(Daemon(a.dir, a.nodes).main())
        return 0
    if a.op == "exec":
        if a.cmd and a.cmd[0] == "--":
            a.cmd = a.cmd[1:]
        return cmd_exec(a)
    if a.op == "status":
        return cmd_status(a)
    if a.op == "wait":
        return cmd_wait(a)
    if a.op == "stop":
        request(a.dir, {"op": "stop"})
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
