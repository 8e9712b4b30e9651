"""`rlprof trigger` (docs/runtime.md "On-demand capture"): the GRPO example, profiled by its
verl config (steps 2 and 3), gets a window opened at a later step the config did not select by
`rlprof trigger` from another thread while it runs; the session picks the request up on its
writer thread and acknowledges it; a malformed request next to it is ignored."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pytest

torch = pytest.importorskip("torch")
from conftest import EXAMPLE, all_captures, capture_key, manifest  # noqa: E402

import grpo_tiny  # noqa: E402  (examples/grpo_tiny, on sys.path via conftest)

VERL = os.path.join(EXAMPLE, "grpo_verl.yaml")
BLOCKS = ["actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref"]


def test_trigger_opens_a_window_at_a_step_the_config_did_not_select(tmp_path, rlprof_cli, monkeypatch, capfd):
    trig = tmp_path / "trigger"
    monkeypatch.setenv("RLPROF_TRIGGER_DIR", str(trig))
    out = tmp_path / "out"
    ov = [f"global_profiler.save_path={out}"]
    for b in BLOCKS:
        ov += [f"{b}.profiler.ranks=[0]", f"{b}.profiler.tool_config.rlprof.discrete=false"]
    ov += ["~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_start",
           "~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_end"]
    cfg = grpo_tiny.GrpoConfig(steps=8, max_digit=2, group=4, sft_steps=5, mini_batches=2, micro_batches=2)
    result = {}
    acknowledged = threading.Event()
    # Step 4 starts only once `rlprof trigger` has returned (its request acknowledged by the
    # writer thread, which polls on its own), so a loaded machine cannot let the job run out of
    # steps before the request lands: the window opens at the next step start.
    real_share, calls = grpo_tiny.table_share, {"n": 0}

    def gated_share(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            acknowledged.wait(timeout=150)
        return real_share(*args, **kwargs)

    monkeypatch.setattr(grpo_tiny, "table_share", gated_share)

    def trigger() -> None:
        try:
            # Once step 3's capture (the config's last) exists, ask for one more step.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any("step3" in c for c in all_captures(str(out))):
                time.sleep(0.05)
            os.makedirs(trig, mode=0o700, exist_ok=True)
            (trig / "junk.trigger").write_text("{not json")
            result["cli"] = subprocess.run(
                [rlprof_cli, "trigger", "--steps", "1", "--pid", str(os.getpid()), "--ranks", "0",
                 "--wait", "60", "--expect", "1", "--json"], capture_output=True, text=True, timeout=90)
        finally:
            acknowledged.set()

    t = threading.Thread(target=trigger)
    t.start()
    res = grpo_tiny.train(cfg, config=VERL, overrides=ov, verbose=False)
    t.join()
    cli = result["cli"]
    assert cli.returncode == 0, cli.stderr
    doc = json.loads(cli.stdout)
    assert len(doc["acknowledged"]) == 1 and f"pid {os.getpid()}" in doc["acknowledged"][0]
    assert os.stat(trig).st_mode & 0o777 == 0o700
    keys = sorted(capture_key(c) for c in res["captures"])
    steps = [k[0] for k in keys]
    assert steps[:2] == [2, 3], keys  # the config's steps
    assert len(steps) == 3, keys      # plus exactly one triggered step …
    assert 3 < steps[2] <= cfg.steps  # … after the request, which the config did not select
    assert "malformed trigger request(s)" in capfd.readouterr().err  # junk.trigger: counted, ignored
    m = manifest([c for c in res["captures"] if capture_key(c)[0] == steps[2]][0])
    assert m["scope"] == "e2e" and m["steps"] == [steps[2]] and m["complete"] is True
    assert m["window"]["trigger"] == doc["id"]  # the manifest names the request that opened it
    assert all("trigger" not in manifest(c)["window"] for c in res["captures"] if capture_key(c)[0] <= 3)
