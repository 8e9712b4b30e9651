"""The HTML report in a real browser (Debian's Chromium driven by Selenium): it loads without
console errors, the RL timeline draws every stage block, a click on a block shows that stage's
breakdown, zooming changes the visible range, the heatmap and the charts draw, tables filter.
Screenshots are kept under <build>/test-artifacts/ to look at."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD, ROOT

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover - scripts/setup installs it
    HAVE_SELENIUM = False

if not (CHROMIUM and CHROMEDRIVER and HAVE_SELENIUM):
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI must run the report's browser tests: scripts/setup installs chromium, "
                           "chromium-driver and selenium")
    pytest.skip("chromium, chromedriver or selenium missing (scripts/setup installs them)",
                allow_module_level=True)

RANK_SCRIPT = textwrap.dedent("""
    import pathlib, sys, time, rlprof, torch
    rank, slow = int(sys.argv[1]), float(sys.argv[2])
    cfg = {"rlprof": {"steps": [1, 2, 3], "save_path": sys.argv[3],
                      "roles": {"actor": {"ranks": [0, 1], "contents": ["cpu", "memory", "ops"]},
                                "rollout": {"ranks": [0, 1], "contents": ["cpu", "memory"]}}}}
    prof = rlprof.Profiler(cfg, rank=rank, world_size=2, roles=["actor", "rollout"],
                           run_id=sys.argv[4], quiet=True, measure_clock_offset=False)
    # Both ranks start their steps together, as a job's barrier makes them: under load one
    # process can import torch a second after the other, and its steps would then not overlap
    # the other rank's at all (a step would span the whole run on the timeline).
    barrier = pathlib.Path(sys.argv[3]).parent / ("barrier-" + sys.argv[4])
    barrier.mkdir(parents=True, exist_ok=True)
    (barrier / str(rank)).touch()
    deadline = time.monotonic() + 120
    while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    def spin(s):
        end = time.perf_counter() + s
        while time.perf_counter() < end:
            pass
    for step in range(1, 4):
        with prof.step(step):
            with rlprof.annotate("rollout_generate", role="rollout"):
                spin(0.004 * (1 + rank * slow))
            time.sleep(0.001)
            with rlprof.annotate("actor_update", role="actor"):
                spin(0.006)
                x = torch.ones(64, 64)
                for _ in range(3):
                    x = torch.mm(x, x) * 0.01   # host operators: the rank's host lane
    prof.shutdown()
""")


def _make_run(tmp_path, run_id: str, slow: float) -> str:
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    save = tmp_path / "runs"
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(slow), str(save), run_id], env=env)
             for r in (0, 1)]   # the two ranks run side by side, as in a job
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    return str(save / run_id)


@pytest.fixture(scope="module")
def report(tmp_path_factory, rlprof_cli):
    tmp = tmp_path_factory.mktemp("report")
    base = _make_run(tmp, "base", 0.0)
    new = _make_run(tmp, "new", 1.5)   # rank 1's rollout 2.5× slower
    out = str(tmp / "report.html")
    subprocess.run([rlprof_cli, "report", new, "--baseline", base, "-o", out], check=True,
                   capture_output=True, text=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1800"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def _artifacts() -> str:
    d = os.path.join(BUILD or ".", "test-artifacts")
    os.makedirs(d, exist_ok=True)
    return d


def _timeline_pointer(drv, pt):
    """The mouse moved over the timeline's lanes to `pt` (client coordinates, as blockPoint /
    spanPoint give them); .click() or .perform() it."""
    canvas = drv.find_element(By.CSS_SELECTOR, "#tl .tllanes canvas")
    r = drv.execute_script("const b = arguments[0].getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}", canvas)
    return ActionChains(drv).move_to_element_with_offset(canvas, int(pt["x"] - r["x"] - r["w"] / 2),
                                                         int(pt["y"] - r["y"] - r["h"] / 2))


def _find_block(drv, stage: str, rank: int, step: int) -> int:
    """The index of the timeline's block of `stage` on `rank` in `step`."""
    for i in range(drv.execute_script("return window.rlprofReport.timeline.blocks")):
        pt = drv.execute_script(f"return window.rlprofReport.timeline.blockPoint({i})")
        if pt["stage"] == stage and pt["rank"] == rank and pt["step"] == step:
            return i
    pytest.fail(f"no block for rank {rank}'s {stage} of step {step}")


def _click_block(drv, idx: int) -> None:
    """A click on the timeline's block `idx`, at its point in the viewport (blockPoint scrolls
    the lanes' box to its row first). The pointer goes to those coordinates themselves: a move
    relative to the canvas assumed the pointer at the canvas's centre, but WebDriver puts it at
    the centre of the canvas's visible part, which differs whenever the lanes' box clips the
    canvas (how many lanes a run has), and the click then missed its row."""
    canvas = drv.find_element(By.CSS_SELECTOR, "#tl .tllanes canvas")
    ActionChains(drv).move_to_element(canvas).perform()   # scrolled into view, if need be
    pt = drv.execute_script(f"return window.rlprofReport.timeline.blockPoint({idx})")
    ab = ActionBuilder(drv)
    ab.pointer_action.move_to_location(int(round(pt["x"])), int(round(pt["y"]))).click()
    ab.perform()

def _severe(drv):
    return [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]


def test_report_loads_without_console_errors_and_draws_every_section(browser, report):
    browser.get("file://" + report)
    assert _severe(browser) == []
    tl = browser.execute_script("return window.rlprofReport.timeline && "
                                "{lanes: window.rlprofReport.timeline.lanes, blocks: window.rlprofReport.timeline.blocks}")
    # 2 roles × 2 ranks lanes; 2 stages × 3 steps × 2 ranks blocks.
    assert tl == {"lanes": 4, "blocks": 12}
    assert browser.find_element(By.ID, "hm").find_element(By.TAG_NAME, "canvas").size["height"] > 20
    # Chart.js is embedded: the stage chart and the comparison chart are drawn.
    assert browser.execute_script("return typeof Chart") == "function"
    for cid in ("stagechart", "comparechart"):
        assert browser.execute_script(f"return !!Chart.getChart(document.getElementById('{cid}'))"), cid
    # The cluster view: the 2-rank run has no collectives, and says so rather than drawing nothing.
    cluster = browser.find_element(By.ID, "cluster").text
    assert "Slow ranks" in cluster and "no collectives in this run" in cluster
    # Memory over time: the captures sampled RSS at stage boundaries.
    assert browser.execute_script("return !!Chart.getChart(document.getElementById('memorychart'))")
    assert "rss" in browser.find_element(By.ID, "memory").text.lower()
    text = browser.find_element(By.ID, "steps").text
    assert "step 1" in text and "rank 1" in text
    # Each rank's main thread is a host lane: its outermost operators (aten::mm, aten::mul …).
    act = browser.execute_script("return window.rlprofReport.timeline.activity.lanes")
    host = [l for l in act if not l["device"]]
    assert sorted({l["rank"] for l in host}) == [0, 1], act
    for rank in (0, 1):   # 3 steps × 3 torch.mm at least, outermost
        assert max(l["events"] for l in host if l["rank"] == rank) >= 9, host
    browser.save_screenshot(os.path.join(_artifacts(), "report_overview.png"))


def test_a_click_on_a_stage_shows_its_breakdown_and_operators(browser, report):
    browser.get("file://" + report)
    _click_block(browser, _find_block(browser, "rollout_generate", 1, 2))   # the slow rank's
    detail = browser.find_element(By.ID, "stagedetail").text
    assert "rollout_generate · rollout · rank 1 · step 2" in detail
    assert "compute only" in detail and "idle" in detail and "duration" in detail
    assert "baseline run" in detail   # the comparison's number for this stage
    assert _severe(browser) == []
    browser.save_screenshot(os.path.join(_artifacts(), "report_stage_detail.png"))


def test_zoom_changes_the_visible_range_and_reset_restores_it(browser, report):
    browser.get("file://" + report)
    tl = browser.find_element(By.ID, "tl")
    a0, b0 = float(tl.get_attribute("data-view-start")), float(tl.get_attribute("data-view-end"))
    browser.find_element(By.ID, "tlzoomin").click()
    a1, b1 = float(tl.get_attribute("data-view-start")), float(tl.get_attribute("data-view-end"))
    assert b1 - a1 < (b0 - a0) * 0.7
    # The keyboard zooms too (W in, S out), and the step selector frames one step.
    tl.click()
    tl.send_keys("w")
    a2, b2 = float(tl.get_attribute("data-view-start")), float(tl.get_attribute("data-view-end"))
    assert b2 - a2 < b1 - a1
    browser.execute_script("const s = document.getElementById('tlstep'); s.value = '2'; s.dispatchEvent(new Event('change'))")
    a3, b3 = float(tl.get_attribute("data-view-start")), float(tl.get_attribute("data-view-end"))
    assert 0 < b3 - a3 < b0 - a0
    browser.find_element(By.ID, "tlreset").click()
    assert (float(tl.get_attribute("data-view-start")), float(tl.get_attribute("data-view-end"))) == (a0, b0)
    assert _severe(browser) == []
    browser.save_screenshot(os.path.join(_artifacts(), "report_zoomed.png"))


def test_heatmap_metric_and_table_filter(browser, report):
    browser.get("file://" + report)
    legend0 = browser.find_element(By.ID, "hmtools").text
    browser.execute_script("const s = document.getElementById('hmmetric'); s.value = 'stage:rollout_generate'; s.dispatchEvent(new Event('change'))")
    assert browser.find_element(By.ID, "hmtools").text != legend0
    box = browser.find_element(By.CSS_SELECTOR, "#runviewtable input.filter")
    n0 = len(browser.find_elements(By.CSS_SELECTOR, "#runviewtable tbody tr"))
    box.send_keys("actor_update")
    rows = browser.find_elements(By.CSS_SELECTOR, "#runviewtable tbody tr")
    assert 0 < len(rows) < n0
    assert all("actor_update" in r.text for r in rows)
    assert _severe(browser) == []


def test_hostile_names_stay_text(browser, tmp_path, rlprof_cli):
    evil = "<img src=x onerror=window.__pwned=1>"
    script = tmp_path / "evil.py"
    script.write_text(textwrap.dedent(f"""
        import sys, rlprof
        prof = rlprof.Profiler({{"rlprof": {{"steps": [1], "save_path": sys.argv[1],
                               "roles": {{"actor": {{"ranks": [0]}}}}}}}}, rank=0, world_size=1,
                               roles=["actor"], run_id="evil", quiet=True, measure_clock_offset=False)
        with prof.step(1):
            with rlprof.annotate({json.dumps(evil)}, role="actor"):
                pass
            with rlprof.annotate("actor_update", role="actor"):
                with rlprof.annotate({json.dumps(evil)}):
                    pass
        prof.shutdown()
    """))
    subprocess.run([sys.executable, str(script), str(tmp_path / "runs")], check=True, timeout=120)
    out = str(tmp_path / "evil.html")
    subprocess.run([rlprof_cli, "report", str(tmp_path / "runs" / "evil"), "-o", out], check=True,
                   capture_output=True, timeout=120)
    browser.get("file://" + out)
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []


def test_a_512_rank_run_stays_small_readable_and_clickable(browser, tmp_path, rlprof_cli):
    """The compact report model at scale (docs/scale.md): a synthetic 512-rank × 2-step GRPO run
    (bench/synth_run) gives a page of well under 1 MB that draws without console errors, packs
    1,536 (role, rank) lanes into at most 400 rows, and still opens a stage's breakdown."""
    synth = os.path.join(BUILD or "", "bench", "synth_run")
    if not os.access(synth, os.X_OK):
        pytest.skip("bench/synth_run is not built")
    subprocess.run([synth, str(tmp_path / "runs"), "--ranks", "512", "--steps", "2", "--run-id", "big"],
                   check=True, capture_output=True, timeout=120)
    out = str(tmp_path / "big.html")
    subprocess.run([rlprof_cli, "report", str(tmp_path / "runs" / "big"), "-o", out], check=True,
                   capture_output=True, text=True, timeout=120)
    assert os.path.getsize(out) < 1_250_000   # ≈ 0.5 KB per rank-step (2.1 MB at 1,024 × 4)
    browser.get("file://" + out)
    assert _severe(browser) == []
    tl = browser.execute_script("const t = window.rlprofReport.timeline; return {lanes: t.lanes, rows: t.rows, blocks: t.blocks}")
    assert tl["lanes"] == 512 * 3 and tl["rows"] <= 400 and tl["blocks"] == 512 * 2 * 4
    # The findings head the page (here: the synthetic run's exposed communication first).
    assert browser.execute_script("return window.rlprofReport.findings.ids()")[0] == "device.comm_exposed"
    # The straggler (the last rank) is the one its row's rollout block stands for.
    idx = browser.execute_script(
        "const b = window.rlprofReport.timeline; for (let i = 0; i < b.blocks; i++) { const p = b.blockPoint(i);"
        " if (p.stage === 'rollout_generate' && p.rank === 511 && p.step === 2) return i; } return -1")
    assert idx >= 0
    _click_block(browser, idx)
    detail = browser.find_element(By.ID, "stagedetail").text
    assert "rollout_generate · rollout · rank 511 · step 2" in detail
    assert "of the whole run" in detail and "aten::mm" in detail   # operators summed over the run
    browser.save_screenshot(os.path.join(_artifacts(), "report_512_ranks.png"))


def test_a_gpu_trace_has_step_blocks_and_a_lane_per_stream(browser, tmp_path, rlprof_cli):
    """A plain Kineto trace (HTA's trace_diff control: 5 ProfilerSteps, ~9,400 device events on
    4 CUDA streams): the timeline draws its step windows, and one lane per stream whose spans
    merge the kernels across the shortest gaps (≤ 4,000 per lane), hover with their counts and
    zoom in on a click; the checkbox hides the lanes."""
    src = os.path.join(ROOT, "test", "data", "fixtures", "kineto", "hta_trace_diff_control_control.json.gz")
    out = str(tmp_path / "gpu.html")
    subprocess.run([rlprof_cli, "report", src, "-o", out], check=True, capture_output=True, text=True, timeout=120)
    browser.get("file://" + out)
    assert _severe(browser) == []
    t = browser.execute_script("const t = window.rlprofReport.timeline; return {blocks: t.blocks, steps: t.stepBlocks, lanes: t.activity.lanes}")
    assert t["steps"] and t["blocks"] >= 4
    assert "1 ranks × 6 steps" in browser.find_element(By.ID, "hmtools").text   # the heatmap of step windows
    dev = [l for l in t["lanes"] if l["device"]]
    assert [l["name"] for l in dev] == ["device 3 stream 7", "device 3 stream 20", "device 3 stream 21", "device 3 stream 22"]
    s7 = dev[0]
    assert s7["events"] > 8000 and s7["spans"] <= 4000
    i = t["lanes"].index(s7)
    pt = browser.execute_script(f"return window.rlprofReport.timeline.activity.spanPoint({i})")
    assert pt["visible"] and pt["count"] > 1 and pt["cls"] == "compute"
    _timeline_pointer(browser, pt).perform()
    tip = browser.find_element(By.ID, "tip").text
    assert "device 3 stream 7 · rank" in tip and "kernels" in tip and "longest:" in tip, tip
    browser.save_screenshot(os.path.join(_artifacts(), "report_gpu_lanes.png"))
    tl = browser.find_element(By.ID, "tl")
    w0 = float(tl.get_attribute("data-view-end")) - float(tl.get_attribute("data-view-start"))
    ActionChains(browser).click().perform()   # a merged span: zoom into it
    w1 = float(tl.get_attribute("data-view-end")) - float(tl.get_attribute("data-view-start"))
    assert w1 < w0 * 0.5
    browser.save_screenshot(os.path.join(_artifacts(), "report_gpu_lanes_zoomed.png"))
    browser.find_element(By.ID, "tlact").click()
    assert browser.execute_script("return window.rlprofReport.timeline.activity.shown()") is False
    assert _severe(browser) == []


def test_an_async_run_has_pool_lanes_version_bands_and_its_tables(browser, tmp_path, rlprof_cli):
    """An asynchronous run (bench/synth_async: 40 rollout replicas, 8 trainers, 4 versions) gets
    the async section: a lane per process (at most 32 per pool), one band per version interval
    (the start-up and each published version), the verdict, the version intervals and the pools;
    hovering a trainer's lane inside a version's band names the interval."""
    synth = os.path.join(BUILD or "", "bench", "synth_async")
    if not os.access(synth, os.X_OK):
        pytest.skip("bench/synth_async is not built")
    subprocess.run([synth, str(tmp_path / "runs"), "--rollout", "40", "--trainers", "8", "--versions", "4",
                    "--run-id", "async"], check=True, capture_output=True, timeout=120)
    out = str(tmp_path / "async.html")
    subprocess.run([rlprof_cli, "report", str(tmp_path / "runs" / "async"), "-o", out], check=True,
                   capture_output=True, text=True, timeout=120)
    browser.get("file://" + out)
    assert _severe(browser) == []
    a = browser.execute_script("return window.rlprofReport.async")
    assert a["lanes"] == 8 + 32 and a["processes"] == 48 and a["bands"] == 1 + 4 and a["segments"] > 0
    assert not browser.find_element(By.ID, "async").get_attribute("hidden")
    kpis = browser.find_element(By.ID, "asynckpis").text
    assert "8 + 40" not in kpis and "40 + 8" in kpis and "versions published" in kpis
    assert "train-bound" in kpis or "rollout-bound" in kpis or "balanced" in kpis
    versions = browser.find_element(By.ID, "asyncversions").text
    assert "trainer_steps" in versions and "exposed_generation" in versions
    assert "pool rollout" in browser.find_element(By.ID, "asyncpools").text
    assert "publisher_transfer" in browser.find_element(By.ID, "asyncsyncs").text
    # A trainer (lane 0, rank 0) half-way through version 1's interval: the tip names it.
    bands = browser.execute_script(
        "const t = JSON.parse(document.getElementById('rlprof-data').textContent).async.versions;"
        "const c = t.columns.map(c => c.name); return t.rows.map(r => [r[c.indexOf('version')], r[c.indexOf('start')], r[c.indexOf('duration')]])")
    v1 = next(b for b in bands if b[0] == 1)
    canvas = browser.find_element(By.ID, "asynccanvas")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    pt = browser.execute_script(f"return window.rlprofReport.async.point(0, {v1[1] + v1[2] / 2})")
    r = browser.execute_script("const b = arguments[0].getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}", canvas)
    ActionChains(browser).move_to_element_with_offset(canvas, int(pt["x"] - r["x"] - r["w"] / 2),
                                                      int(pt["y"] - r["y"] - r["h"] / 2)).perform()
    tip = browser.execute_script("const t = [...document.querySelectorAll('div')].find(d => d.style.display === 'block' && d.textContent.includes('version interval')); return t ? t.textContent : ''")
    assert "actor · rank 0" in tip and "version interval v1" in tip, tip
    browser.find_element(By.ID, "async").screenshot(os.path.join(_artifacts(), "report_async.png"))


def test_a_run_with_samples_draws_each_sample_longest_first_with_the_tail(browser, tmp_path, rlprof_cli):
    """A rollout with a planted tail (examples/sample_tail/plant_tail.py: 2 steps of 100 samples
    on 4 replicas, the 5 longest 8× the rest, all on replica 0) gets the samples section: the tail
    figures per step (sample_tail's numbers), a step selector, one row per sample longest first
    with the p90 / p100 markers, a tooltip per sample, and a link to the step in the timeline."""
    out_dir = tmp_path / "tail"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.join(BUILD or "", "python"), env.get("PYTHONPATH", "")] if p)
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "sample_tail", "plant_tail.py"), "--out", str(out_dir)],
                   check=True, capture_output=True, env=env, timeout=120)
    truth = json.loads((out_dir / "truth.json").read_text())["planted"]
    out = str(tmp_path / "samples.html")
    subprocess.run([rlprof_cli, "report", str(out_dir / "profile"), "-o", out], check=True,
                   capture_output=True, text=True, timeout=120)
    browser.get("file://" + out)
    assert _severe(browser) == []
    sec = browser.find_element(By.ID, "samples")
    assert not sec.get_attribute("hidden")
    assert browser.find_elements(By.CSS_SELECTOR, "nav a[href='#samples']")
    s = browser.execute_script("return window.rlprofReport.samples && {steps: window.rlprofReport.samples.steps, "
                               "step: window.rlprofReport.samples.step(), drawn: window.rlprofReport.samples.drawn(), "
                               "left: window.rlprofReport.samples.leftOut(), rows: window.rlprofReport.samples.rows(), "
                               "markers: window.rlprofReport.samples.markers()}")
    assert s["steps"] == [1, 2] and s["drawn"] == 100 and s["left"] == 0
    # Longest first: the 5 long samples (replica 0, finish "length") lead, then the short ones.
    lengths = [r["length"] for r in s["rows"]]
    assert lengths == sorted(lengths, reverse=True)
    assert [r["finish"] for r in s["rows"][:5]] == ["length"] * 5 and {r["replica"] for r in s["rows"][:5]} == {0}
    assert s["rows"][0]["length"] == pytest.approx(truth["p100"]) and s["rows"][-1]["length"] == pytest.approx(truth["p90"])
    assert all(r["id"].startswith(f"s{s['step']}-") for r in s["rows"])
    # The markers: the step's p90 and p100 (µs from its first submit), p90 left of p100.
    assert s["markers"]["p90"] == pytest.approx(truth["p90"]) and s["markers"]["p100"] == pytest.approx(truth["p100"])
    assert s["markers"]["x90"] < s["markers"]["x100"]
    # The tail table: one row per step, with the planted figures (ms) and the what-ifs as estimates.
    tail = browser.find_element(By.ID, "samplestail").text
    assert "estimates from the same records" in tail
    assert "stop at p95: saves (ms)" in tail and "partial rollout at p90: saves (ms)" in tail
    assert f"step 1 {truth['p100'] / 1e3:,.2f} {truth['p95_saves'] / 1e3:,.2f} {math.ceil(100 / 0.95 - 1e-9) - 100} {truth['partial_saves'] / 1e3:,.2f} " \
           f"{truth['partial_carried']} {truth['partial_carried_tokens']:,}" in tail, tail
    assert f"{truth['tail'] / 1e3:,.2f}" in tail and f"{truth['p100'] / 1e3:,.2f}" in tail
    assert "step 1" in tail and "step 2" in tail
    kpis = browser.find_element(By.ID, "sampleskpis").text
    assert "200\nsamples recorded in 2 step(s)" in kpis and "est." in kpis
    # The step selector draws the other step.
    other = 2 if s["step"] == 1 else 1
    Select(browser.find_element(By.ID, "samplesstep")).select_by_value(str(other))
    s2 = browser.execute_script("return {step: window.rlprofReport.samples.step(), rows: window.rlprofReport.samples.rows()}")
    assert s2["step"] == other and all(r["id"].startswith(f"s{other}-") for r in s2["rows"])
    assert [r["length"] for r in s2["rows"]] == sorted((r["length"] for r in s2["rows"]), reverse=True)
    assert f"step {other} in the RL timeline" in browser.find_element(By.ID, "samplestl").text
    # A click on a step in the tail table selects it too.
    link = next(a for a in browser.find_elements(By.CSS_SELECTOR, "#samplestail a.samplesteplink") if a.text == f"step {s['step']}")
    link.click()
    assert browser.execute_script("return window.rlprofReport.samples.step()") == s["step"]
    # Hovering the longest sample names it, its replica, finish reason and that it ends in the tail.
    canvas = browser.find_element(By.ID, "samplescanvas")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    pt = browser.execute_script("return window.rlprofReport.samples.point(0)")
    r = browser.execute_script("const b = arguments[0].getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}", canvas)
    ActionChains(browser).move_to_element_with_offset(canvas, int(pt["x"] - r["x"] - r["w"] / 2),
                                                      int(pt["y"] - r["y"] - r["h"] / 2)).perform()
    tip = browser.find_element(By.ID, "tip").text
    assert s["rows"][0]["id"] in tip and "replica 0" in tip and "finish length" in tip and "in the tail" in tip, tip
    ActionChains(browser).move_to_element(browser.find_element(By.CSS_SELECTOR, "#samples h2")).perform()
    browser.find_element(By.ID, "samples").screenshot(os.path.join(_artifacts(), "report_samples.png"))
    # The link to the timeline zooms it to the step.
    full = browser.execute_script("return window.rlprofReport.timeline.view()")
    browser.find_element(By.ID, "samplestl").click()
    assert browser.find_element(By.ID, "tlstep").get_attribute("value") == str(s["step"])
    view = browser.execute_script("return window.rlprofReport.timeline.view()")
    assert view["b"] - view["a"] < 0.8 * (full["b"] - full["a"]), (full, view)
    assert _severe(browser) == []
    # The advisor's findings head the page: the planted tail first, with its saving, how, action.
    browser.execute_script("window.scrollTo(0, 0)")
    fs = browser.find_element(By.ID, "findings")
    assert not fs.get_attribute("hidden") and browser.find_elements(By.CSS_SELECTOR, "nav a[href='#findings']")
    assert browser.execute_script("return window.rlprofReport.findings.ids()")[0] == "rl.generation_tail"
    first = browser.find_element(By.CSS_SELECTOR, "#findingsbody .finding")
    assert first.get_attribute("data-id") == "rl.generation_tail"
    assert "high" in first.text and "saves ≈" in first.text and "How:" in first.text and "Action:" in first.text
    fs.screenshot(os.path.join(_artifacts(), "report_findings.png"))
    first.find_element(By.CSS_SELECTOR, "a.evlink").click()  # its step, in the timeline
    assert browser.find_element(By.ID, "tlstep").get_attribute("value") in ("1", "2")
    assert _severe(browser) == []


def test_a_run_without_samples_has_no_samples_section(browser, report):
    browser.get("file://" + report)
    assert browser.find_element(By.ID, "samples").get_attribute("hidden")
    assert not browser.find_elements(By.CSS_SELECTOR, "nav a[href='#samples']")
    assert browser.execute_script("return window.rlprofReport.samples === undefined")
    assert browser.execute_script("return JSON.parse(document.getElementById('rlprof-data').textContent).samples === undefined")


def test_sampled_operators_are_marked_as_estimates(browser, report, tmp_path, rlprof_cli):
    # The same two ranks with one operator call in four recorded (`ops_sampling: 0.25`): the
    # Operators section and a stage's detail say their figures are estimates; a run recording
    # every call (the module's report) says nothing of the kind.
    browser.get("file://" + report)
    assert "estimates" not in browser.find_element(By.CSS_SELECTOR, "#ops h2").text
    assert not browser.find_elements(By.ID, "opsampled")
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT.replace('"contents": ["cpu", "memory", "ops"]}',
                                          '"contents": ["cpu", "memory", "ops"], "ops_sampling": 0.25}'))
    save = tmp_path / "runs"
    procs = [subprocess.Popen([sys.executable, str(script), str(r), "0", str(save), "sampled"])
             for r in (0, 1)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    out = str(tmp_path / "sampled.html")
    subprocess.run([rlprof_cli, "report", str(save / "sampled"), "-o", out], check=True,
                   capture_output=True, text=True, timeout=120)
    browser.get("file://" + out)
    assert browser.find_element(By.CSS_SELECTOR, "#ops h2").text.endswith("(estimates)")
    note = browser.find_element(By.ID, "opsampled").text
    assert "6 of 6 captures recorded a share of the operator calls (ops_sampling 0.25)" in note  # 3 steps × 2 ranks
    assert "estimates" in note
    _click_block(browser, _find_block(browser, "actor_update", 0, 2))
    detail = browser.find_element(By.ID, "stagedetail").text
    assert "Top operators and kernels (estimates)" in detail
    assert "one operator call in 4 recorded (ops_sampling 0.25)" in detail
    assert _severe(browser) == []
    browser.find_element(By.ID, "ops").screenshot(os.path.join(_artifacts(), "report_ops_sampled.png"))
