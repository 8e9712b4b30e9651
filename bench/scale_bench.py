#!/usr/bin/env python3
"""Scale benchmark (issue 13 "Scale", issue 12 "Size and speed"): synthetic GRPO runs of
64, 256 and 1,024 ranks × 4 steps (bench/synth_run), then for each, measured in the same run:

  run view    `rlprof summary RUN --view rl`   (every capture analysed, the run view printed)
  cluster     `rlprof cluster RUN`             (slow ranks, collective skew)
  report      `rlprof report RUN -o R.html`    (the HTML report)
  timeline    `rlprof export RUN -o run.pftrace --detail-ranks 0 --detail-steps 1`
              (the merged run timeline: stages of every rank, operators of rank 0 step 1)

wall time and peak RSS of each command, and per rank-step (time and RSS divided by R × S,
relative to the smallest run: 1.0 = linear, below = better than linear). Then the largest
report in headless Chromium (Debian's chromium + chromedriver, selenium from the project
.venv): page size and time from navigation start to every section drawn
(window.rlprofReport.readyMs), and a screenshot. Targets: run view + cluster + report < 10 s
at 1,024 ranks; report <= 5 MB and interactive < 2 s. Prints figures only; exits 0.

  .venv/bin/python bench/scale_bench.py [--build build] [--sizes 64,256,1024] [--steps 4]
                                        [--mode e2e|discrete] [--out DIR] [--no-browser]

With --async ROLLOUT:TRAINERS (issue 32: 1024:256): a synthetic asynchronous run of that many
rollout replicas and trainer ranks (bench/synth_async: 8 versions, rlprof.rl's records) against
its baseline in the same run, a synchronous GRPO run of as many ranks (synth_run, 1 step): the
async view (`summary --view async`: pools, verdict, version intervals), the run view and the
report of each, wall time and peak RSS, and the async run's total against the target (< 10 s).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) of the child (wait4's rusage), its stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err.read()[-2000:]}")
        return wall, ru.ru_maxrss / 1024, out.read()


def browser_figures(html: str, shot: str) -> tuple[float, float] | None:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print("browser: selenium missing (run with the project .venv)")
        return None
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        print("browser: chromium / chromedriver missing (scripts/setup installs them)")
        return None
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1800"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(driver), options=opts)
    try:
        drv.set_page_load_timeout(120)
        best = None
        for _ in range(3):  # the first load also warms the browser's caches: keep the best
            drv.get("about:blank")
            drv.get("file://" + os.path.abspath(html))
            ready = drv.execute_script("return window.rlprofReport && window.rlprofReport.readyMs")
            load = drv.execute_script(
                "const n = performance.getEntriesByType('navigation')[0]; return n ? n.loadEventEnd : null")
            if ready is None:
                print("browser: the page did not finish drawing")
                return None
            best = (ready, load) if best is None or ready < best[0] else best
        errors = [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
        if errors:
            print(f"browser: {len(errors)} console error(s): {errors[0].get('message', '')[:200]}")
        drv.save_screenshot(shot)
        return best
    finally:
        drv.quit()


def async_main(a: argparse.Namespace, rlprof: str, out: str) -> int:
    rollout, trainers = (int(x) for x in a.async_sizes.split(":"))
    synth_async = os.path.join(a.build, "bench", "synth_async")
    synth = os.path.join(a.build, "bench", "synth_run")
    for b in (synth_async, synth):
        if not os.path.exists(b):
            sys.exit(f"{b} missing: cmake --build {a.build} --target synth_async synth_run")
    runs = {}
    save = os.path.join(out, "async")
    shutil.rmtree(save, ignore_errors=True)
    gen = subprocess.run([synth_async, save, "--rollout", str(rollout), "--trainers", str(trainers),
                          "--run-id", "async"], capture_output=True, text=True, check=True)
    print(gen.stdout.strip())
    runs["async"] = os.path.join(save, "async")
    save = os.path.join(out, "sync")
    shutil.rmtree(save, ignore_errors=True)
    subprocess.run([synth, save, "--ranks", str(rollout + trainers), "--steps", "1", "--run-id", "sync"],
                   capture_output=True, text=True, check=True)
    runs["baseline"] = os.path.join(save, "sync")
    print(f"{'run':<9} {'command':<11} {'wall s':>8} {'peak MB':>8}")
    totals = {}
    for which, run_dir in runs.items():
        html = os.path.join(out, f"report-{which}.html")
        cmds = {"async view": [rlprof, "summary", run_dir, "--view", "async"],
                "run view": [rlprof, "summary", run_dir, "--view", "rl"],
                "report": [rlprof, "report", run_dir, "-o", html]}
        totals[which] = 0.0
        for name, cmd in cmds.items():
            wall, rss, text = measure(cmd)
            totals[which] += wall
            print(f"{which:<9} {name:<11} {wall:>8.2f} {rss:>8.1f}")
            if which == "async" and name == "async view" and "async_versions" not in text:
                sys.exit("the async view printed no version intervals:\n" + text[-2000:])
    t = totals["async"]
    print(f"async run of {rollout} rollout replicas + {trainers} trainers: async view + run view + report "
          f"{t:.2f} s (target < 10 s: {'met' if t < 10 else 'NOT met'}); baseline (synchronous, "
          f"{rollout + trainers} ranks x 1 step) {totals['baseline']:.2f} s, ratio {t / totals['baseline']:.2f}")
    print(f"files kept in {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("RLPROF_BUILD_DIR", "build"))
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--mode", default="e2e", choices=["e2e", "discrete"])
    ap.add_argument("--out", help="keep the runs, reports and screenshot here (default: a temp dir)")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--async", dest="async_sizes", metavar="ROLLOUT:TRAINERS",
                    help="the async run instead (e.g. 1024:256) against a synchronous baseline")
    a = ap.parse_args()
    rlprof = os.path.join(a.build, "bin", "rlprof")
    if a.async_sizes:
        if not os.path.exists(rlprof):
            sys.exit(f"{rlprof} missing: cmake --build {a.build} --target rlprof")
        out = a.out or tempfile.mkdtemp(prefix="rlprof-scale-async-")
        os.makedirs(out, exist_ok=True)
        return async_main(a, rlprof, out)
    synth = os.path.join(a.build, "bench", "synth_run")
    for b in (rlprof, synth):
        if not os.path.exists(b):
            sys.exit(f"{b} missing: cmake --build {a.build} --target rlprof synth_run")
    out = a.out or tempfile.mkdtemp(prefix="rlprof-scale-")
    os.makedirs(out, exist_ok=True)
    sizes = [int(s) for s in a.sizes.split(",")]
    rows = []
    print(f"{'ranks':>6} {'steps':>5} {'captures':>8} {'command':<9} {'wall s':>8} {'peak MB':>8} "
          f"{'µs/rank-step':>12} {'KB/rank-step':>12} {'time ×lin':>9} {'rss ×lin':>8}")
    base: dict[str, tuple[float, float]] = {}
    largest_html = None
    for n in sizes:
        save = os.path.join(out, f"r{n}")
        shutil.rmtree(save, ignore_errors=True)
        gen = subprocess.run([synth, save, "--ranks", str(n), "--steps", str(a.steps), "--mode", a.mode,
                              "--run-id", "synth"], capture_output=True, text=True, check=True)
        captures = gen.stdout.split(" captures")[0].rsplit(" ", 1)[-1]
        run_dir = os.path.join(save, "synth")
        html = os.path.join(out, f"report-{n}.html")
        trace = os.path.join(out, f"run-{n}.pftrace")
        cmds = {"run view": [rlprof, "summary", run_dir, "--view", "rl"],
                "cluster": [rlprof, "cluster", run_dir],
                "report": [rlprof, "report", run_dir, "-o", html],
                "timeline": [rlprof, "export", run_dir, "-o", trace, "--detail-ranks", "0",
                             "--detail-steps", "1"]}
        rank_steps = n * a.steps
        total = 0.0
        for name, cmd in cmds.items():
            wall, rss, _ = measure(cmd)
            if name != "timeline":
                total += wall
            per_t, per_m = wall / rank_steps * 1e6, rss * 1024 / rank_steps
            if name not in base:
                base[name] = (per_t, rss / rank_steps)
            lin_t = per_t / base[name][0]
            lin_m = (rss / rank_steps) / base[name][1]
            print(f"{n:>6} {a.steps:>5} {captures:>8} {name:<9} {wall:>8.2f} {rss:>8.1f} {per_t:>12.0f} "
                  f"{per_m:>12.1f} {lin_t:>9.2f} {lin_m:>8.2f}")
            rows.append((n, name, wall, rss))
        size = os.path.getsize(html)
        tbytes = os.path.getsize(trace)
        print(f"{n:>6} ranks: run view + cluster + report {total:.2f} s (target < 10 s); report "
              f"{size / 1e6:.2f} MB (target <= 5 MB); merged timeline {tbytes / 1e6:.2f} MB = "
              f"{tbytes / rank_steps:.0f} B per rank-step (stages only past the detailed rank-step)")
        largest_html = html
    if not a.no_browser and largest_html:
        shot = os.path.join(out, f"report-{sizes[-1]}.png")
        fig = browser_figures(largest_html, shot)
        if fig:
            ready, load = fig
            print(f"browser ({sizes[-1]} ranks): every section drawn {ready:.0f} ms after navigation "
                  f"start (target < 2000 ms), load event {load:.0f} ms; screenshot {shot}")
    print(f"files kept in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
