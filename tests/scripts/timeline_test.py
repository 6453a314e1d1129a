#!/usr/bin/env python3
"""scripts/weft-timeline on a made-up cluster folder (TAP, no VM).

Two nodes' QEMU traces (time-stamped lines as `-msg timestamp=on` writes
them, and one line without a stamp) and a capture of two frames: the
timeline must put every event on the right node, in time order, the
frames as "->" on the sender's and "<-" on the receiver's timeline, each
trace event in its kind, and a broadcast on every other node.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]


def frame(typ, src, dst, dwin, length, key=0x1069):
    h = struct.pack("<BBBBHHHHII", 1, typ, 0, 0, dst, src, dwin, 3, key, length)
    return h + bytes(104 - len(h)) + bytes(length)


def main():
    d = tempfile.mkdtemp(prefix="weft-timeline.")
    with open(os.path.join(d, "cluster.json"), "w") as f:
        json.dump({"nodes": 3, "base": 0}, f)
    with open(os.path.join(d, "node0.trace"), "w") as f:
        f.write("100@1700000000.000100:weft_db_write doorbell window 3 START_TRANSMIT [0x0] <- 0x1\n"
                "100@1700000000.000200:weft_pkt_tx packet sent FIFO node 0 -> node 1 window 5, 64 bytes\n"
                "weft_irq MSI-X vector 1\n")
    with open(os.path.join(d, "node1.trace"), "w") as f:
        f.write("200@1700000000.000400:weft_pkt_rx packet received FIFO node 0 -> node 1 window 5, 64 bytes\n"
                "200@1700000000.000500:weft_irq MSI-X vector 2\n"
                "200@1700000000.000600:weft_pkt_drop packet dropped FIFO node 2 -> node 1 window 9: "
                "WINDOW_INVALID (window number out of range or window not valid)\n")
    with open(os.path.join(d, "cap.pcap"), "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b23c4d, 2, 4, 0, 0, 2024, 147))
        for sec, ns, pkt in ((1700000000, 300000, frame(1, 0, 1, 5, 64)),
                             (1700000000, 700000, frame(1, 2, 0xFFFF, 9, 8))):
            f.write(struct.pack("<IIII", sec, ns, len(pkt), len(pkt)) + pkt)
    p = subprocess.run([sys.executable, TOOL, "--json", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    ev = [json.loads(line) for line in p.stdout.splitlines()]
    text = subprocess.run([sys.executable, TOOL, d], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True).stdout
    shutil.rmtree(d)
    points = []

    def point(ok, what):
        points.append("%s %d - %s" % ("ok" if ok else "not ok", len(points) + 1, what))

    point(p.returncode == 0, "weft-timeline --json exits 0 (%s)" % p.stderr.strip()[:80])
    point("1 trace lines without a time stamp" in p.stderr, "a line without a time stamp is left out and said so")
    order = [(e["node"], e["kind"], e["event"]) for e in ev]
    want = [(0, "mmio", "weft_db_write"), (0, "tx", "weft_pkt_tx"), (0, "wire", "capture"),
            (1, "wire", "capture"), (1, "rx", "weft_pkt_rx"), (1, "irq", "weft_irq"),
            (1, "drop", "weft_pkt_drop"), (0, "wire", "capture"), (1, "wire", "capture"),
            (2, "wire", "capture")]
    point(order == want, "events in time order, on their nodes, with their kinds: %s" % order)
    wire = [e["text"] for e in ev if e["kind"] == "wire"]
    point(wire[:2] == ["-> node1 FIFO window 3 -> window 5 key 0x1069 flags 0x0, 64 bytes",
                       "<- node0 FIFO window 3 -> window 5 key 0x1069 flags 0x0, 64 bytes"],
          "a unicast frame: '->' on the sender's timeline, '<-' on the receiver's: %s" % wire[:2])
    point(sorted(e["node"] for e in ev if "broadcast" in e["text"] or "<- node2" in e["text"]) == [0, 1, 2],
          "a broadcast from node2: on its own timeline and on every other node's")
    point(text.startswith("== node0 ==\n    0.000000  node0   mmio ") and "== node2 ==" in text,
          "text output: one section per node, times from the first event")
    print("1..%d" % len(points))
    print("\n".join(points))
    return 0 if all(x.startswith("ok") for x in points) else 1


if __name__ == "__main__":
    sys.exit(main())
