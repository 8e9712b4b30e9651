#!/usr/bin/env python3
"""Regenerates test/fuzz/corpus/<target>/ from the repository's fixtures.

Seeds are kept small (a few KB): traces are cut to a sample of their events that keeps
one of each kind (phase × category) plus the first few, captures to their strings, tracks and
a sample of events. Deterministic; run from anywhere:  test/fuzz/make_seeds.py
Needs: python3 (json, yaml, gzip, zlib) and the zstd command-line tool.
"""
import glob
import gzip
import json
import os
import shutil
import struct
import subprocess
import zlib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ = os.path.join(ROOT, "test", "fuzz")
CORPUS = os.path.join(FUZZ, "corpus")
MAX_SEED = 6 << 10


def out(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def sample_events(events, first=12, per_kind=2, budget=MAX_SEED - 512):
    """The first few events, then per_kind of each (ph, cat), then all metadata, in file order."""
    keep, seen = set(), {}
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        key = (e.get("ph"), e.get("cat"))
        if i < first or seen.get(key, 0) < per_kind:
            keep.add(i)
            seen[key] = seen.get(key, 0) + 1
    # A flow point on a thread whose slices were cut away is a different input (and a known
    # reader crash, test/fuzz/known_crashes): keep flow points only where a slice was kept.
    slice_threads = {(events[i].get("pid"), events[i].get("tid")) for i in keep
                     if events[i].get("ph") in ("X", "B")}
    keep = {i for i in keep if events[i].get("ph") not in ("s", "t", "f")
            or (events[i].get("pid"), events[i].get("tid")) in slice_threads}
    picked, size = [], 0
    for i in sorted(keep):
        s = len(json.dumps(events[i], separators=(",", ":")))
        if size + s > budget:
            continue
        picked.append(events[i])
        size += s
    return picked


def dumps(doc):
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def chrome_object_seed(path):
    doc = load_json(path)
    events = doc.get("traceEvents", [])
    small = {k: v for k, v in doc.items() if k != "traceEvents" and len(dumps(v)) < 400}
    small["traceEvents"] = sample_events(events, budget=MAX_SEED - 512 - len(dumps(small)))
    return dumps(small)


def kineto():
    t = "kineto_json"
    for path in sorted(glob.glob(os.path.join(ROOT, "test/data/fixtures/kineto/*.json.gz"))):
        name = os.path.basename(path).replace(".json.gz", "").replace(".pt.trace", "")
        out(t, name + ".json", chrome_object_seed(path))
    for path in sorted(glob.glob(os.path.join(ROOT, "test/data/fixtures/kineto/*/*.json*"))):
        name = os.path.basename(os.path.dirname(path)) + "_" + os.path.basename(path).split(".")[0]
        out(t, name + ".json", chrome_object_seed(path))
    out(t, "rlprof_sample_trace.json", chrome_object_seed(os.path.join(ROOT, "test/golden/format/sample_trace.json")))
    # The gzip path: one seed compressed (mtime 0: reproducible bytes).
    with open(os.path.join(CORPUS, t, "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.json"), "rb") as f:
        out(t, "hta_cpu_only.json.gz", gzip.compress(f.read(), mtime=0))


def legacy_torch():
    events = load_json(os.path.join(ROOT, "test/data/fixtures/torch113_legacy_gloo_ddp_rank0.json"))
    out("torch_legacy_json", "torch113_legacy_gloo_ddp_rank0.json", dumps(sample_events(events)))
    out("torch_legacy_json", "torch113_legacy_tail.json", dumps(sample_events(events[-40:], first=40)))


def ascend():
    events = load_json(os.path.join(ROOT, "test/data/fixtures/ascend/trace_view.json"))
    out("ascend_json", "trace_view.json", dumps(sample_events(events)))
    out("ascend_json", "trace_view_tail.json", dumps(sample_events(events[-40:], first=40)))


# events.rlp: header | chunks (magic u32 | type u32 | raw_len u32 | len u32 | crc32 u32 | zstd)
CHUNK_MAGIC = 0x4B434C52


def zstd(data, decompress=False):
    args = ["zstd", "-q", "-c"] + (["-d"] if decompress else ["-1", "--no-check"])
    return subprocess.run(args, input=data, stdout=subprocess.PIPE, check=True).stdout


def read_rlp(path):
    with open(path, "rb") as f:
        b = f.read()
    hb = struct.unpack_from("<I", b, 12)[0]
    header, chunks, p = b[:hb], [], hb
    while p + 20 <= len(b):
        magic, typ, raw_len, n, crc = struct.unpack_from("<IIIII", b, p)
        assert magic == CHUNK_MAGIC, path
        payload = b[p + 20:p + 20 + n]
        assert zlib.crc32(payload, zlib.crc32(b[p + 4:p + 16])) == crc, path
        raw = zstd(payload, decompress=True)
        assert len(raw) == raw_len
        chunks.append((typ, raw))
        p += 20 + n
    return header, chunks


def cut_chunks(chunks, events_per_kind=3, first=24):
    """Strings and tracks whole (strings cut to 3 KB), events: the first ones and a few per kind."""
    out_chunks, seen = [], {}
    for typ, raw in chunks:
        if typ == 1:
            recs, p = b"", 0
            while p + 8 <= len(raw) and len(recs) < 3072:
                n = struct.unpack_from("<I", raw, p + 4)[0]
                recs += raw[p:p + 8 + n]
                p += 8 + n
            out_chunks.append((1, recs))
        elif typ == 3:
            keep = b""
            for i in range(0, len(raw) - 31, 32):
                e = raw[i:i + 32]
                key = (e[22], e[23])  # kind, category
                if i // 32 < first or seen.get(key, 0) < events_per_kind:
                    keep += e
                    seen[key] = seen.get(key, 0) + 1
            if keep:
                out_chunks.append((3, keep))
            first = 0
        else:
            out_chunks.append((typ, raw))
    return out_chunks


def seal(header, chunks):
    b = header
    for typ, raw in chunks:
        payload = zstd(raw)
        fields = struct.pack("<III", typ, len(raw), len(payload))
        b += struct.pack("<I", CHUNK_MAGIC) + fields + struct.pack("<I", zlib.crc32(payload, zlib.crc32(fields))) + payload
    return b


M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def s64(v):
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append((v & 0x7F) | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)


def zigzag(v):
    v = s64(v)
    return ((v << 1) ^ (v >> 63)) & M64


def columnar(records):
    """The columnar events payload (docs/formats.md §2.2, chunk type 4) of 32-byte records:
    written from the document alone, so the seeds also check that it says enough."""
    cols = [bytearray() for _ in range(9)]  # kind, category, track, pop, time, payload, name, arg0, arg1
    stacks, counters, last_arg = {}, {}, {}
    prev_ts = last_range = n = 0
    for i in range(0, len(records) - 31, 32):
        ts, payload, name, track, kind, cat, arg0, arg1 = struct.unpack_from("<qqIHBBII", records, i)
        n += 1
        cols[0].append(kind)
        cols[1].append(cat)
        cols[2] += varint(track)
        cols[6] += varint(name)
        for a, v in ((0, arg0), (1, arg1)):
            v = (v + 1) & M32
            code = 0
            if v != 0:
                d = (v - last_arg.get((a, cat), 0)) & M32
                d = d - (1 << 32) if d >> 31 else d
                code = (((d << 1) ^ (d >> 31)) & M32) + 1
                last_arg[(a, cat)] = v
            cols[7 + a] += varint(code)
        stack = stacks.setdefault(track, [])
        end = s64(ts + payload) if kind == 1 else ts
        k = 0
        while k < len(stack) and stack[-1 - k][0] >= ts and stack[-1 - k][1] <= end:
            k += 1
        if k:
            time, last_end = zigzag(stack[-k][0] - ts), stack[-1][1]
        else:
            time = zigzag(ts - (stack[-1][1] if stack else prev_ts))
        if kind == 1:
            pay = zigzag(end - last_end) if k else zigzag(payload)
        elif kind == 5:
            pay = (payload & M64) ^ counters.get(track, 0)
            counters[track] = payload & M64
        elif kind in (2, 3):
            pay = zigzag(payload - last_range)
            last_range = payload
        else:
            pay = zigzag(payload)
        cols[3] += varint(k)
        cols[4] += varint(time)
        cols[5] += varint(pay)
        del stack[len(stack) - k:]
        if len(stack) >= 256:
            del stack[:128]
        stack.append((ts, end))
        prev_ts = ts
    return varint(n) + b"".join(varint(len(c)) for c in cols) + b"".join(bytes(c) for c in cols)


def version2(header, chunks):
    """The same capture as format version 2 writes it: events chunks columnar."""
    h = bytearray(header[:-4])
    struct.pack_into("<I", h, 8, 2)
    h += struct.pack("<I", zlib.crc32(bytes(h)))
    return bytes(h), [(4, columnar(raw)) if typ == 3 else (typ, raw) for typ, raw in chunks]


def unpacked(chunks):
    return b"".join(struct.pack("<BH", typ, len(raw)) + raw for typ, raw in chunks)


def rlp():
    for path in sorted(glob.glob(os.path.join(ROOT, "test/golden/analysis/inputs/grpo_tiny_step2/*/rank*/events.rlp"))):
        stage = os.path.basename(os.path.dirname(os.path.dirname(path)))
        rank = os.path.basename(os.path.dirname(path)).split("-")[0]
        if rank != "rank0" and stage != "rollout_generate":
            continue
        header, chunks = read_rlp(path)
        small = cut_chunks(chunks)
        name = f"{stage}_{rank}"
        file = seal(header, small)
        out("rlp_file", name + ".rlp", file)
        out("rlp_chunks", name + ".bin", unpacked(small))
        header2, small2 = version2(header, small)
        out("rlp_file", name + "_v2.rlp", seal(header2, small2))
        out("rlp_chunks", name + "_v2.bin", unpacked(small2))
        if stage == "actor_update":
            # A killed writer (cut mid-chunk) and a damaged chunk between two good ones.
            out("rlp_file", name + "_truncated.rlp", file[: len(file) - 37])
            second = len(header) + 20 + struct.unpack_from("<I", file, len(header) + 12)[0]
            damaged = bytearray(file)
            damaged[second + 24] ^= 0xFF
            out("rlp_file", name + "_damaged.rlp", bytes(damaged))


def manifests():
    base = os.path.join(ROOT, "test/golden/analysis/inputs/grpo_tiny_step2")
    for rel in ["actor_update/rank0-vm-9930", "rollout_generate/rank1-vm-9931"]:
        with open(os.path.join(base, rel, "manifest.json"), "rb") as f:
            out("manifest", rel.replace("/", "_") + ".json", f.read())
    out("manifest", "minimal.json", '{"format":"rlprof-capture","format_version":1,"identity":{"rank":0}}')


def yaml_configs():
    t = "yaml_config"
    for path in sorted(glob.glob(os.path.join(ROOT, "examples/configs/*.yaml")) +
                       glob.glob(os.path.join(ROOT, "test/golden/config_errors/*.yaml"))):
        shutil.copyfile(path, os.path.join(CORPUS, t, os.path.basename(path)))
    ms = sorted(glob.glob(os.path.join(ROOT, "test/data/fixtures/configs/mindspeed-rl/*.yaml")))
    for path in ms[:3]:
        shutil.copyfile(path, os.path.join(CORPUS, t, "mindspeed_" + os.path.basename(path)))
    # verl's generated trainer configs are ~35 KB: keep the profiler parts (with their
    # interpolations) and the keys they point to.
    for path in sorted(glob.glob(os.path.join(ROOT, "test/data/fixtures/configs/verl/*.yaml")))[:2]:
        with open(path) as f:
            doc = yaml.safe_load(f)

        def profiler_only(node, depth=0):
            if not isinstance(node, dict):
                return node
            kept = {}
            for k, v in node.items():
                if "profil" in str(k) or k in ("global_profiler", "nnodes", "n_gpus_per_node"):
                    kept[k] = v
                elif isinstance(v, dict) and depth < 3:
                    sub = profiler_only(v, depth + 1)
                    if sub:
                        kept[k] = sub
            return kept

        text = yaml.safe_dump(profiler_only(doc), sort_keys=False)
        out(t, "verl_" + os.path.basename(path), text[:MAX_SEED])


def overrides():
    t = "hydra_overrides"
    # First byte: the base config (0 verl Gen 3, 1 verl legacy, 2 MindSpeed-RL, 3 rlprof).
    seeds = {
        "golden_27_missing_key": "\x00global_profiler.stpes=[1]",
        "golden_28_adding_existing": "\x00+global_profiler.steps=[1]",
        "golden_36_bad_value": "\x00global_profiler.steps=[1,0]",
        "verl_steps_tool": "\x00global_profiler.steps=[2,3]\nglobal_profiler.tool=torch",
        "verl_add_delete": "\x00++actor_rollout_ref.actor.profiler.ranks=[0,1]\n~global_profiler.save_path\n"
                           "+actor_rollout_ref.actor.profiler.tool_config.npu.discrete=true",
        "verl_interpolation": "\x00global_profiler.save_path=${oc.env:HOME,/tmp}/p\n"
                              "actor_rollout_ref.actor.profiler.enable=${oc.select:global_profiler.enable,true}",
        "legacy_steps": "\x01trainer.profile_steps=[3,4]\ntrainer.profile_continuous_steps=true",
        "mindspeed_window": "\x02profiler_config.integrated.profile_step_start=1\n"
                            "profiler_config.integrated.profile_step_end=3\n"
                            "profiler_config.integrated.stage=[actor_update]",
        "native_schedule": "\x03rlprof.steps=[1]\n"
                           "rlprof.roles.actor.schedule={unit: micro_batch, wait: 0, active: 1, repeat: 2}\n"
                           "~rlprof.roles.rollout",
        "native_relative": "\x03rlprof.save_path=${.steps}\n++rlprof.budget.max_bytes=1GiB",
    }
    for name, text in seeds.items():
        out(t, name + ".txt", text)


def ascend_db():
    """Small Ascend profiler databases: the fixtures of test/data/ascend_db cut to a few rows of
    every table, in 512-byte pages (so a seed is a few KiB and mutations hit every structure)."""
    import sqlite3
    import tempfile
    src = os.path.join(ROOT, "test", "data", "ascend_db")
    seeds = {"msprof_one_rank.db": "one_rank/msprof_20251126094000.db",
             "steps_mstx.db": "steps/ascend_pytorch_profiler_0.db",
             "broken_rows.db": "corrupt/ascend_pytorch_profiler_3.db"}
    for name, rel in seeds.items():
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, name)
            shutil.copyfile(os.path.join(src, rel), db)
            c = sqlite3.connect(db)
            tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for t in tables:
                if t != "STRING_IDS":
                    c.execute(f"DELETE FROM {t} WHERE rowid NOT IN (SELECT rowid FROM {t} ORDER BY rowid LIMIT 6)")
            c.commit()
            c.execute("PRAGMA page_size = 512")
            c.execute("VACUUM")
            c.close()
            with open(db, "rb") as f:
                out("ascend_db", name, f.read())


def ascend_text():
    """torch_npu text outputs (test/data/ascend_text) as the ascend_text target reads them:
    kernel_details.csv (header and a few rows), a line "\\x1e", communication.json."""
    src = os.path.join(ROOT, "test", "data", "ascend_text")
    for name, folder in (("steps", "steps/node-a_42000_20251126094000123_ascend_pt"),
                         ("recv", "multi_rank/node-a_41001_20251126094000123_ascend_pt"),
                         ("damaged", "damaged/node-a_41002_20251126094000123_ascend_pt")):
        d = os.path.join(src, folder, "ASCEND_PROFILER_OUTPUT")
        with open(os.path.join(d, "kernel_details.csv")) as f:
            csv_text = "".join(f.readlines()[:10])
        with open(os.path.join(d, "communication.json")) as f:
            comm = f.read()[:MAX_SEED - len(csv_text) - 8]
        out("ascend_text", name + ".txt", csv_text + "\n\x1e\n" + comm)
    with open(os.path.join(ROOT, "test", "data", "fixtures", "ascend", "kernel_details.csv")) as f:
        out("ascend_text", "mstt_kernel_details.csv", "".join(f.readlines()[:8]))


def hostile_classes():
    """One seed per class of the issue-35 audit that parses in memory (the file-system classes,
    FIFOs, device links, sparse files and link loops, are built by test/hostile/hostile_run.py)."""
    out("kineto_json", "hostile_duplicate_trace_events.json",
        '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":"a"}],'
        '"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":5,"dur":1,"name":"b"}]}')
    header = "Step Id,Name,Accelerator Core,Start Time(us),Duration(us),Input Shapes\n"
    rows = '1,MatMul,AI_CORE,10,2,"1,2"\n1,Add,AI_VECTOR_CORE,20,3,"4"\n'
    out("ascend_text", "hostile_cr_only.csv", (header + rows).replace("\n", "\r"))
    out("ascend_text", "hostile_cut_mid_row.csv", header + rows + "1,Mul,AI_CORE,30,")
    out("ascend_text", "hostile_header_only.csv", header)
    for name, comm in (("null", "null"), ("list", "[1, {}]"), ("string", '"x"')):
        out("ascend_text", f"hostile_communication_{name}.txt", header + rows + "\x1e\n" + comm)
    out("manifest", "hostile_wrong_types.json",
        '{"format":"rlprof-capture","format_version":1,"identity":{"rank":1.5,"pid":-3,"world_size":-2},'
        '"counts":{"events":-1,"dropped_events":4,"dropped_write_error":2},"complete":false}')
    out("manifest", "hostile_empty_counts.json", '{"identity":{"rank":-5},"counts":{},"complete":true}')
    tail = "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0]}}}\n"
    out("yaml_config", "hostile_steps_null.yaml", "global_profiler: {tool: torch, steps: [2, null]}\n" + tail)
    out("yaml_config", "hostile_ranks_null.yaml", "global_profiler: {tool: torch, steps: [1]}\n"
        "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [null]}}}\n")
    out("yaml_config", "hostile_quoted_rank.yaml", "global_profiler: {tool: torch, steps: [1]}\n"
        'actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0, "1"]}}}\n')
    out("yaml_config", "hostile_nul_save_path.yaml",
        'global_profiler: {tool: torch, steps: [1], save_path: "/tmp/a\\0b"}\n' + tail)


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)
    os.makedirs(os.path.join(CORPUS, "yaml_config"))
    kineto()
    legacy_torch()
    ascend()
    ascend_db()
    ascend_text()
    rlp()
    manifests()
    yaml_configs()
    overrides()
    hostile_classes()
    for d in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, d))
        size = sum(os.path.getsize(os.path.join(CORPUS, d, f)) for f in files)
        print(f"{d}: {len(files)} seeds, {size} bytes")


if __name__ == "__main__":
    main()
