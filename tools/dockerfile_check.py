#!/usr/bin/python3
"""dockerfile_check.py - the Dockerfile's steps, run without a Docker engine.

  tools/dockerfile_check.py [--dockerfile Dockerfile] [--work build/dockerfile-check]
                            [--port N] [--mirror http://deb.debian.org/debian]

`make docker-check` runs it (as root: it uses debootstrap, chroot and mount).
Each stage starts from a fresh Debian root that debootstrap made
(--variant=minbase, the suite named by FROM debian:<suite>-slim), and its
instructions run the way `docker build` runs them: RUN through /bin/sh -c in a
chroot with /proc, /dev and the host's resolv.conf, with the stage's ENV on
Docker's default PATH, in its WORKDIR; COPY from the build context (this
directory) or from an earlier stage (--from); WORKDIR, ENV and USER as Docker
applies them.  Then the last stage is started as the image would be: its
ENTRYPOINT, as its USER, with its ENV - but ATTND_HOST=127.0.0.1 and
ATTND_PORT=--port (default: a port free on 127.0.0.1) in place of the image's
0.0.0.0:8080, since the chroot shares this machine's network.  Its HEALTHCHECK command must pass inside the root
within the start period, GET /v1/model and a POST /v1/encode on the built-in
model must answer 200 with the model's shape, and SIGTERM must end it with
status 0.

What it does not check: Docker's layer cache and image format; the image's
exact base (debootstrap's minbase is what debian:<suite>-slim is made from,
less the files Docker's build trims); the container's own network namespace.
An instruction it does not know fails the check rather than being skipped.
The debootstrap root is kept as WORK/base-<suite>.tar for the next run; the
stage roots are removed after a run that passed.
Exit status: 0 all passed, 1 a step failed, 2 it cannot run here (not root,
no debootstrap).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request

DOCKER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def fail(msg, status=1):
    print(f"dockerfile-check: FAILED: {msg}", flush=True)
    sys.exit(status)


def say(msg):
    print(f"dockerfile-check: {msg}", flush=True)


def instructions(path):
    """The Dockerfile's instructions as (line number, KEYWORD, arguments):
    comments dropped, backslash continuations joined."""
    out, buf, start = [], "", 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            s = line.rstrip("\n")
            if not buf and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if buf and s.lstrip().startswith("#"):
                continue  # a comment inside a continued instruction
            if not buf:
                start = n
            if s.endswith("\\"):
                buf += s[:-1] + " "
                continue
            buf += s
            word, _, rest = buf.strip().partition(" ")
            out.append((start, word.upper(), rest.strip()))
            buf = ""
    if buf:
        fail(f"{path}:{start}: the last instruction ends in a backslash")
    return out


def exec_form(args, where):
    """A JSON exec form (["a", "b"]) as a list."""
    try:
        v = json.loads(args)
    except ValueError:
        fail(f"{where}: only the JSON exec form is supported here: {args}")
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        fail(f"{where}: expected a JSON array of strings: {args}")
    return v


def duration(text, where):
    """A Docker duration (300ms, 10s, 1m30s, 1h) in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        fail(f"{where}: not a duration: {text}")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def env_pairs(args, where):
    """ENV k=v [k=v ...] (values may be quoted) as a list of pairs."""
    pairs = []
    for word in shlex.split(args):
        k, eq, v = word.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            fail(f"{where}: only ENV key=value pairs are supported here: {word}")
        pairs.append((k, v))
    return pairs


class Stage:
    def __init__(self, name, root):
        self.name, self.root = name, root
        self.workdir, self.user = "/", "root"
        self.env = {}
        self.entrypoint = self.healthcheck = None
        self.health_start, self.health_timeout = 0.0, 30.0

    def path(self, p):
        """p (absolute, or relative to WORKDIR) inside the root."""
        p = p if p.startswith("/") else os.path.join(self.workdir, p)
        return os.path.join(self.root, os.path.normpath(p).lstrip("/"))

    def environ(self):
        """Docker's environment for RUN and the entrypoint: its PATH, HOME from
        the user's passwd entry, then the stage's ENV."""
        e = {"PATH": DOCKER_PATH, "HOME": passwd_entry(self.root, self.user)[2]}
        e.update(self.env)
        return e

    def chroot_argv(self, argv, user=None, env=None):
        """argv run in the root, in a private mount namespace holding /proc and
        /dev (gone when it exits), as user, with exactly env."""
        spec = []
        if user and user != "root":
            uid, gid, _ = passwd_entry(self.root, user)
            spec = [f"--userspec={uid}:{gid}"]
        env = env if env is not None else self.environ()
        inner = (f"mount -t proc proc {shlex.quote(self.root)}/proc && "
                 f"mount --bind /dev {shlex.quote(self.root)}/dev && exec chroot "
                 + " ".join(shlex.quote(a) for a in spec + [self.root, "/usr/bin/env", "-i"]
                            + [f"{k}={v}" for k, v in env.items()] + argv))
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner]


def passwd_entry(root, user):
    """(uid, gid, home) of user (a name or a uid) in the root's /etc/passwd."""
    with open(os.path.join(root, "etc/passwd"), encoding="utf-8") as f:
        for line in f:
            p = line.rstrip("\n").split(":")
            if p[0] == user or p[2] == user:
                return int(p[2]), int(p[3]), p[5]
    fail(f"USER {user}: no such user in the image's /etc/passwd")


def base_root(work, suite, mirror):
    """A tarball of debootstrap's minbase root for suite, made once."""
    tar = os.path.join(work, f"base-{suite}.tar")
    if os.path.exists(tar):
        return tar
    tmp = os.path.join(work, f"base-{suite}")
    shutil.rmtree(tmp, ignore_errors=True)
    say(f"debootstrap --variant=minbase {suite} (once; kept as {tar})")
    log = os.path.join(work, f"debootstrap-{suite}.log")
    with open(log, "w") as lf:
        rc = subprocess.call(["debootstrap", "--variant=minbase", suite, tmp, mirror],
                             stdout=lf, stderr=subprocess.STDOUT)
    if rc != 0:
        fail(f"debootstrap {suite} failed (exit {rc}): see {log}")
    with tarfile.open(tar + ".tmp", "w") as t:
        t.add(tmp, arcname=".")
    os.replace(tar + ".tmp", tar)
    shutil.rmtree(tmp)
    return tar


def apt_sources(root, suite, mirror):
    """The apt sources of Debian's images (the suite, its updates and its
    security archive) in place of debootstrap's one line."""
    keys = "/usr/share/keyrings/debian-archive-keyring.gpg"
    with open(os.path.join(root, "etc/apt/sources.list.d/debian.sources"), "w") as f:
        f.write(f"Types: deb\nURIs: {mirror}\nSuites: {suite} {suite}-updates\n"
                f"Components: main\nSigned-By: {keys}\n\n"
                f"Types: deb\nURIs: http://deb.debian.org/debian-security\n"
                f"Suites: {suite}-security\nComponents: main\nSigned-By: {keys}\n")
    sources_list = os.path.join(root, "etc/apt/sources.list")
    if os.path.exists(sources_list):
        os.remove(sources_list)


def copy_into(stage, sources, dest, src_root, where):
    """COPY: a directory's contents go into dest; a file goes to dest, or into
    it when dest ends in / or several sources are given."""
    target = stage.path(dest)
    into_dir = dest.endswith("/") or len(sources) > 1
    for s in sources:
        src = os.path.join(src_root, os.path.normpath(s).lstrip("/"))
        if not os.path.exists(src):
            fail(f"{where}: COPY source {s} does not exist")
        if os.path.isdir(src):
            shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True)
        else:
            to = os.path.join(target, os.path.basename(src)) if into_dir else target
            os.makedirs(os.path.dirname(to), exist_ok=True)
            shutil.copy2(src, to)


def build(dockerfile, context, work, mirror):
    stages, st = [], None
    for n, word, args in instructions(dockerfile):
        where = f"{dockerfile}:{n}"
        if word == "FROM":
            m = re.fullmatch(r"debian:([a-z]+)-slim(?:\s+AS\s+(\S+))?", args, re.I)
            if not m:
                fail(f"{where}: only FROM debian:<suite>-slim [AS name] is supported here")
            suite = m.group(1)
            root = os.path.join(work, f"stage{len(stages)}")
            shutil.rmtree(root, ignore_errors=True)
            os.makedirs(root)
            with tarfile.open(base_root(work, suite, mirror)) as t:
                t.extractall(root)
            shutil.copy2("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))
            apt_sources(root, suite, mirror)
            st = Stage(m.group(2) or str(len(stages)), root)
            stages.append(st)
            say(f"stage {st.name}: {args}")
            continue
        if st is None:
            fail(f"{where}: {word} before FROM")
        if word == "RUN":
            say(f"RUN {args}")
            cmd = f"cd {shlex.quote(st.workdir)} && {args}"
            rc = subprocess.call(st.chroot_argv(["/bin/sh", "-c", cmd], user=st.user))
            if rc != 0:
                fail(f"{where}: RUN exited with {rc}: {args}")
        elif word == "COPY":
            words = shlex.split(args)
            src_root = context
            if words and words[0].startswith("--from="):
                name = words.pop(0)[len("--from="):]
                found = [s for s in stages[:-1] if s.name == name]
                if not found:
                    fail(f"{where}: COPY --from={name}: no earlier stage of that name")
                src_root = found[0].root
            if len(words) < 2 or any(w.startswith("--") for w in words):
                fail(f"{where}: only COPY [--from=stage] src... dest is supported here")
            say(f"COPY {args}")
            copy_into(st, words[:-1], words[-1], src_root, where)
        elif word == "WORKDIR":
            st.workdir = os.path.normpath(os.path.join(st.workdir, args))
            os.makedirs(st.path("."), exist_ok=True)
        elif word == "ENV":
            st.env.update(env_pairs(args, where))
        elif word == "USER":
            st.user = args
            passwd_entry(st.root, args)
        elif word == "ENTRYPOINT":
            st.entrypoint = exec_form(args, where)
        elif word == "HEALTHCHECK":
            m = re.fullmatch(r"((?:--[a-z-]+=\S+\s+)*)CMD\s+(.*)", args)
            if not m:
                fail(f"{where}: only HEALTHCHECK [--option=value ...] CMD [...] is supported")
            opts = dict(o.split("=", 1) for o in m.group(1).split())
            st.health_start = duration(opts.get("--start-period", "0s"), where)
            st.health_timeout = duration(opts.get("--timeout", "30s"), where)
            st.healthcheck = exec_form(m.group(2), where)
        elif word in ("EXPOSE", "LABEL"):
            pass  # metadata only
        else:
            fail(f"{where}: instruction {word} is not supported by this check")
    if not stages:
        fail(f"{dockerfile}: no FROM")
    return stages[-1]


def http(method, url, body=None):
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def free_port():
    """A port free on 127.0.0.1 now (the kernel's pick)."""
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def run_image(st, port):
    if not st.entrypoint:
        fail("the last stage has no ENTRYPOINT")
    env = st.environ()
    env.update({"ATTND_HOST": "127.0.0.1", "ATTND_PORT": str(port)})
    say(f"start {' '.join(st.entrypoint)} as {st.user}, ATTND_HOST=127.0.0.1 ATTND_PORT={port}")
    log = open(os.path.join(os.path.dirname(st.root), "attnd.log"), "w")
    proc = subprocess.Popen(st.chroot_argv(st.entrypoint, user=st.user, env=env),
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        if st.healthcheck:
            deadline = time.monotonic() + max(st.health_start, 10.0)
            while True:
                if proc.poll() is not None:
                    fail(f"attnd exited with {proc.returncode} before it was healthy: {log.name}")
                try:
                    rc = subprocess.call(st.chroot_argv(st.healthcheck, user=st.user, env=env),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         timeout=st.health_timeout)
                except subprocess.TimeoutExpired:
                    rc = -1  # Docker counts a check past --timeout as failed
                if rc == 0:
                    break
                if time.monotonic() > deadline:
                    fail(f"HEALTHCHECK still failing after {st.health_start:.0f} s: {log.name}")
                time.sleep(0.5)
            say("HEALTHCHECK passed inside the root")
        base = f"http://127.0.0.1:{port}"
        status, body = http("GET", base + "/v1/model")
        if status != 200:
            fail(f"GET /v1/model: HTTP {status}: {body[:200]!r}")
        hp = json.loads(body).get("hyperparameters") or {}
        d, h = hp.get("d_model"), hp.get("n_heads")
        if not all(isinstance(v, int) and v > 0 for v in (d, h)):
            fail(f"GET /v1/model: no d_model and n_heads in {body[:200]!r}")
        x = [[[((i * 7 + k * 3) % 11 - 5) / 10.0 for k in range(d)] for i in range(3)]]
        status, body = http("POST", base + "/v1/encode",
                            json.dumps({"embeddings": x, "attention": "heads"}).encode())
        if status != 200:
            fail(f"POST /v1/encode: HTTP {status}: {body[:200]!r}")
        out = json.loads(body)
        y, w = out.get("outputs"), out.get("attention")
        if not (isinstance(y, list) and len(y) == 1 and len(y[0]) == 3
                and all(len(row) == d for row in y[0])):
            fail(f"POST /v1/encode: outputs are not [1][3][{d}]")
        if not (isinstance(w, list) and len(w) == 1 and len(w[0]) == h
                and all(abs(sum(row) - 1.0) < 1e-5 for head in w[0] for row in head)):
            fail(f"POST /v1/encode: attention is not [1][{h}][3][3] rows summing to 1")
        say(f"GET /v1/model and POST /v1/encode answered 200 (d_model {d}: outputs [1][3][{d}], "
            f"attention [1][{h}][3][3])")
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            fail("attnd did not exit within 30 s of SIGTERM")
        if rc != 0:
            fail(f"attnd exited with {rc} after SIGTERM: {log.name}")
        say("SIGTERM: attnd exited with status 0")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dockerfile", default="Dockerfile")
    ap.add_argument("--work", default="build/dockerfile-check")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--mirror", default="http://deb.debian.org/debian")
    a = ap.parse_args()
    if os.geteuid() != 0:
        fail("needs root (debootstrap, chroot, mount)", 2)
    for tool in ("debootstrap", "unshare", "chroot"):
        if not shutil.which(tool):
            fail(f"{tool} is not installed (make docker-check installs it)", 2)
    context = os.path.dirname(os.path.abspath(a.dockerfile))
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    started = time.monotonic()
    final = build(a.dockerfile, context, work, a.mirror)
    run_image(final, a.port or free_port())
    # The stage roots (about 1 GiB) go; a failed run leaves them to look at.
    for d in os.listdir(work):
        if d.startswith("stage"):
            shutil.rmtree(os.path.join(work, d))
    say(f"passed in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
