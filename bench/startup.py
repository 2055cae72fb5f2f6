#!/usr/bin/python3
"""startup.py - attnd's start-up from a Hugging Face directory, measured.

    /usr/bin/python3 bench/startup.py --dir DIR [--weights FILE] [--name KEY] [--runs N]

Times, N times each in turn (median printed): reading every file of DIR once
(dd with 1 MiB reads: the bytes copied out of the page cache, which is warm
for everything after the first round; cat would splice them to /dev/null
without reading), `build/attnd --model-dir DIR --check-config` (config.json read, the
weights bound, sha256 of every file, the Linears packed), and, given FILE,
the same stack from a PyTorch-named weights file (`--weights FILE` with DIR's
hyperparameters), each with its peak resident memory (the child's ru_maxrss).
Then the daemon itself: `build/attnd --model-dir DIR` on 127.0.0.1, the time
until GET /v2/health/ready answers 200 (ready: the model loaded and
packed), one POST /v1/encode of B=8 L=128 token ids (embeddings for a
directory without an embedding module), and its VmHWM and VmRSS after it
(/proc/PID/status).  Peak resident memory is also given against the size of
DIR's weights (model.safetensors, or its shards).
Prints RESULT KEY_read_s, KEY_dir_s, KEY_dir_extra_s (the directory's
start-up less the reading), KEY_dir_rss_mib, KEY_weights_mib, KEY_ready_s,
KEY_daemon_hwm_mib, KEY_daemon_rss_mib, KEY_peak_ratio (the larger of the two
peaks over the weights' size), and with FILE KEY_file_s, KEY_file_rss_mib and
KEY_rss_extra_mib, for bench/run.sh (KEY: --name, default startup).
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import tempfile
import time
import urllib.request


def timed(cmd):
    """wall seconds of one child run, which must succeed."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.decode()[-400:]}")
    return wall


def peak_rss_mib(cmd):
    """The peak resident memory of cmd alone: run it in a fresh child whose
    own getrusage sees only it."""
    code = ("import resource, subprocess, sys\n"
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,"
            " check=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run(["/usr/bin/python3", "-c", code] + cmd, capture_output=True, check=True)
    return int(out.stdout) / 1024.0


def status_mib(pid, field):
    """A /proc/PID/status field (VmHWM, VmRSS) in MiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise SystemExit(f"/proc/{pid}/status has no {field}")


def daemon(attnd, d, cfg):
    """(seconds to ready, VmHWM MiB, VmRSS MiB after one request, what it sent)."""
    log = tempfile.TemporaryFile("w+", encoding="utf-8")  # attnd's stderr: its port
    t0 = time.perf_counter()
    p = subprocess.Popen([attnd, "--model-dir", d, "--host", "127.0.0.1", "--port", "0",
                          "--no-access-log"], stdout=subprocess.DEVNULL, stderr=log)
    try:
        port, ready = None, None
        while ready is None:
            if p.poll() is not None:
                log.seek(0)
                raise SystemExit(f"attnd exited ({p.returncode}): {log.read()[-400:]}")
            if time.perf_counter() - t0 > 120:
                raise SystemExit("attnd was not ready within 120 s")
            if port is None:
                log.seek(0)
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
                port = m and m.group(1)
            if port:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready",
                                                timeout=2) as r:
                        if r.status == 200:
                            ready = time.perf_counter() - t0
                except OSError:
                    pass
            time.sleep(0.01)
        B, L, D = 8, 128, cfg["hidden_size"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/model", timeout=10) as r:
            has_ids = json.load(r).get("embedding") is not None
        rng = random.Random(0)
        if has_ids:
            body = {"input_ids": [[rng.randrange(3, cfg["vocab_size"]) for _ in range(L)]
                                  for _ in range(B)]}
            what = f"B={B} L={L} token ids"
        else:
            body = {"embeddings": [[[rng.gauss(0, 1) for _ in range(D)] for _ in range(L)]
                                   for _ in range(B)]}
            what = f"B={B} L={L} embeddings"
        body.update({"attention": "none", "encoding": "base64"})
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/encode",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            r.read()
        return ready, status_mib(p.pid, "VmHWM"), status_mib(p.pid, "VmRSS"), what
    finally:
        p.terminate()
        p.wait()
        log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--weights")
    ap.add_argument("--name", default="startup")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--attnd", default="build/attnd")
    a = ap.parse_args()
    k = a.name
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    files = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir))
    size = sum(os.path.getsize(f) for f in files)
    weights = sum(os.path.getsize(f) for f in files
                  if re.fullmatch(r"model(-\d+-of-\d+)?\.safetensors", os.path.basename(f)))
    read_cmd = ["sh", "-c", 'for f; do dd if="$f" of=/dev/null bs=1M status=none; done', "dd"] + files
    dir_cmd = [a.attnd, "--model-dir", a.dir, "--check-config"]
    file_cmd = a.weights and [
        a.attnd, "--weights", a.weights, "--d-model", str(cfg["hidden_size"]),
        "--n-heads", str(cfg["num_attention_heads"]), "--d-ff", str(cfg["intermediate_size"]),
        "--n-layers", str(cfg["num_hidden_layers"]), "--activation", "gelu",
        "--layer-norm-eps", str(cfg["layer_norm_eps"]), "--check-config"]
    reads, dirs, plain = [], [], []
    for _ in range(a.runs):
        reads.append(timed(read_cmd))
        dirs.append(timed(dir_cmd))
        if file_cmd:
            plain.append(timed(file_cmd))
    rd, dr = statistics.median(reads), statistics.median(dirs)
    rss_dir = peak_rss_mib(dir_cmd)
    ready, hwm, rss, what = daemon(a.attnd, a.dir, cfg)
    wmib = weights / 2**20
    ratio = max(rss_dir, hwm) / wmib
    print(f"$ dd if=FILE of=/dev/null bs=1M, for each file of {a.dir} ({size / 2**20:.0f} MiB, "
          f"the weights {wmib:.0f} MiB)")
    print(f"$ {' '.join(dir_cmd)}")
    if file_cmd:
        print(f"$ {' '.join(file_cmd)}")
    print(f"$ {a.attnd} --model-dir {a.dir} --host 127.0.0.1 --port 0 --no-access-log; "
          f"GET /v2/health/ready until 200; POST /v1/encode ({what}, attention none)")
    print(f"reading the directory once: {rd:.3f} s (median of {a.runs}: "
          f"{', '.join(f'{x:.3f}' for x in reads)})")
    print(f"attnd --model-dir --check-config: {dr:.3f} s ({', '.join(f'{x:.3f}' for x in dirs)}), "
          f"peak resident {rss_dir:.0f} MiB ({rss_dir / wmib:.2f}x the weights)")
    print(f"attnd --model-dir, the daemon: ready after {ready:.3f} s; after one request peak "
          f"resident {hwm:.0f} MiB ({hwm / wmib:.2f}x the weights), resident {rss:.0f} MiB")
    line = (f"RESULT {k}_read_s={rd:.3f} {k}_dir_s={dr:.3f} {k}_dir_extra_s={dr - rd:.3f} "
            f"{k}_dir_rss_mib={rss_dir:.0f} {k}_weights_mib={wmib:.0f} {k}_ready_s={ready:.3f} "
            f"{k}_daemon_hwm_mib={hwm:.0f} {k}_daemon_rss_mib={rss:.0f} {k}_peak_ratio={ratio:.4f}")
    if file_cmd:
        fl = statistics.median(plain)
        rss_file = peak_rss_mib(file_cmd)
        print(f"attnd --weights (PyTorch names, the same stack) --check-config: {fl:.3f} s "
              f"({', '.join(f'{x:.3f}' for x in plain)}), peak resident {rss_file:.0f} MiB")
        print(f"-> start-up less the reading: {dr - rd:.3f} s; peak resident over the PyTorch "
              f"file's: {rss_dir - rss_file:.0f} MiB")
        line += (f" {k}_file_s={fl:.3f} {k}_file_rss_mib={rss_file:.0f} "
                 f"{k}_rss_extra_mib={rss_dir - rss_file:.0f}")
    else:
        print(f"-> start-up less the reading: {dr - rd:.3f} s")
    print(line)


if __name__ == "__main__":
    main()
