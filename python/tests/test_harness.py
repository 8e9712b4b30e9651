"""The test harness's own contract (conftest.run_job): long jobs are stopped for silence, not
for being slow; their whole process group goes with them."""
from __future__ import annotations

import os
import sys
import time

from conftest import run_job


def test_a_silent_job_is_stopped_with_its_children_and_its_output_kept(tmp_path):
    pid_file = tmp_path / "child.pid"
    code = ("import os, subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
            f"open({str(pid_file)!r}, 'w').write(str(c.pid))\n"
            "print('started', flush=True)\n"
            "time.sleep(600)\n")
    log = tmp_path / "job.log"
    r = run_job([sys.executable, "-c", code], dict(os.environ), log_path=str(log), stall_s=3)
    assert r.stopped == "printed nothing for 3 s"
    assert r.returncode != 0
    assert "started" in r.stdout and "started" in log.read_text()
    child = int(pid_file.read_text())
    # The grandchild went with the group: gone, or a zombie of no one's. A SIGKILL takes effect
    # when the process next runs, which a loaded machine may delay: no deadline but a long one.
    state = ""
    for _ in range(600):
        try:
            os.kill(child, 0)
            with open(f"/proc/{child}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            state = "gone"
        if state in ("gone", "Z", "X"):
            break
        time.sleep(0.1)
    assert state in ("gone", "Z", "X"), state


def test_a_job_that_ends_is_read_to_its_end():
    r = run_job([sys.executable, "-c", "import sys; print('x' * 200000); sys.stderr.write('e'); sys.exit(3)"],
                dict(os.environ))
    assert (r.returncode, r.stopped, len(r.stdout), r.stderr) == (3, "", 200001, "e")
