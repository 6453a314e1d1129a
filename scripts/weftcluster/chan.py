#!/usr/bin/env python3
"""The host end of the Weft guests' command channel.

One daemon per cluster (`chan.py serve --dir DIR --nodes N`, started by
`weft-cluster up`) keeps a connection to each VM's second serial port (a
QEMU UNIX socket chardev, QEMU being the server) and speaks the line
protocol of images/init/weft-agent.  Clients (the Channel class here, used
by weft-cluster and the cluster tests) talk to the daemon over
DIR/chan.sock with one JSON line each way, so any number of commands can
run at once, on one node or many.

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
import time

HELLO_PERIOD = 1.0      # seconds between hellos until a node answers READY
FIRST_HELLO_PERIOD = 0.1  # the same for a restored node until it said anything (see _hello)
RECONNECT_PERIOD = 0.2  # seconds between connection attempts to a VM
KILL_GRACE = 10.0       # seconds to wait for a killed command's output
PROGRESS_PERIOD = 10.0  # seconds between "still waiting" lines
WAIT_POLL = 0.1         # seconds between status polls of `wait`


class Node:
    """One VM's channel: connects, tracks readiness, runs commands."""

    def __init__(self, index, path):
        self.index = index
        self.path = path
        self.identity = path.replace(".cmd.sock", ".identity")  # a start from a snapshot only
        self.writer = None
        self.connected = False
        self.ready = None          # dict from the last READY, or None
        self.boots = 0             # distinct boot ids seen
        self.last_boot = None
        self.pending = {}          # id -> [future, list of base64 lines]
        self.heard = False         # a line came since the connection

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
        # Until the guest says anything, often for a node restored from a
        # snapshot (it has an identity file): it answers only a hello (with
        # WAITID), and a hello sent while its QEMU still loads the saved
        # state is lost with the serial port's old state
        # (docs/performance.md).  A booting guest reads its hellos only
        # when its agent starts and answers every one queued meanwhile
        # with a READY, a few forks each under TCG: ten a second of a
        # minute's boot at load 25 kept its first commands waiting for
        # minutes, so it gets one a second.
        self.heard = False
        fast = os.path.exists(self.identity)
        while self.ready is None:
            self._send(b"H\n")
            await asyncio.sleep(FIRST_HELLO_PERIOD if fast and not self.heard else HELLO_PERIOD)

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
            self.heard = True
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
            elif parts[0] == "WAITID":
                self._identity()
            elif parts[0] == "B" and len(parts) == 2:
                # The output of a command nobody waits for any more (timed
                # out, or its client left) is read and dropped.
                current = parts[1]

    def _identity(self):
        """A node started from a snapshot waits for its identity
        (images/init/rc): the words of nodeI.identity (written by
        weft-cluster, mode 0600) and the time now."""
        try:
            with open(self.identity) as f:
                words = f.read().split()
        except OSError as e:
            print(f"node{self.index}: asks for its identity, none to give: {e}", file=sys.stderr, flush=True)
            return
        words.append(f"weft_time={int(time.time())}")
        self._send(b"ID " + base64.b64encode(" ".join(words).encode()) + b"\n")

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


class ChannelError(OSError):
    """The channel daemon cannot be reached or refused a request."""


class Channel:
    """A client of one cluster's channel daemon (DIR/chan.sock)."""

    def __init__(self, directory):
        self.dir = directory
        self.path = os.path.join(directory, "chan.sock")

    def request(self, req):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                s.connect(self.path)
            except OSError as e:
                raise ChannelError(f"cannot reach the channel daemon at {self.path}: {e.strerror} "
                                   "(is the cluster up?)") from None
            s.sendall(json.dumps(req).encode() + b"\n")
            line = s.makefile("rb").readline()
        finally:
            s.close()
        if not line:
            raise ChannelError("the channel daemon closed the connection")
        resp = json.loads(line)
        if "error" in resp:
            raise ChannelError(resp["error"])
        return resp

    def status(self):
        """Node index -> the daemon's view of it (connected, ready, boot_id...)."""
        return {n["node"]: n for n in self.request({"op": "status"})["nodes"]}

    def exec(self, node, cmd, timeout=None):
        """Run CMD with sh in node NODE: (exit status, output bytes)."""
        r = self.request({"op": "exec", "node": node, "cmd": cmd, "timeout": timeout})
        return r["rc"], base64.b64decode(r["out"])

    def wait(self, nodes, timeout, not_boot=None, log=sys.stderr):
        """Wait until every node of NODES is ready (node I with a boot id
        other than NOT_BOOT[I]), printing each as it comes.  A node whose
        QEMU process (DIR/nodeI.pid) is gone fails at once.  True when all
        came up; the failures are printed."""
        not_boot = not_boot or {}
        t0 = time.monotonic()
        waiting = set(nodes)
        failed = {}
        next_note = t0 + PROGRESS_PERIOD
        while waiting:
            st = self.status()
            for i in sorted(waiting):
                n = st.get(i)
                if n is None:
                    failed[i] = "no such node"
                elif n["ready"] and n["boot_id"] != not_boot.get(i):
                    print(f"node{i} ready after {time.monotonic() - t0:.1f} s: kernel {n['kernel']}, "
                          f"driver {n['driver']}, {n['adapters']} adapter(s)", file=log, flush=True)
                elif not pid_alive(self.dir, i):
                    failed[i] = "its QEMU process exited"
                else:
                    continue
                waiting.discard(i)
            if waiting and time.monotonic() - t0 > timeout:
                for i in waiting:
                    n = st.get(i, {})
                    failed[i] = ("booting: connected, no READY yet" if n.get("connected")
                                 else "QEMU running, command channel not connected") + \
                        f" after {timeout:.0f} s"
                break
            if waiting and time.monotonic() >= next_note:
                next_note += PROGRESS_PERIOD
                states = ", ".join(f"node{i} " + ("booting" if st.get(i, {}).get("connected") else "starting")
                                   for i in sorted(waiting))
                print(f"still waiting after {time.monotonic() - t0:.0f} s: {states}", file=log, flush=True)
            if waiting:
                time.sleep(WAIT_POLL)
        for i in sorted(failed):
            print(f"node{i} FAILED: {failed[i]}", file=log)
        return not failed


def alive(pid):
    """Process PID exists and is not a zombie (a child of ours that ended
    stays a zombie until it is waited for)."""
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def read_pid(path):
    """The pid in the file PATH (its first word), or None."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def pid_alive(directory, i):
    return alive(read_pid(os.path.join(directory, f"node{i}.pid")))


def main():
    p = argparse.ArgumentParser(prog="chan.py", description="the command channel daemon of one cluster")
    sub = p.add_subparsers(dest="op", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--dir", required=True)
    s.add_argument("--nodes", type=int, required=True)
    a = p.parse_args()
    asyncio.run(Daemon(a.dir, a.nodes).main())
    return 0


if __name__ == "__main__":
    sys.exit(main())
