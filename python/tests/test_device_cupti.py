"""Device capture from Python: the core extension registers the CUPTI source, which a config
with device contents runs (here against the fake CUPTI replaying test/data/cupti/step.records)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, events, manifest

SCRIPT = r"""
import sys, time, rlprof
cfg = {"rlprof": {"steps": [1], "save_path": sys.argv[1],
                  "roles": {"actor": {"ranks": [0], "contents": ["cpu", "device"], "level": "level1"}}}}
prof = rlprof.Profiler(cfg, role="actor", quiet=True)
with prof.step(1):
    time.sleep(0.005)
print("\n".join(prof.shutdown()))
"""


def run(tmp_path, library):
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    if not os.path.exists(fake):
        pytest.skip("the fake CUPTI is not built")
    env = dict(os.environ, RLPROF_CUPTI_LIBRARY=library or fake,
               RLPROF_FAKE_CUPTI_RECORDS=os.path.join(ROOT, "test", "data", "cupti", "step.records"))
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "out")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    caps = p.stdout.split()
    assert len(caps) == 1, p.stdout + p.stderr
    return caps[0], p.stderr


def test_device_contents_record_the_gpu_timeline(tmp_path, rlprof_cli):
    cap, _ = run(tmp_path, None)
    m = manifest(cap)
    assert m["sources"]["cupti"]["status"] == "on"
    assert m["sources"]["cupti"]["kernels"] == 4
    evs = events(rlprof_cli, cap, str(tmp_path))
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    assert len(kernels) == 4
    nccl = [e for e in kernels if e["name"].startswith("ncclDevKernel_AllReduce")]
    assert len(nccl) == 1 and nccl[0]["args"]["launch"].startswith("collective=AllReduce")
    out = subprocess.run([rlprof_cli, "summary", cap], capture_output=True, text=True, check=True).stdout
    assert "cpu-only" not in out


def test_without_libcupti_the_host_capture_goes_on(tmp_path):
    cap, err = run(tmp_path, "/nonexistent/libcupti.so.13")
    assert "rlprof: info: no device capture: libcupti not found" in err
    m = manifest(cap)
    assert m["complete"] is True
    assert m["sources"]["cupti"]["status"].startswith("off: libcupti not found")


OPS_SCRIPT = r"""
import sys, rlprof, torch
import rlprof.torch
cfg = {"rlprof": {"steps": [1], "save_path": sys.argv[1],
                  "roles": {"actor": {"ranks": [0], "contents": sys.argv[2].split(","), "level": "level1"}}}}
if len(sys.argv) > 3:  # ops_sampling, calls
    cfg["rlprof"]["roles"]["actor"]["ops_sampling"] = float(sys.argv[3])
prof = rlprof.Profiler(cfg, role="actor", quiet=True)
a = torch.ones(4)
with prof.step(1):
    for _ in range(int(sys.argv[4]) if len(sys.argv) > 4 else 3):
        torch.neg(a)
caps = prof.shutdown()
print(caps[0], rlprof.torch.stats()["correlated"])
"""


@pytest.mark.skipif(not __import__("rlprof").HAVE_TORCH_OPS, reason="built without libtorch")
@pytest.mark.parametrize("device", [True, False])
def test_operators_push_external_correlation_ids_only_with_device_capture(tmp_path, rlprof_cli, device):
    """rlprof._torch_ops pushes through the core extension's runtime: the fake CUPTI sees the
    ids (test/data/cupti/ops.records tags its two launches with the 1st and 2nd id pushed)."""
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    if not os.path.exists(fake):
        pytest.skip("the fake CUPTI is not built")
    env = dict(os.environ, RLPROF_CUPTI_LIBRARY=fake,
               RLPROF_FAKE_CUPTI_RECORDS=os.path.join(ROOT, "test", "data", "cupti", "ops.records"))
    contents = "cpu,ops,device" if device else "cpu,ops"
    p = subprocess.run([sys.executable, "-c", OPS_SCRIPT, str(tmp_path / "out"), contents], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cap, correlated = p.stdout.split()
    evs = events(rlprof_cli, cap, str(tmp_path))
    ids = [e for e in evs if e.get("name") == "external_id"]
    launches = [e for e in evs if e.get("cat") == "runtime"]
    if not device:
        assert int(correlated) == 0 and not ids and not launches
        return
    assert int(correlated) >= 3 and len(ids) == int(correlated)  # one per recorded operator
    ext = sorted(e["args"]["external_id"] for e in launches)
    assert len(ext) == 2 and ext[0] != ext[1] and ext[0] > 0, launches


@pytest.mark.skipif(not __import__("rlprof").HAVE_TORCH_OPS, reason="built without libtorch")
def test_sampled_operators_push_ids_for_the_drawn_calls_and_every_kernel_is_kept(tmp_path, rlprof_cli):
    """ops_sampling with device capture: only the drawn calls push an external id (one each, the
    same count as the operators recorded), and the device work is all there with its ids."""
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    if not os.path.exists(fake):
        pytest.skip("the fake CUPTI is not built")
    env = dict(os.environ, RLPROF_CUPTI_LIBRARY=fake,
               RLPROF_FAKE_CUPTI_RECORDS=os.path.join(ROOT, "test", "data", "cupti", "ops.records"))
    p = subprocess.run([sys.executable, "-c", OPS_SCRIPT, str(tmp_path / "out"), "cpu,ops,device",
                        "0.5", "400"], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cap, correlated = p.stdout.split()
    evs = events(rlprof_cli, cap, str(tmp_path))
    ops = [e for e in evs if e.get("cat") == "operator"]
    ids = [e for e in evs if e.get("name") == "external_id"]
    assert 120 < len(ops) < 280, len(ops)  # Binomial(400, 0.5): 200 ± 10
    assert int(correlated) == len(ids) == len(ops)
    kernels = [e for e in evs if e.get("cat") in ("kernel", "gpu_kernel")]
    launches = [e for e in evs if e.get("cat") == "runtime"]
    assert len(kernels) == 2 and len(launches) == 2
    assert all(e["args"]["external_id"] > 0 for e in launches)


H200 = os.path.join(ROOT, "test", "data", "cupti", "h200_captures")


def test_on_real_h200_captures_launch_records_attribute_kernels_as_external_ids_do():
    """Why level0 does without CUPTI external correlation: two captures of step 2 of the GRPO
    example on an H200 (test/data/cupti/README.md), one with external correlation ids (the
    level0 of the time; level1 now), one with launch records only (level0 now). Each operator
    gets the same kernels either way: by the id its launches carried, or by enclosing the
    launch record (docs/definitions.md)."""
    pytest.importorskip("pandas")
    import rlprof.analysis as ra
    by_id = ra.load(os.path.join(H200, "step2_level0_external_ids")).op_stats
    by_launch = ra.load(os.path.join(H200, "step2_launch_records_only")).op_stats
    for name, ext in (("step2_level0_external_ids", 2895), ("step2_launch_records_only", 0)):
        assert manifest(os.path.join(H200, name))["sources"]["cupti"]["external_correlation"] == ext
    a = by_id[by_id.type == "host"].set_index(["name", "shapes"])["kernels"]
    b = by_launch[by_launch.type == "host"].set_index(["name", "shapes"])["kernels"]
    assert a.sum() == b.sum() == 2663  # of 3,002 device ops; the rest launched outside operators
    assert (a[a > 0].sort_index() == b[b > 0].sort_index()).all() and len(a[a > 0]) == len(b[b > 0]) > 50


RECORDS = sorted(f for f in os.listdir(os.path.join(ROOT, "test", "data", "cupti")) if f.endswith(".records"))


@pytest.mark.parametrize("records", RECORDS)
def test_every_records_file_replays_as_its_device_work(tmp_path, rlprof_cli, records):
    """Every records file kept as test data (the synthetic ones, and those a GPU recorded with
    RLPROF_CUPTI_RECORD_DIR, test/gpu/ingest.py) replays through the fake CUPTI into a capture
    holding each of its kernels, copies and sets, counted here from the file's own lines."""
    path = os.path.join(ROOT, "test", "data", "cupti", records)
    want = {"kernel": 0, "memcpy": 0, "memset": 0}
    with open(path) as f:
        for line in f:
            word = line.split(" ", 1)[0].strip()
            if word in want:
                want[word] += 1
    assert sum(want.values()) > 0, records
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    if not os.path.exists(fake):
        pytest.skip("the fake CUPTI is not built")
    script = SCRIPT.replace('"level1"', '"level2"')
    env = dict(os.environ, RLPROF_CUPTI_LIBRARY=fake, RLPROF_FAKE_CUPTI_RECORDS=path)
    p = subprocess.run([sys.executable, "-c", script, str(tmp_path / "out")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cap = p.stdout.split()[0]
    m = manifest(cap)["sources"]["cupti"]
    assert m["status"] == "on"
    assert (m["kernels"], m["memcpy"], m["memset"]) == (want["kernel"], want["memcpy"], want["memset"])
    assert m["records_outside_windows"] == 0 and m["bad_timestamps"] == 0
    evs = events(rlprof_cli, cap, str(tmp_path))
    got = {c: sum(1 for e in evs if e.get("cat") == c and e.get("ph") == "X") for c in want}
    assert got == want


def doctor(rlprof_cli, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("RLPROF_")}
    e.update(env)
    p = subprocess.run([rlprof_cli, "doctor", "--json"], env=e, capture_output=True, text=True, timeout=120)
    return p.returncode, json.loads(p.stdout)


@pytest.mark.parametrize("case", ["on", "other_subscriber", "too_old", "missing"])
def test_doctor_says_before_the_job_what_the_capture_would_say(tmp_path, rlprof_cli, case):
    """`rlprof doctor` loads libcupti as a profiled process does and tries a subscriber: its
    status is, word for word, the manifest's `sources.cupti.status` of a capture made in the
    same environment; exit 0 when device capture would be on, 5 when off."""
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    cudart = os.path.join(BUILD, "src", "sources", "librlprof_fake_cudart.so")
    if not os.path.exists(fake):
        pytest.skip("the fake CUPTI is not built")
    env = {"RLPROF_CUPTI_LIBRARY": fake, "RLPROF_CUDART_LIBRARY": cudart,
           "RLPROF_FAKE_CUPTI_RECORDS": os.path.join(ROOT, "test", "data", "cupti", "step.records")}
    if case == "other_subscriber":
        env["RLPROF_FAKE_CUPTI_MODE"] = "other_subscriber"
    elif case == "too_old":
        env["RLPROF_FAKE_CUPTI_VERSION"] = "16"
    elif case == "missing":
        env["RLPROF_CUPTI_LIBRARY"] = "/nonexistent/libcupti.so.13"
    rc, report = doctor(rlprof_cli, **env)
    status = report["cupti"]["status"]
    assert rc == (0 if case == "on" else 5), report
    assert report["cuda_profiler"] == {"status": "on", "library": cudart, "file": cudart}
    if case == "on":
        assert report["cupti"]["library"] == fake and report["cupti"]["cupti_version"] > 130000
    if case == "other_subscriber":
        assert "nsys profile" in report["cupti"]["hint"]
    # A capture made with the same environment says the same.
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "out")], env=dict(os.environ, **env),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert manifest(p.stdout.split()[0])["sources"]["cupti"]["status"] == status


DEVICE_CONFIG = """rlprof:
  steps: [1]
  save_path: {save}
  roles:
    actor: {{ranks: [0], contents: [cpu, device], level: level0}}
    critic: {{ranks: [0], contents: [cpu]}}
"""


def doctor_config(rlprof_cli, tmp_path, save, *extra, user=None, **env):
    cfg = tmp_path / "profile.yaml"
    cfg.write_text(DEVICE_CONFIG.format(save=save))
    os.chmod(tmp_path, 0o755)
    os.chmod(cfg, 0o644)
    cmd = [rlprof_cli, "doctor", str(cfg), *extra, "--json"]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--"] + cmd
    e = {k: v for k, v in os.environ.items() if not k.startswith("RLPROF_")}
    e.update(env)
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


def test_doctor_with_a_config_names_the_roles_that_want_device_data_and_checks_save_path(tmp_path, rlprof_cli):
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    if not os.path.exists(fake):
        pytest.skip("the fake CUPTI is not built")
    save = tmp_path / "not" / "yet"
    rc, r, err = doctor_config(rlprof_cli, tmp_path, save, RLPROF_CUPTI_LIBRARY=fake)
    assert rc == 0, err
    assert r["config"]["device_roles"] == ["actor"] and r["config"]["tool"] == "rlprof"
    assert r["save_path"]["status"] == "writable" and r["save_path"]["existing"] == str(tmp_path)
    assert r["save_path"]["free_bytes"] > 0
    assert not save.exists() and sorted(os.listdir(tmp_path)) == ["profile.yaml"]  # nothing left behind
    # The same config with device data asked for nowhere: CUPTI's absence does not matter.
    rc, r, err = doctor_config(rlprof_cli, tmp_path, save, "rlprof.roles.actor.contents=[cpu]",
                               RLPROF_CUPTI_LIBRARY="/nonexistent/libcupti.so")
    assert rc == 0, err
    assert r["config"]["device_roles"] == [] and r["cupti"]["status"].startswith("off: libcupti not found")
    # Asked for and unavailable: 5.
    rc, r, err = doctor_config(rlprof_cli, tmp_path, save, RLPROF_CUPTI_LIBRARY="/nonexistent/libcupti.so")
    assert rc == 5, err


def test_doctor_says_when_save_path_cannot_be_written(tmp_path, rlprof_cli):
    (tmp_path / "a_file").write_text("x")
    rc, r, err = doctor_config(rlprof_cli, tmp_path, tmp_path / "a_file" / "runs")
    assert rc == 4, err
    assert r["save_path"]["status"] == f"off: {tmp_path / 'a_file'} is not a directory"
    # A bad config: exit 2 and the file named, as `rlprof plan` does.
    bad = tmp_path / "bad.yaml"
    bad.write_text("rlprof:\n  steps: [1]\n  bogus_key: 3\n")
    p = subprocess.run([rlprof_cli, "doctor", str(bad)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and str(bad) in p.stderr and "bogus_key" in p.stderr, p.stderr


def test_doctor_as_a_user_who_may_not_write_save_path(tmp_path, rlprof_cli):
    """As uid 65534 (root drops to it with setpriv; a non-root run is such a user already), a
    save_path under a directory it cannot write is reported with the reason, exit 4."""
    import shutil
    import tempfile
    world = tempfile.mkdtemp(prefix="rlprof-doctor-")
    try:
        os.chmod(world, 0o755)
        cli = os.path.join(world, "rlprof")
        shutil.copy2(rlprof_cli, cli)
        os.chmod(cli, 0o755)
        locked = os.path.join(world, "locked")
        os.makedirs(locked)
        os.chmod(locked, 0o755)  # enterable, not writable by others
        from pathlib import Path
        user = 65534 if os.geteuid() == 0 else None
        if user is None:
            os.chmod(locked, 0o555)
        rc, r, err = doctor_config(cli, Path(world), os.path.join(locked, "runs"), user=user)
        assert rc == 4, err
        assert r["save_path"]["status"] == f"off: cannot write under {locked} (Permission denied)"
    finally:
        for root, dirs, _ in os.walk(world):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(world, ignore_errors=True)
