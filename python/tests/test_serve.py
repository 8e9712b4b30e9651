"""`rlprof serve`: the run list, reports analysed on first view and cached, comparisons,
.pftrace downloads; read-only, loopback by default, a token elsewhere, and nothing outside the
save path reachable (traversal attempts, links), hostile names escaped."""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import BUILD

RANK = textwrap.dedent("""
    import sys, rlprof
    save, run_id, name = sys.argv[1], sys.argv[2], sys.argv[3]
    prof = rlprof.Profiler({"rlprof": {"steps": [1, 2], "save_path": save,
                            "roles": {"actor": {"ranks": [0]}}}}, rank=0, world_size=1,
                           roles=["actor"], run_id=run_id, quiet=True, measure_clock_offset=False)
    for step in (1, 2):
        with prof.step(step):
            with rlprof.annotate("actor_update", role="actor"):
                with rlprof.annotate(name):
                    sum(range(20000))
    prof.shutdown()
""")

EVIL = "<img src=x onerror=window.__pwned=1>"


@pytest.fixture(scope="module")
def save_path(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    script = tmp / "rank.py"
    script.write_text(RANK)
    save = tmp / "save"
    for run_id, name in (("run-a", "forward"), ("run-b", "forward"), ("evil", EVIL)):
        subprocess.run([sys.executable, str(script), str(save), run_id, name], check=True, timeout=120)
        time.sleep(0.05)
    os.rename(save / "evil", save / EVIL)   # the runtime sanitises run ids; a user's folder need not be
    # A link to a run outside the save path must not be served.
    outside = tmp / "outside"
    subprocess.run([sys.executable, str(script), str(outside), "secret", "forward"], check=True, timeout=120)
    os.symlink(outside / "secret", save / "linked-secret")
    return save


class Server:
    def __init__(self, cli, save, *args, env=None):
        self.proc = subprocess.Popen([cli, "serve", str(save), "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=None if env is None else {**os.environ, **env})
        deadline = time.time() + 30
        self.url = None
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            m = re.search(r"(http://\S+)", line or "")
            if m:
                self.url = m.group(1)
                break
        assert self.url, self.proc.stderr.read() if self.proc.poll() is not None else "no URL printed"
        self.base = re.match(r"(http://[^/]+)", self.url).group(1)
        self.query = self.url[self.url.index("/", 7) + 1:]

    def get(self, path, method="GET"):
        req = urllib.request.Request(self.base + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=30)
        return self.proc.returncode, out


@pytest.fixture(scope="module")
def server(rlprof_cli, save_path):
    s = Server(rlprof_cli, save_path)
    yield s
    rc, out = s.stop()
    assert rc == 0 and "stopped" in out


def test_lists_runs_newest_first_with_escaped_names(server):
    status, body, headers = server.get("/")
    page = body.decode()
    assert status == 200 and "text/html" in headers["Content-Type"]
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    ids = re.findall(r'class="report" href="/runs/([^/]+)/report.html">', page)
    assert ids == ["%3Cimg%20src%3Dx%20onerror%3Dwindow.__pwned%3D1%3E", "run-b", "run-a"]
    assert "<img" not in page and "&lt;img src=x" in page
    # The linked folder outside the save path is not served, and the page says so.
    assert "/runs/linked-secret" not in page and "linked-secret: outside the save path" in page


def test_report_is_analysed_once_and_cached_beside_the_run(server, save_path):
    status, body, headers = server.get("/runs/run-a/report.html")
    assert status == 200 and b'id="rlprof-data"' in body and b"actor_update" in body
    assert "script-src 'unsafe-inline'" in headers["Content-Security-Policy"]
    cached = save_path / "run-a" / ".rlprof-serve" / "report.html"
    assert cached.is_file()
    mtime = cached.stat().st_mtime_ns
    status2, body2, _ = server.get("/runs/run-a/report.html")
    assert status2 == 200 and body2 == body and cached.stat().st_mtime_ns == mtime
    # The cache is not an input of the next analysis.
    status3, _, _ = server.get("/runs/run-a/report.html")
    assert status3 == 200


def test_compare_and_pftrace_downloads(server):
    status, body, _ = server.get("/compare?baseline=run-a&new=run-b")
    assert status == 200 and b'"compare"' in body and b"run-a" in body
    status, body, _ = server.get("/runs/run-b/captures")
    assert status == 200 and b"step1" in body and b".pftrace" in body
    status, data, headers = server.get("/runs/run-b/captures/0.pftrace")
    assert status == 200 and len(data) > 100
    assert headers["Content-Type"] == "application/octet-stream"
    assert 'filename="run-b-0.pftrace"' in headers["Content-Disposition"]
    assert server.get("/runs/run-b/captures/99.pftrace")[0] == 404


@pytest.mark.parametrize("path", [
    "/runs/../../etc/passwd", "/runs/..%2F..%2Fetc/report.html", "/runs/%2e%2e/report.html",
    "/runs/run-a/../../../etc/passwd", "/../../etc/passwd", "/runs/linked-secret/report.html",
    "/runs/%2Fetc/report.html", "/runs/run-a%00/report.html", "/etc/passwd",
    "/compare?baseline=../run-a&new=run-b", "/runs/run-a/captures/-1.pftrace",
    "/runs/run-a/captures/00000000001.pftrace",
])
def test_nothing_outside_the_listed_runs_is_reachable(server, path):
    status, body, _ = server.get(path)
    assert status in (400, 404), (path, status)
    assert b"root:" not in body and b"secret" not in body


def test_read_only(server):
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert server.get("/", method=method)[0] == 405


def test_off_loopback_a_token_is_required(rlprof_cli, save_path):
    s = Server(rlprof_cli, save_path, "--host", "127.0.0.2")
    try:
        assert "token=" in s.url
        assert s.get("/")[0] == 403
        assert s.get("/runs/run-a/report.html")[0] == 403
        assert s.get("/?token=wrong-token")[0] == 403
        status, body, _ = s.get("/" + s.query)
        assert status == 200 and b"run-a" in body
        token = s.query.split("=", 1)[1]
        assert f"/runs/run-a/report.html?token={token}".encode() in body   # links carry it
        assert s.get(f"/runs/run-a/report.html?token={token}")[0] == 200
    finally:
        s.stop()


def test_bad_arguments(rlprof_cli, tmp_path):
    r = subprocess.run([rlprof_cli, "serve", str(tmp_path / "missing")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "not a folder" in r.stderr
    r = subprocess.run([rlprof_cli, "serve", str(tmp_path), "--token", "a b"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1


@pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("chromedriver")) and os.environ.get("CI") != "true",
                    reason="no chromium (scripts/setup installs it; CI must have it)")
def test_run_list_links_work_in_a_browser(server):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    try:
        drv.get(server.url)
        links = drv.find_elements(By.CSS_SELECTOR, "a.report")
        assert len(links) == 3
        assert drv.execute_script("return window.__pwned === undefined")
        [l for l in links if l.text == "run-a"][0].click()
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(drv, 60).until(lambda d: "/report.html" in d.current_url and
                                     d.execute_script("return !!window.rlprofReport"))
        assert drv.execute_script("return window.rlprofReport.timeline.blocks") == 2
        drv.back()
        drv.find_element(By.CSS_SELECTOR, "#compare button").click()
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(drv, 60).until(lambda d: "/compare?" in d.current_url and
                                     d.execute_script("return !!window.rlprofReport"))
        assert [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"] == []
        build = BUILD or "."
        os.makedirs(os.path.join(build, "test-artifacts"), exist_ok=True)
        drv.get(server.url)
        drv.save_screenshot(os.path.join(build, "test-artifacts", "serve_runs.png"))
    finally:
        drv.quit()


def test_links_inside_a_run_never_lead_out(rlprof_cli, tmp_path):
    """Issue 35: a trace file linked from inside a run was analysed into its report, a capture
    whose events.rlp is a link was analysed and served as a .pftrace download. Every path serve
    opens is resolved and checked: links out of the save path are left out and said so."""
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    save, outside = tmp_path / "save", tmp_path / "outside"
    subprocess.run([sys.executable, str(script), str(save), "mixed", "forward"], check=True, timeout=120)
    subprocess.run([sys.executable, str(script), str(outside), "secret", "secret_outside_op"],
                   check=True, timeout=120)
    run = save / "mixed"
    # a capture folder inside the run whose events are a link to the outside run's events
    inside_caps = sorted(p for p in run.rglob("manifest.json"))
    outside_caps = sorted(p for p in outside.rglob("events.rlp"))
    fake = run / "step1" / "e2e" / "rank9-linked-1"
    fake.mkdir(parents=True)
    shutil.copy(inside_caps[0], fake / "manifest.json")
    os.symlink(outside_caps[0], fake / "events.rlp")
    # a trace file linked in from outside (a Chrome trace naming the outside op)
    trace = tmp_path / "outside_trace.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "name": "secret_outside_op", "ts": 0, "dur": 5,'
                     ' "pid": 1, "tid": 1, "cat": "cpu_op"}]}')
    os.symlink(trace, run / "linked_trace.json")
    s = Server(rlprof_cli, save)
    try:
        status, body, _ = s.get("/runs/mixed/report.html")
        assert status == 200, body[:500]
        assert b"secret_outside_op" not in body
        assert b"input_outside_root" in body
        status, body, _ = s.get("/runs/mixed/captures")
        assert status == 200 and body.count(b".pftrace\"") == len(inside_caps), body[:2000]
        for i in range(len(inside_caps) + 1):
            st, data, _ = s.get(f"/runs/mixed/captures/{i}.pftrace")
            assert b"secret_outside_op" not in data
    finally:
        s.stop()


def test_a_host_header_of_another_name_is_refused_on_loopback(server):
    """DNS rebinding: a page on another domain that resolves to 127.0.0.1 sends its own name as
    Host; a loopback server answers only requests for localhost / 127.0.0.1 / [::1] and its port."""
    port = server.base.rsplit(":", 1)[1]

    def get(host):
        req = urllib.request.Request(server.base + "/", headers={"Host": host})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    assert get(f"rebind.example:{port}") == 403
    assert get("127.0.0.1:1") == 403                   # another port: another server
    for ok in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert get(ok) == 200


# --- slow clients (issue 35, "never stuck") ---------------------------------------------------

class Trickler:
    """A client that sends a request line and then one header line every `every` seconds, never
    finishing its headers: it notes when the server closed the connection on it."""

    def __init__(self, base, every=2.0, line=b"GET / HTTP/1.1\r\n"):
        host, port = re.match(r"http://([^:/]+):(\d+)", base).groups()
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.every, self.line = every, line
        self.started = time.monotonic()
        self.closed_at = None
        self.answer = b""
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.sock.sendall(self.line)
            n = 0
            while not self._stop.is_set():
                self.sock.settimeout(self.every)
                try:
                    data = self.sock.recv(4096)
                    self.answer += data
                    if not data:
                        break                     # closed by the server
                    continue
                except socket.timeout:
                    pass
                n += 1
                self.sock.sendall(b"X-Slow-%d: %d\r\n" % (n, n))
        except OSError:
            pass                                   # reset / broken pipe: closed by the server
        if not self._stop.is_set():
            self.closed_at = time.monotonic()

    def close(self):
        self._stop.set()
        try:
            self.sock.close()
        except OSError:
            pass


def timed_get(server, path="/"):
    t0 = time.monotonic()
    status, body, _ = server.get(path)
    return status, body, time.monotonic() - t0


def test_trickling_clients_do_not_starve_the_server(rlprof_cli, save_path):
    """30 connections each sending a header line every 2 s held all 8 of httplib's workers (its
    read timeout is per read): every connection now has a thread of its own, up to the cap, so
    a normal request is answered at once. The header deadline is lengthened here so that it is
    not what frees the server."""
    s = Server(rlprof_cli, save_path, env={"RLPROF_SERVE_HEADER_DEADLINE_S": "120"})
    clients = []
    try:
        clients = [Trickler(s.base) for _ in range(30)]
        time.sleep(3)                              # all connected, each has sent a header line
        status, body, took = timed_get(s)
        assert status == 200 and b"run-a" in body
        assert took < 30, took  # starved, it would wait for the 120 s deadline
        assert all(c.closed_at is None for c in clients)   # still held, not simply dropped
    finally:
        for c in clients:
            c.close()
        s.stop()


def test_a_trickling_client_is_closed_at_the_header_deadline(rlprof_cli, save_path):
    """A request whose headers have not all arrived within the deadline is closed, however
    often the client sends a byte (here a line every second, well within the read timeout)."""
    s = Server(rlprof_cli, save_path, env={"RLPROF_SERVE_HEADER_DEADLINE_S": "3"})
    try:
        c = Trickler(s.base, every=1.0)
        c.thread.join(timeout=30)
        assert c.closed_at is not None, "still connected after 30 s"
        held = c.closed_at - c.started
        assert 2 <= held < 15, held
        assert c.answer == b""                     # nothing answered: just closed
        c.close()
        assert s.get("/")[0] == 200                # and the server serves on
    finally:
        s.stop()


def test_connections_beyond_the_cap_are_refused_at_once(rlprof_cli, save_path):
    """At most 64 connections are held at once; one more is answered 503 and closed at once
    rather than queued behind the others. Once they are gone the server serves again."""
    s = Server(rlprof_cli, save_path, env={"RLPROF_SERVE_HEADER_DEADLINE_S": "120"})
    clients = []
    try:
        clients = [Trickler(s.base) for _ in range(64)]
        time.sleep(2)
        assert all(c.closed_at is None for c in clients)
        extra = [Trickler(s.base) for _ in range(6)]
        clients += extra
        for c in extra:
            c.thread.join(timeout=30)  # queued, they would wait for the 120 s deadline
        assert all(c.closed_at is not None for c in extra), [c.closed_at for c in extra]
        assert all(c.answer in (b"", ) or c.answer.startswith(b"HTTP/1.1 503") for c in extra)
        assert all(c.closed_at is None for c in clients[:64])
        for c in clients:
            c.close()
        clients = []
        deadline = time.monotonic() + 15          # the held connections notice their clients left
        while True:
            try:
                status = s.get("/")[0]
            except (urllib.error.URLError, ConnectionError):
                status = None
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == 200
    finally:
        for c in clients:
            c.close()
        s.stop()


def test_a_wrong_token_is_refused_before_the_headers(rlprof_cli, save_path):
    """Off loopback every request needs the token, which is in the request line: a wrong or
    missing one is answered 403 without waiting for the headers (the client here sends none)."""
    s = Server(rlprof_cli, save_path, "--host", "127.0.0.2")
    try:
        token = s.query.split("=", 1)[1]
        host, port = re.match(r"http://([^:/]+):(\d+)", s.base).groups()
        for target in ("/?token=wrong-token", "/", f"/runs/run-a/report.html?token={token}x"):
            with socket.create_connection((host, int(port)), timeout=30) as c:
                c.sendall(b"GET %s HTTP/1.1\r\n" % target.encode())
                c.settimeout(8)
                answer = b""
                while True:
                    data = c.recv(65536)
                    if not data:
                        break
                    answer += data
            assert answer.startswith(b"HTTP/1.1 403 "), (target, answer[:200])
            assert b"needs the token" in answer and b"nosniff" in answer
        # The right token, headers trickled in: served.
        with socket.create_connection((host, int(port)), timeout=30) as c:
            c.sendall(f"GET /?token={token} HTTP/1.1\r\n".encode())
            time.sleep(0.5)
            c.sendall(b"Host: x\r\n")
            time.sleep(0.5)
            c.sendall(b"Connection: close\r\n\r\n")
            c.settimeout(30)
            answer = b""
            while True:
                data = c.recv(65536)
                if not data:
                    break
                answer += data
        assert answer.startswith(b"HTTP/1.1 200 ") and b"run-a" in answer
    finally:
        s.stop()


def test_stop_does_not_wait_for_slow_clients(rlprof_cli, save_path):
    s = Server(rlprof_cli, save_path, env={"RLPROF_SERVE_HEADER_DEADLINE_S": "120"})
    clients = [Trickler(s.base) for _ in range(10)]
    try:
        time.sleep(1)
        t0 = time.monotonic()
        rc, out = s.stop()
        assert rc == 0 and "stopped" in out
        assert time.monotonic() - t0 < 30  # waiting for them: the 120 s deadline
    finally:
        for c in clients:
            c.close()


def _as_other_user(fn):
    """Runs fn() in a forked child as uid/gid 65534 (nobody); returns its exit code."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            fn()
            code = 0
        except BaseException as e:  # noqa: BLE001 - report anything, exit in the child
            sys.stderr.write(f"as nobody: {e!r}\n")
        os._exit(code)
    return os.waitpid(pid, 0)[1] >> 8


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user (CI runs as root)")
def test_another_user_cannot_plant_links_in_a_shared_run_folder(rlprof_cli):
    """Issue 35: serve cached pages and .pftrace downloads under the run's .rlprof-serve through
    predictable names, following links: another user who can write the run folder (a shared
    save path) pointed them at a file of the server's user, which one GET overwrote, or at a
    secret, which the server then read back to any client. Now the cache folder must be the
    server user's own (0700), files are created O_EXCL (mkstemp) and read only if they are
    regular files of that user; otherwise pages are kept in memory."""
    base = tempfile.mkdtemp(prefix="rlprof-serve-users-", dir="/tmp")
    try:
        os.chmod(base, 0o755)
        script = os.path.join(base, "rank.py")
        with open(script, "w") as f:
            f.write(RANK)
        save = os.path.join(base, "save")
        subprocess.run([sys.executable, script, save, "shared", "forward"], check=True, timeout=120)
        run = os.path.join(save, "shared")
        for d, _, _ in os.walk(save):
            os.chmod(d, 0o755)
        os.chmod(run, 0o777)  # a run folder every user may write to
        victim = os.path.join(base, "victim.txt")
        with open(victim, "w") as f:
            f.write("precious")
        os.chmod(victim, 0o644)
        secret = os.path.join(base, "secret.txt")
        with open(secret, "w") as f:
            f.write("TOPSECRET")
        os.chmod(secret, 0o600)

        def plant():
            cache = os.path.join(run, ".rlprof-serve")
            os.mkdir(cache)
            os.chmod(cache, 0o777)
            os.symlink(secret, os.path.join(cache, "report.html"))
            for name in ("capture-0.pftrace", "capture-0.pftrace.tmp", "report.html.tmp"):
                if not os.path.lexists(os.path.join(cache, name)):
                    os.symlink(victim, os.path.join(cache, name))

        assert _as_other_user(plant) == 0
        os.utime(secret)  # newer than every capture: the old code took it for a fresh page
        s = Server(rlprof_cli, save)
        try:
            status, body, _ = s.get("/runs/shared/report.html")
            assert status == 200 and b"TOPSECRET" not in body and b"<html" in body.lower()
            status, data, _ = s.get("/runs/shared/captures/0.pftrace")
            assert status == 200 and data[:1] == b"\x0a" and b"TOPSECRET" not in data
            status, body, _ = s.get("/runs/shared/report.html")  # served again, from memory
            assert status == 200 and b"TOPSECRET" not in body
        finally:
            s.stop()
        with open(victim) as f:
            assert f.read() == "precious"
        with open(secret) as f:
            assert f.read() == "TOPSECRET"
        # The server's own cache folder, where it may make one, is private.
        os.chmod(run, 0o755)
        shutil.rmtree(os.path.join(run, ".rlprof-serve"))
        s = Server(rlprof_cli, save)
        try:
            assert s.get("/runs/shared/report.html")[0] == 200
        finally:
            s.stop()
        st = os.lstat(os.path.join(run, ".rlprof-serve"))
        assert stat.S_ISDIR(st.st_mode) and st.st_mode & 0o077 == 0 and st.st_uid == os.geteuid()
    finally:
        shutil.rmtree(base, ignore_errors=True)
