#!/usr/bin/python3
"""deploy_test.py - make test-deploy: attnd replicas behind nginx, restarted
and killed under load, with no failed request.

Starts 3 attnd replicas (build/attnd, a small model, server.drain_seconds set)
on 127.0.0.1, and Debian's nginx (/usr/sbin/nginx, not daemonized, its prefix,
pid, temp directories and logs under a temporary directory) with
deploy/nginx/attnd.conf: the repository's file itself, with exactly its
`listen`, upstream `server` and `access_log` lines rewritten to this test's
ports and paths (render_conf; nothing else is touched, and the test stops if
the file no longer has those lines).  Client threads then keep a steady load
of /v1/encode and /v2 infer requests going through nginx; each answer must be
a 200 that carries the request's X-Request-Id and whose outputs equal what a
direct request to a replica returned for the same input before the load
started (a wrong body is a failure like a 502): the same bits where the
replicas run attnd's AVX-512 kernels, within 1e-6 where they run OpenBLAS's,
whose rounding depends on a row's place in a batch (docs/model.md, "Batches
and lengths"; under load a replica batches requests together).

With the load running, one after the other:
  (a) rolling restart: each replica in turn gets SIGTERM (its drain: readiness
      503, still serving, checked directly), exits 0, is started again on the
      same port and answers /health 200, then the next one;
  (b) SIGKILL of one replica: its in-flight and later requests must be retried
      by nginx on the others; the port then refuses connections, and nginx's
      access log shows it tried the dead replica only once per fail_timeout.
      The replica is frozen (SIGSTOP) for --stop-seconds first, so that the
      kill surely cuts requests nginx has already sent it (the retry that
      needs `non_idempotent`); the freeze is taken when none of its HTTP
      threads is in the middle of writing a response, the one moment no
      proxy can retry (see freeze_between_responses);
  (c) the killed replica is started again and gets traffic again (its access
      log shows encode/infer requests after the restart).
For each event it prints requests, failures, latency (p50, p99, max),
requests nginx retried and the replicas each attempt went to; then a summary.
Exit status 0 only when every request of every phase succeeded and every check
held.  Bounded: --timeout (170 s) for the whole run; every process it started
(nginx and its workers, the replicas) is killed on the way out, also after a
failure, Ctrl-C or SIGTERM, and the replicas and nginx's master get SIGKILL
from the kernel if this script itself dies (setpriv --pdeathsig).

How zero failures is possible with open-source nginx's passive checks is in
deploy/nginx/attnd.conf's header: the drain's `Connection: close` empties
nginx's keep-alive pool of the draining replica; once it stops listening,
nginx's connect is refused and the request retried on the next replica
(`proxy_next_upstream error ... non_idempotent`, the body kept by
`proxy_request_buffering on`).

--drain-seconds and --conf are for experiments (what a shorter drain or
another config does); make test-deploy runs the defaults.  Debian's
/usr/bin/python3 and its standard library only."""

import argparse
import array
import base64
import difflib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = os.path.join(ROOT, "deploy", "nginx", "attnd.conf")  # --conf, for experiments only
D_MODEL = 64
MODEL_ARGS = ["--d-model", str(D_MODEL), "--n-heads", "4", "--d-ff", "128"]
# Three replicas and nginx's two workers share the machine (2 cores in CI):
# one forward thread each, no idle spinners (compute.spin_us) burning the
# other replicas' idle time.
RUN_ARGS = ["--forward-threads", "1", "--spin-us", "0"]
N_REPLICAS = 3


class TestFailure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def free_ports(n):
    """n distinct ports the kernel says are free now (bound, then released)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def replica_kernels(port):
    """/v1/model's platform.kernels: "avx512" or "openblas"."""
    r = http_get(port, "/v1/model")
    if not r or r[0] != 200:
        raise TestFailure("GET /v1/model: %r" % (r and r[0],))
    return json.loads(r[2])["platform"]["kernels"]


def http_get(port, path, timeout=2.0):
    """(status, headers, body) of a GET on 127.0.0.1:port, or None when the
    connection fails."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r, r.read()
    except OSError:
        return None
    finally:
        conn.close()


def refuses(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


# epoll_wait and epoll_pwait: (number, the timeout's argument index).
EPOLL_CALLS = {"x86_64": {232: 4, 281: 4}, "aarch64": {22: 4}}.get(os.uname().machine, {})


def thread_states(pid):
    """[(comm, state, /proc/.../syscall fields)] of each thread of pid."""
    out = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        base = "/proc/%d/task/%s/" % (pid, tid)
        try:
            with open(base + "comm") as f:
                comm = f.read().strip()
            with open(base + "stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(base + "syscall") as f:
                call = f.read().split()
        except OSError:
            continue
        out.append((comm, state, call))
    return out


def idle_http_thread(call):
    """Whether a thread stopped with these /proc syscall fields was waiting
    in epoll for work (a timeout other than 0), not writing a response."""
    try:
        nr = int(call[0])
        return nr in EPOLL_CALLS and int(call[EPOLL_CALLS[nr]], 16) != 0
    except (ValueError, IndexError):
        return False


def freeze_between_responses(pid, attempts=60):
    """SIGSTOP pid at a moment when none of its HTTP threads (libmicrohttpd's,
    named MHD-worker) is busy: each is waiting in epoll for work, so none has
    sent part of a response and not the rest.  A busy freeze is undone
    (SIGCONT) and tried again a moment later.  Returns (freezes tried, frozen
    cleanly); after `attempts` busy freezes pid is left frozen anyway."""
    rnd = random.Random(pid)
    for n in range(1, attempts + 1):
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 2
        states = thread_states(pid)
        while any(s[1] not in "tT" for s in states) and time.monotonic() < deadline:
            time.sleep(0.001)
            states = thread_states(pid)
        http = [s for s in states if s[0].startswith("MHD")]
        if http and all(idle_http_thread(s[2]) for s in http):
            return n, True
        if n == attempts or not http or not EPOLL_CALLS:
            return n, False  # cannot tell (no thread names, another CPU): as it is
        os.kill(pid, signal.SIGCONT)
        time.sleep(rnd.uniform(0.005, 0.05))
    return attempts, False


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


# ---- the configuration ------------------------------------------------------


def render_conf(text, listen_port, upstream_ports, access_log):
    """deploy/nginx/attnd.conf with its listen port, upstream servers and
    access log replaced; every other line as it is.  Raises TestFailure when
    the file does not have exactly the lines expected."""
    lines = text.split("\n")
    changed = {"listen": 0, "server": 0, "access_log": 0}
    out = []
    in_upstream = False
    for line in lines:
        code = line.split("#", 1)[0]
        if re.match(r"\s*upstream\s+attnd\s*\{", code):
            in_upstream = True
        elif in_upstream and re.match(r"\s*\}", code):
            in_upstream = False
        m_server = re.match(r"^(\s*server\s+)(\S+)((?:\s+[^;]*)?;\s*)$", code) if in_upstream else None
        m_listen = re.match(r"^(\s*listen\s+)(\S+)(\s*;\s*)$", code)
        m_log = re.match(r"^(\s*access_log\s+)(\S+)(\s+attnd\s*;\s*)$", code)
        if m_server:
            if changed["server"] < len(upstream_ports):
                line = "%s127.0.0.1:%d%s" % (m_server.group(1), upstream_ports[changed["server"]],
                                             m_server.group(3).rstrip())
            changed["server"] += 1
        elif m_listen:
            line = "%s127.0.0.1:%d%s" % (m_listen.group(1), listen_port, m_listen.group(3).rstrip())
            changed["listen"] += 1
        elif m_log:
            line = "%s%s%s" % (m_log.group(1), access_log, m_log.group(3).rstrip())
            changed["access_log"] += 1
        out.append(line)
    want = {"listen": 1, "server": len(upstream_ports), "access_log": 1}
    if changed != want:
        raise TestFailure("the config: expected %s to rewrite, found %s" % (want, changed))
    return "\n".join(out)


def conf_fail_timeout(text):
    m = re.findall(r"fail_timeout=(\d+)s", text)
    return max(int(x) for x in m) if m else 10


MAIN_CONF = """# written by tests/deploy/deploy_test.py: the main context around the
# repository's deploy/nginx/attnd.conf (rendered beside this file).
daemon off;
master_process on;
worker_processes 2;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{
    worker_connections 1024;
}}
http {{
    client_body_temp_path {tmp}/client_body_temp;
    proxy_temp_path {tmp}/proxy_temp;
    fastcgi_temp_path {tmp}/fastcgi_temp;
    uwsgi_temp_path {tmp}/uwsgi_temp;
    scgi_temp_path {tmp}/scgi_temp;
    include {tmp}/attnd.conf;
}}
"""


# ---- processes ---------------------------------------------------------------


def clean_env():
    """The environment without ATTND_* variables, which would change the
    replicas' settings (an API key, a port)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ATTND_")}


def guarded(cmd):
    """cmd under setpriv --pdeathsig KILL, when there is setpriv: the process
    is killed by the kernel if this script dies without cleaning up."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] + cmd if setpriv else cmd


class Replica:
    def __init__(self, idx, port, tmp, attnd, drain):
        self.idx, self.port, self.tmp, self.attnd, self.drain = idx, port, tmp, attnd, drain
        self.proc = None
        self.logs = []  # one per start: (path, time started)

    @property
    def name(self):
        return "r%d:%d" % (self.idx, self.port)

    def start(self):
        path = os.path.join(self.tmp, "replica%d.%d.log" % (self.idx, len(self.logs)))
        out = open(path, "wb")
        cmd = [self.attnd, "--host", "127.0.0.1", "--port", str(self.port),
               "--drain-seconds", str(self.drain)] + MODEL_ARGS + RUN_ARGS
        self.proc = subprocess.Popen(guarded(cmd), stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, env=clean_env(),
                                     start_new_session=True)
        out.close()
        self.logs.append((path, time.time()))

    def wait_ready(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure("%s exited with %s while starting: %s" %
                                  (self.name, self.proc.returncode, self.log_tail()))
            r = http_get(self.port, "/health", timeout=1.0)
            if r and r[0] == 200:
                return
            time.sleep(0.05)
        raise TestFailure("%s: /health not 200 within %.0f s" % (self.name, timeout))

    def signal(self, sig):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def log_text(self, which=-1):
        with open(self.logs[which][0], "r", errors="replace") as f:
            return f.read()

    def log_tail(self, n=5):
        return " | ".join(self.log_text().strip().split("\n")[-n:])

    def compute_lines(self, which=-1):
        """Access-log lines of the compute routes in one start's log."""
        return [line for line in self.log_text(which).split("\n")
                if re.match(r"POST /v(1/encode|2/models/\S+/infer) \d{3} ", line)]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


class Nginx:
    def __init__(self, tmp, binary, port):
        self.tmp, self.binary, self.port = tmp, binary, port
        self.proc = None
        self.error_log = os.path.join(tmp, "error.log")
        self.access_log = os.path.join(tmp, "access.log")
        self.conf = os.path.join(tmp, "nginx.conf")

    def args(self):
        return [self.binary, "-p", self.tmp + "/", "-c", self.conf, "-e", self.error_log]

    def start(self):
        check = subprocess.run(self.args() + ["-t", "-q"], capture_output=True, text=True, timeout=30)
        if check.returncode != 0:
            raise TestFailure("nginx -t: %s%s" % (check.stdout, check.stderr))
        out = open(os.path.join(self.tmp, "nginx.out"), "wb")
        self.proc = subprocess.Popen(guarded(self.args()), stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestFailure("nginx exited with %s: %s" % (self.proc.returncode, self.error_tail()))
            r = http_get(self.port, "/health", timeout=1.0)
            if r and r[0] == 200:
                return
            time.sleep(0.05)
        raise TestFailure("nginx: /health through it not 200 within 15 s")

    def error_size(self):
        try:
            return os.path.getsize(self.error_log)
        except OSError:
            return 0

    def error_text(self, start=0, end=None):
        try:
            with open(self.error_log, "rb") as f:
                f.seek(start)
                data = f.read() if end is None else f.read(max(0, end - start))
            return data.decode(errors="replace")
        except OSError:
            return ""

    def error_tail(self, n=8):
        return "\n".join(self.error_text().strip().split("\n")[-n:])

    def stop(self):
        if not self.proc:
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGQUIT)  # graceful: workers finish, then exit
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        # The master and its workers are this process group (start_new_session),
        # which this script created: whatever is left of it goes.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


# ---- requests -----------------------------------------------------------------


# A float's bound where the kernels are OpenBLAS's: docs/model.md's "within
# 1e-6" of the answer alone, relative to values past 1.
TOLERANCE = 1e-6


def floats_close(a, b):
    return len(a) == len(b) and all(abs(x - y) <= TOLERANCE * max(1.0, abs(x)) for x, y in zip(a, b))


def same_numbers(a, b):
    """Whether two decoded answers agree: every string, integer and key
    exactly, every float within TOLERANCE."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(same_numbers(x, y) for x, y in zip(a, b)))
    if isinstance(a, array.array):
        return isinstance(b, array.array) and floats_close(a, b)
    if isinstance(a, float) and isinstance(b, (int, float)):
        return floats_close([a], [b])
    return a == b


class Case:
    """One request body and how to compare its answer with the direct one."""

    # True: every bit (AVX-512 kernels); False: floats within TOLERANCE.
    exact = True

    def __init__(self, what, path, body, headers, compare):
        self.what, self.path, self.body, self.headers, self.compare = what, path, body, headers, compare
        self.expected = None

    def key(self, data, resp):
        if self.compare == "v1":  # usage holds the queue and compute times
            doc = json.loads(data)
            doc.pop("usage", None)
            if not Case.exact:  # base64 tensors as their floats
                for name in ("outputs", "attention"):
                    if isinstance(doc.get(name), str):
                        doc[name] = array.array("f", base64.b64decode(doc[name]))
            return doc
        if self.compare == "json":
            return json.loads(data)
        size = resp.getheader("Inference-Header-Content-Length")
        if Case.exact:
            return (size, data)  # binary: every byte
        n = int(size)
        return (size, json.loads(data[:n]), array.array("f", data[n:]))

    def same(self, got):
        """Whether got (a key) is the direct answer."""
        return got == self.expected or (not Case.exact and same_numbers(self.expected, got))


def make_cases(seed=7):
    rnd = random.Random(seed)

    def seq(n):
        return [[round(rnd.uniform(-2, 2), 4) for _ in range(D_MODEL)] for _ in range(n)]

    def f32(n):
        return [rnd.uniform(-2, 2) for _ in range(n)]

    js = {"Content-Type": "application/json"}
    cases = []
    for i in range(3):
        L = 4 + 3 * i
        cases.append(Case("v1 json [%d][64] heads" % L, "/v1/encode",
                          json.dumps({"embeddings": seq(L)}).encode(), js, "v1"))
    for i in range(2):
        L = 6 + 4 * i
        body = {"embeddings": [seq(L), seq(L)], "lengths": [L, L - 3], "attention": "mean",
                "mask": {"causal": True}}
        cases.append(Case("v1 json [2][%d][64] lengths causal mean" % L, "/v1/encode",
                          json.dumps(body).encode(), js, "v1"))
    for i in range(2):
        L = 8 + 8 * i
        raw = struct.pack("<%df" % (L * D_MODEL), *f32(L * D_MODEL))
        body = {"embeddings_b64": base64.b64encode(raw).decode(), "shape": [1, L, D_MODEL],
                "encoding": "base64", "attention": "none"}
        cases.append(Case("v1 base64 [1][%d][64]" % L, "/v1/encode", json.dumps(body).encode(), js, "v1"))
    for i in range(2):
        L = 5 + 6 * i
        body = {"id": "case-%d" % i,
                "inputs": [{"name": "embeddings", "datatype": "FP32", "shape": [1, L, D_MODEL],
                            "data": [x for row in seq(L) for x in row]}],
                "parameters": {"attention": "mean", "window": 2}}
        cases.append(Case("v2 json infer [1][%d][64]" % L, "/v2/models/encoder/infer",
                          json.dumps(body).encode(), js, "json"))
    L = 9
    data = struct.pack("<%df" % (2 * L * D_MODEL), *f32(2 * L * D_MODEL))
    header = json.dumps({"inputs": [{"name": "embeddings", "datatype": "FP32", "shape": [2, L, D_MODEL],
                                     "parameters": {"binary_data_size": len(data)}}],
                         "parameters": {"binary_data_output": True}}).encode()
    cases.append(Case("v2 binary infer [2][%d][64]" % L, "/v2/models/encoder/versions/1/infer",
                      header + data, {"Content-Type": "application/octet-stream",
                                      "Inference-Header-Content-Length": str(len(header))}, "binary"))
    return cases


def fetch_expected(cases, port):
    """Each case's answer from a replica directly, one request at a time."""
    for c in cases:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("POST", c.path, body=c.body, headers=c.headers)
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                raise TestFailure("direct %s: %d %s" % (c.what, r.status, data[:300]))
            c.expected = c.key(data, r)
        finally:
            conn.close()


class Load:
    """Client threads sending the cases through nginx back to back, each on
    its own keep-alive connection."""

    def __init__(self, port, cases, clients):
        self.port, self.cases, self.clients = port, cases, clients
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.records = []  # (time.time() at the end, seconds, ok, request id)
        self.failures = []  # (time.time(), case, request id, why)
        self.threads = []

    def start(self):
        for t in range(self.clients):
            th = threading.Thread(target=self.run, args=(t,), daemon=True)
            th.start()
            self.threads.append(th)

    def stop(self):
        self.stop_flag.set()
        for th in self.threads:
            th.join(timeout=20)

    def run(self, tid):
        conn, k = None, 0
        while not self.stop_flag.is_set():
            case = self.cases[(tid + k * self.clients) % len(self.cases)]
            k += 1
            rid = "deploy-%d-%d" % (tid, k)
            why = None
            t0 = time.perf_counter()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("POST", case.path, body=case.body, headers=dict(case.headers, **{"X-Request-Id": rid}))
                r = conn.getresponse()
                data = r.read()
                ids = r.msg.get_all("X-Request-Id") or []
                if r.status != 200:
                    why = "status %d: %r" % (r.status, data[:200])
                elif ids != [rid]:
                    why = "X-Request-Id %r, sent %r" % (ids, rid)
                else:
                    try:
                        got = case.key(data, r)
                    except ValueError as e:
                        got, why = None, "unreadable body (%s): %r" % (e, data[:120])
                    if why is None and not case.same(got):
                        why = "body differs from the direct answer: %r" % (data[:160],)
                if r.will_close:
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                why = "%s: %s" % (type(e).__name__, e)
                if conn:
                    conn.close()
                conn = None
            t1 = time.perf_counter()
            now = time.time()
            with self.lock:
                self.records.append((now, t1 - t0, why is None, rid))
                if why is not None:
                    self.failures.append((now, case.what, rid, why))
        if conn:
            conn.close()

    def window(self, t0, t1):
        with self.lock:
            recs = [r for r in self.records if t0 <= r[0] < t1]
            fails = [f for f in self.failures if t0 <= f[0] < t1]
        return recs, fails

    def count(self, t0):
        with self.lock:
            return sum(1 for r in self.records if r[0] >= t0)


def config_checks(nginx_port, replica_port):
    """What the config promises besides failover, checked through nginx once
    before the load: notes for the output; raises TestFailure."""
    notes = []
    # client_max_body_size = server.max_body_bytes: one byte over is refused
    # by nginx from the headers alone, with the request id.
    over = 64 * 1024 * 1024 + 1
    with socket.create_connection(("127.0.0.1", nginx_port), timeout=10) as s:
        s.sendall(("POST /v1/encode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\nX-Request-Id: deploy-too-big\r\n\r\n" % over).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
    status = head.split(b"\r\n", 1)[0]
    if b" 413 " not in status or b"X-Request-Id: deploy-too-big" not in head:
        raise TestFailure("a body of 64 MiB + 1 through nginx: %r, not 413 with its X-Request-Id" % head[:200])
    notes.append("64 MiB + 1 byte body: 413 from nginx, before any body was sent")
    # A body past client_body_buffer_size (1 MiB) goes through nginx's temp
    # file (written by its workers) and comes back as a direct request's does.
    rnd = random.Random(3)
    big = json.dumps({"embeddings": [[round(rnd.uniform(-2, 2), 4) for _ in range(D_MODEL)]
                                     for _ in range(4096)], "attention": "none"}).encode()
    case = Case("v1 json [4096][64]", "/v1/encode", big, {"Content-Type": "application/json"}, "v1")
    fetch_expected([case], replica_port)
    conn = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=30)
    try:
        conn.request("POST", case.path, body=big, headers=case.headers)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200 or not case.same(case.key(data, r)):
            raise TestFailure("a %d-byte body through nginx: %d %r" % (len(big), r.status, data[:200]))
        notes.append("%.1f MB body (past client_body_buffer_size): 200, the direct answer" % (len(big) / 1e6))
        # No X-Request-Id, or one attnd would not keep: nginx's own $request_id,
        # sent to the replica and back, once.
        for sent in (None, "not a valid id!"):
            conn.request("GET", "/health", headers={"X-Request-Id": sent} if sent else {})
            r = conn.getresponse()
            r.read()
            ids = r.msg.get_all("X-Request-Id") or []
            if r.status != 200 or len(ids) != 1 or not re.fullmatch(r"[0-9a-f]{32}", ids[0]):
                raise TestFailure("GET /health through nginx with X-Request-Id %r: %d, ids %r" % (sent, r.status, ids))
        notes.append("no or an invalid X-Request-Id: one made by nginx ($request_id), in the answer once")
    finally:
        conn.close()
    return notes


# ---- nginx's access log ---------------------------------------------------------

LOG_RE = re.compile(r'\S+ \[\S+\] (?P<msec>[\d.]+) "(?P<request>[^"]*)" (?P<status>\d{3}) \d+ [\d.]+ '
                    r'upstream=(?P<up>.*?) ustatus=(?P<ust>.*?) urt=.*? id=(?P<id>\S+)$')


def read_access_log(path):
    """[(time, status, [(addr, status)...], id, request line)] for each line."""
    entries = []
    try:
        with open(path, "r", errors="replace") as f:
            for line in f:
                m = LOG_RE.match(line.rstrip("\n"))
                if not m:
                    continue
                # Tries of one upstream group are separated by ", " (" : " for
                # another group, not used here).
                addrs = [a.strip() for a in re.split(r"[,:] (?=\S)", m.group("up")) if a.strip()]
                stats = [s.strip() for s in re.split(r"[,:] ", m.group("ust")) if s.strip()]
                tries = list(zip(addrs, stats + ["-"] * (len(addrs) - len(stats))))
                entries.append((float(m.group("msec")), int(m.group("status")), tries, m.group("id"),
                                m.group("request")))
    except OSError:
        pass
    return entries


# ---- the run -----------------------------------------------------------------------


class Phase:
    def __init__(self, name, t0, t1, err0, err1, notes):
        self.name, self.t0, self.t1, self.err0, self.err1, self.notes = name, t0, t1, err0, err1, notes


def error_kinds(text):
    kinds = {
        "connect refused": r"connect\(\) failed \(111",
        "reset": r"\(104: Connection reset by peer\)",
        "closed early": r"upstream prematurely closed",
        "timed out": r"timed out",
        "replica disabled": r"upstream server temporarily disabled",
        "no live upstreams": r"no live upstreams",
    }
    out = {}
    for k, pat in kinds.items():
        n = len(re.findall(pat, text))
        if n:
            out[k] = n
    return out


def report_phase(ph, load, access, replicas, problems):
    recs, fails = load.window(ph.t0, ph.t1)
    lat = [r[1] * 1000 for r in recs]
    entries = [e for e in access if ph.t0 <= e[0] < ph.t1]
    retried = sum(1 for e in entries if len(e[2]) > 1)
    served, tried = {}, {}
    for e in entries:
        for i, (addr, st) in enumerate(e[2]):
            tried[addr] = tried.get(addr, 0) + 1
            if i == len(e[2]) - 1 and st == "200":
                served[addr] = served.get(addr, 0) + 1
    names = {"127.0.0.1:%d" % r.port: r.name for r in replicas}
    log("== %s: %.1f s" % (ph.name, ph.t1 - ph.t0))
    log("   requests %d, failures %d, latency ms p50 %.1f p99 %.1f max %.1f" %
        (len(recs), len(fails), percentile(lat, 50), percentile(lat, 99), max(lat) if lat else float("nan")))
    log("   nginx: %d requests logged, %d retried on another replica; served by %s; attempts %s" %
        (len(entries), retried,
         ", ".join("%s %d" % (names.get(a, a), n) for a, n in sorted(served.items())) or "-",
         ", ".join("%s %d" % (names.get(a, a), n) for a, n in sorted(tried.items())) or "-"))
    kinds = error_kinds(ph.err1)
    if kinds:
        log("   nginx error log: " + ", ".join("%s %d" % kv for kv in kinds.items()))
    for note in ph.notes:
        log("   " + note)
    for f in fails[:5]:
        log("   FAILED %s %s (%s): %s" % (time.strftime("%H:%M:%S", time.localtime(f[0])), f[2], f[1], f[3]))
    if fails:
        problems.append("%s: %d failed requests" % (ph.name, len(fails)))
    return len(recs), len(fails), lat


def run(args, tmp):
    problems = []
    conf_text = open(args.conf).read()
    fail_timeout = conf_fail_timeout(conf_text)
    ports = free_ports(N_REPLICAS + 1)
    nginx_port, replica_ports = ports[0], ports[1:]
    rendered = render_conf(conf_text, nginx_port, replica_ports, os.path.join(tmp, "access.log"))
    with open(os.path.join(tmp, "attnd.conf"), "w") as f:
        f.write(rendered)
    with open(os.path.join(tmp, "nginx.conf"), "w") as f:
        f.write(MAIN_CONF.format(tmp=tmp))
    diff = [d for d in difflib.unified_diff(conf_text.split("\n"), rendered.split("\n"), lineterm="", n=0)
            if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    log("%s rendered into %s/attnd.conf, %d lines changed:" % (os.path.relpath(args.conf, ROOT), tmp, len(diff) // 2))
    for line in diff:
        log("   " + line.strip())
    log("nginx on 127.0.0.1:%d; replicas on %s; drain %d s; fail_timeout %d s (from the config); "
        "%d client threads" % (nginx_port, ", ".join(map(str, replica_ports)), args.drain_seconds,
                               fail_timeout, args.clients))

    replicas = [Replica(i, p, tmp, args.attnd, args.drain_seconds) for i, p in enumerate(replica_ports)]
    nginx = Nginx(tmp, args.nginx, nginx_port)
    state = {"replicas": replicas, "nginx": nginx, "load": None}
    run.state = state
    for r in replicas:
        r.start()
    for r in replicas:
        r.wait_ready()
    kernels = replica_kernels(replica_ports[0])
    Case.exact = kernels == "avx512"
    log("answers compared with the direct ones %s (the replicas' kernels: %s)" %
        ("bit for bit" if Case.exact else "within %g" % TOLERANCE, kernels))
    cases = make_cases()
    fetch_expected(cases, replica_ports[0])
    # Every replica must give the same answers (the same seeded weights), or
    # comparing through the proxy would mean nothing.
    for r in replicas[1:]:
        probe = make_cases()
        fetch_expected(probe, r.port)
        for a, b in zip(cases, probe):
            if not a.same(b.expected):
                raise TestFailure("%s answers %s differently from %s" % (r.name, a.what, replicas[0].name))
    nginx.start()

    t0 = time.time()
    checks = config_checks(nginx_port, replica_ports[0])
    log("== config checks: %.1f s" % (time.time() - t0))
    for note in checks:
        log("   " + note)

    load = Load(nginx_port, cases, args.clients)
    state["load"] = load
    phases = []
    load.start()

    def phase(name, body):
        t0, e0 = time.time(), nginx.error_size()
        notes = body()
        phases.append(Phase(name, t0, time.time(), e0, nginx.error_text(e0), notes))

    # -- steady load
    def steady():
        time.sleep(args.steady_seconds)
        return []

    phase("steady load", steady)

    # -- (a) rolling restart
    def rolling():
        notes = []
        for r in replicas:
            t_sig = time.time()
            r.signal(signal.SIGTERM)
            # The drain, seen directly: readiness 503 with Retry-After, liveness 200.
            deadline, health = time.monotonic() + 2, None
            while time.monotonic() < deadline:
                health = http_get(r.port, "/health", timeout=1.0)
                if health and health[0] == 503:
                    break
                time.sleep(0.02)
            live = http_get(r.port, "/v2/health/live", timeout=1.0)
            if not (health and health[0] == 503 and health[1].getheader("Retry-After")):
                problems.append("%s: /health during the drain was %s, not 503 with Retry-After" %
                                (r.name, health and health[0]))
            if not (live and live[0] == 200):
                problems.append("%s: /v2/health/live during the drain was %s, not 200" % (r.name, live and live[0]))
            rc = r.wait_exit(args.drain_seconds + 30)
            t_exit = time.time()
            text = r.log_text()
            if rc != 0 or "attnd: stopped" not in text:
                problems.append("%s: exit status %s after SIGTERM (%s)" % (r.name, rc, r.log_tail()))
                if rc is None:
                    r.stop()
            # The replica's own access log: what it served during its drain
            # (nginx kept sending, as it does not read readiness).
            drain_part = text.split("draining for", 1)[-1].split("the drain period is over", 1)[0]
            in_drain = len(re.findall(r"^POST /v\S+ 200 ", drain_part, re.M))
            # 200s, and 503s while a restarted replica loads its model (nginx
            # retries those); anything else is a problem.
            not_ok = re.findall(r"^POST /v\S+ (?!200 |503 )\d{3} .*$", text, re.M)
            if not_ok:
                problems.append("%s: its access log has non-200 compute answers: %s" % (r.name, not_ok[:3]))
            r.start()
            r.wait_ready()
            notes.append("%s: SIGTERM, served %d compute requests during its %d s drain, exit %s after "
                         "%.1f s, /health 200 again %.1f s after SIGTERM" %
                         (r.name, in_drain, args.drain_seconds, rc, t_exit - t_sig, time.time() - t_sig))
        # Until nginx has tried the last one again (fail_timeout).
        time.sleep(fail_timeout + 1)
        return notes

    phase("(a) rolling restart", rolling)

    # -- (b) SIGKILL of one replica
    victim = replicas[1]
    kill_info = {}

    def kill():
        # SIGSTOP first, for --stop-seconds: the requests nginx sends it
        # meanwhile wait on it unanswered, so the SIGKILL surely catches
        # requests already sent (as a kill in the middle of long forwards
        # would), which only `non_idempotent` lets nginx retry.  The freeze
        # is taken at a moment when none of its HTTP threads is writing a
        # response: a replica that dies after the first byte of a response
        # and before its last cannot be retried by nginx or any proxy (the
        # status line is already on its way to the client), and attnd writes
        # a response's header, body and last chunk in separate sends.  That
        # window is the daemon's to close (small responses in one send), not
        # the proxy's; this test measures the proxy.
        t_stop = time.time()
        tries, clean = freeze_between_responses(victim.proc.pid)
        kill_info.update(freezes=tries, clean=clean)
        time.sleep(args.stop_seconds)
        t_kill = time.time()
        victim.signal(signal.SIGKILL)
        rc = victim.wait_exit(10)
        time.sleep(args.kill_seconds)
        refused = refuses(victim.port)
        kill_info.update(t_stop=t_stop, t_kill=t_kill, t_end=time.time())
        if not refused:
            problems.append("%s: its port still accepts connections after SIGKILL" % victim.name)
        return ["%s: SIGSTOP (%d freeze%s to find its HTTP threads idle%s), SIGKILL %.1f s later "
                "(exit %s); its port refuses connections: %s" %
                (victim.name, tries, "" if tries == 1 else "s", "" if clean else ": NOT FOUND, killed anyway",
                 t_kill - t_stop, rc, "yes" if refused else "NO")]

    phase("(b) SIGKILL of one replica", kill)

    # -- (c) the killed replica comes back
    def back():
        t_start = time.time()
        victim.start()
        victim.wait_ready()
        t_ready = time.time()
        deadline, first = time.monotonic() + fail_timeout + 15, None
        while time.monotonic() < deadline:
            if victim.compute_lines():
                first = time.time()
                break
            time.sleep(0.05)
        time.sleep(args.back_seconds)
        n = len(victim.compute_lines())
        if first is None:
            problems.append("%s: no compute request reached it within %d s of its restart" %
                            (victim.name, fail_timeout + 15))
        kill_info.update(t_back=t_ready)
        return ["%s: started again, /health 200 after %.1f s; first compute request in its access log "
                "%s after that; %d compute requests in its new access log" %
                (victim.name, t_ready - t_start,
                 "%.1f s" % (first - t_ready) if first else "NEVER", n)]

    phase("(c) the killed replica back", back)

    load.stop()
    time.sleep(0.2)  # nginx writes the last access-log lines
    access = read_access_log(nginx.access_log)

    # (b): after the kill, how often nginx still tried the dead replica.
    addr = "127.0.0.1:%d" % victim.port
    t_k, t_e = kill_info["t_kill"], kill_info["t_end"]
    # The requests the kill cut: sent to it before the kill, retried elsewhere.
    cut = [e for e in access if kill_info["t_stop"] <= e[0] < t_k + 0.5
           and any(a == addr for a, _ in e[2][:-1]) and e[1] == 200]
    phases[2].notes.append("requests sent to %s before the kill, cut by it and answered 200 by another "
                           "replica: %d" % (victim.name, len(cut)))
    if not cut:
        problems.append("the kill cut no request in flight: the non_idempotent retry was not exercised")
    after = [e for e in access if t_k + 0.5 <= e[0] < t_e]
    tries_dead = sum(1 for e in after for a, _ in e[2] if a == addr)
    served_dead = sum(1 for e in after if e[2] and e[2][-1][0] == addr and e[1] == 200)
    window = t_e - (t_k + 0.5)
    allowed = (int(window / fail_timeout) + 1) * 2 * args.clients
    phases[2].notes.append("after the kill (%.1f s): nginx tried %s %d times in %d requests (once per "
                           "fail_timeout of %d s, each retried on another replica; at most %d allowed), "
                           "it served %d" % (window, victim.name, tries_dead, len(after), fail_timeout,
                                             allowed, served_dead))
    if served_dead or tries_dead > allowed:
        problems.append("nginx kept sending to the killed replica: %d tries, %d served" % (tries_dead, served_dead))

    # X-Request-Id passed through: every id the client saw succeed is in
    # nginx's access log and in a replica's, and so is every compute 200
    # nginx logged.
    ids_nginx = {e[3] for e in access}
    ids_replicas = set()
    for r in replicas:
        for i in range(len(r.logs)):
            for line in r.compute_lines(i):
                ids_replicas.add(line.rsplit(" ", 1)[-1])
    with load.lock:
        ok_ids = [rec[3] for rec in load.records if rec[2]]
    lost_client = sum(1 for i in ok_ids if i not in ids_nginx or i not in ids_replicas)
    missing_nginx = sum(1 for e in access if e[1] == 200 and e[4].startswith("POST ") and e[3] not in ids_replicas)

    log("")
    totals = [0, 0]
    all_lat = []
    for ph in phases:
        n, f, lat = report_phase(ph, load, access, replicas, problems)
        totals[0] += n
        totals[1] += f
        all_lat += lat
    log("")
    per_replica = {}
    for r in replicas:
        per_replica[r.name] = [len(r.compute_lines(i)) for i in range(len(r.logs))]
    log("== summary: %d requests through nginx, %d failed, latency ms p50 %.1f p99 %.1f max %.1f" %
        (totals[0], totals[1], percentile(all_lat, 50), percentile(all_lat, 99),
         max(all_lat) if all_lat else float("nan")))
    log("   compute requests in each replica's access logs, per start: " +
        "; ".join("%s %s" % (k, "+".join(map(str, v))) for k, v in per_replica.items()))
    log("   nginx logged %d requests (%d retried); request ids: %d of the client's %d successes missing from "
        "nginx's or the replicas' access logs, %d of nginx's compute 200s missing from the replicas'" %
        (len(access), sum(1 for e in access if len(e[2]) > 1), lost_client, len(ok_ids), missing_nginx))
    if lost_client or missing_nginx:
        problems.append("request ids not passed through: %d client successes, %d nginx 200s not found"
                        % (lost_client, missing_nginx))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attnd", default=os.path.join(ROOT, "build", "attnd"))
    ap.add_argument("--nginx", default="/usr/sbin/nginx")
    ap.add_argument("--conf", default=CONF, help="the nginx config to test (default: the repository's; "
                    "another one only for experiments)")
    ap.add_argument("--drain-seconds", type=int, default=5,
                    help="server.drain_seconds of the replicas (default 5: fail_timeout + 2)")
    ap.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    ap.add_argument("--steady-seconds", type=float, default=3)
    ap.add_argument("--stop-seconds", type=float, default=0.5,
                    help="SIGSTOP this long before the SIGKILL (default 0.5)")
    ap.add_argument("--kill-seconds", type=float, default=7, help="load after the SIGKILL (default 7)")
    ap.add_argument("--back-seconds", type=float, default=3, help="load after the replica's first request")
    ap.add_argument("--timeout", type=int, default=170, help="the whole run at most (default 170 s)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = ap.parse_args()
    for path in (args.attnd, args.nginx):
        if not os.access(path, os.X_OK):
            print("deploy_test: %s is missing (make build/attnd; apt-get install nginx)" % path, file=sys.stderr)
            return 2

    def on_signal(sig, frame):
        raise KeyboardInterrupt("signal %d" % sig)

    def on_alarm(sig, frame):
        raise TestFailure("the run took longer than %d s" % args.timeout)

    signal.signal(signal.SIGINT, on_signal)  # also when started with SIGINT ignored (a background job)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.timeout)

    tmp = tempfile.mkdtemp(prefix="attnd-deploy-")
    os.chmod(tmp, 0o755)  # nginx's workers (nobody, when run as root) use its temp directories
    run.state = {}
    problems, status = [], 1
    t_start = time.monotonic()
    try:
        problems = run(args, tmp)
        status = 1 if problems else 0
    except TestFailure as e:
        problems = [str(e)]
    except KeyboardInterrupt as e:
        problems = ["interrupted (%s)" % (e or "Ctrl-C")]
    finally:
        signal.alarm(0)
        st = run.state
        try:
            if st.get("load"):
                st["load"].stop_flag.set()
            if st.get("nginx"):
                st["nginx"].stop()
            for r in st.get("replicas", []):
                r.stop()
        finally:
            if st.get("load"):
                st["load"].stop()
    if problems:
        log("")
        for p in problems:
            log("FAIL: " + p)
        if run.state.get("nginx"):
            log("nginx error log (last lines):\n" + run.state["nginx"].error_tail(15))
        args.keep = True
    log("%s in %.0f s%s" % ("FAILED" if status else "passed", time.monotonic() - t_start,
                            "; logs in " + tmp if args.keep else ""))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
