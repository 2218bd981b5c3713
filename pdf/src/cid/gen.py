#!/usr/bin/env python3
"""Generate the CID-to-Unicode run tables (cid/*.bin) from Adobe's <Collection>-UCS2
CMaps (poppler-data, /usr/share/poppler/cMap; BSD-3-Clause, Copyright 1990-2020 Adobe).

Each table is a sequence of little-endian records (cid: u16, count: u16, unicode: u32):
CIDs cid..cid+count map to unicode..unicode+count. Targets that are not a single code
point are left out. Usage: gen.py [CMAP_DIR]
"""
import re, struct, sys, pathlib

src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/poppler/cMap")
out = pathlib.Path(__file__).parent
for coll in ["GB1", "CNS1", "Japan1", "Korea1"]:
    text = (src / f"Adobe-{coll}" / f"Adobe-{coll}-UCS2").read_text("latin-1")
    m = {}
    def target(hexs):
        b = bytes.fromhex(hexs)
        s = b.decode("utf-16-be", errors="replace")
        return ord(s) if len(s) == 1 and s != "\ufffd" else None
    for block in re.findall(r"beginbfchar(.*?)endbfchar", text, re.S):
        for c, u in re.findall(r"<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>", block):
            t = target(u)
            if t is not None:
                m[int(c, 16)] = t
    for block in re.findall(r"beginbfrange(.*?)endbfrange", text, re.S):
        for lo, hi, u in re.findall(r"<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>", block):
            t = target(u)
            if t is not None:
                for k in range(int(lo, 16), int(hi, 16) + 1):
                    m[k] = t + k - int(lo, 16)
    runs = []
    for cid in sorted(m):
        u = m[cid]
        if runs and runs[-1][0] + runs[-1][1] == cid and runs[-1][2] + runs[-1][1] == u and runs[-1][1] < 65535:
            runs[-1][1] += 1
        else:
            runs.append([cid, 1, u])
    data = b"".join(struct.pack("<HHI", *r) for r in runs)
    (out / f"{coll}.bin").write_bytes(data)
    print(coll, len(m), "cids", len(runs), "runs", len(data), "bytes")
