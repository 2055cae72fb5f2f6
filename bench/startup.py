#!/usr/bin/python3
"""startup.py - attnd's start-up from a Hugging Face directory, measured.

    /usr/bin/python3 bench/startup.py --dir DIR --weights FILE [--runs N]

Times, N times each in turn (median printed): reading every file of DIR once
(dd with 1 MiB reads: the bytes copied out of the page cache, which is warm
for everything after the first round; cat would splice them to /dev/null
without reading), `build/attnd --model-dir DIR --check-config` (config.json read, the
weights bound, sha256 of every file, the Linears packed), and the same stack
from FILE, a PyTorch-named weights file (`--weights FILE` with DIR's
hyperparameters), each with its peak resident memory (the child's ru_maxrss).
Prints RESULT startup_read_s, startup_dir_s, startup_dir_extra_s (the
directory's start-up less the reading), startup_dir_rss_mib,
startup_file_rss_mib and startup_rss_extra_mib for bench/run.sh.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import time


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--attnd", default="build/attnd")
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    files = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir))
    size = sum(os.path.getsize(f) for f in files)
    read_cmd = ["sh", "-c", 'for f; do dd if="$f" of=/dev/null bs=1M status=none; done', "dd"] + files
    dir_cmd = [a.attnd, "--model-dir", a.dir, "--check-config"]
    file_cmd = [a.attnd, "--weights", a.weights, "--d-model", str(cfg["hidden_size"]),
                "--n-heads", str(cfg["num_attention_heads"]), "--d-ff",
                str(cfg["intermediate_size"]), "--n-layers", str(cfg["num_hidden_layers"]),
                "--activation", "gelu", "--layer-norm-eps", str(cfg["layer_norm_eps"]),
                "--check-config"]
    reads, dirs, plain = [], [], []
    for _ in range(a.runs):
        reads.append(timed(read_cmd))
        dirs.append(timed(dir_cmd))
        plain.append(timed(file_cmd))
    rd, dr, fl = statistics.median(reads), statistics.median(dirs), statistics.median(plain)
    rss_dir, rss_file = peak_rss_mib(dir_cmd), peak_rss_mib(file_cmd)
    print(f"$ dd if=FILE of=/dev/null bs=1M, for each file of {a.dir} ({size / 2**20:.0f} MiB)")
    print(f"$ {' '.join(dir_cmd)}")
    print(f"$ {' '.join(file_cmd)}")
    print(f"reading the directory once: {rd:.3f} s (median of {a.runs}: "
          f"{', '.join(f'{x:.3f}' for x in reads)})")
    print(f"attnd --model-dir --check-config: {dr:.3f} s ({', '.join(f'{x:.3f}' for x in dirs)}), "
          f"peak resident {rss_dir:.0f} MiB")
    print(f"attnd --weights (PyTorch names, the same stack) --check-config: {fl:.3f} s "
          f"({', '.join(f'{x:.3f}' for x in plain)}), peak resident {rss_file:.0f} MiB")
    print(f"-> start-up less the reading: {dr - rd:.3f} s; peak resident over the PyTorch "
          f"file's: {rss_dir - rss_file:.0f} MiB")
    print(f"RESULT startup_read_s={rd:.3f} startup_dir_s={dr:.3f} startup_file_s={fl:.3f} "
          f"startup_dir_extra_s={dr - rd:.3f} startup_dir_rss_mib={rss_dir:.0f} "
          f"startup_file_rss_mib={rss_file:.0f} startup_rss_extra_mib={rss_dir - rss_file:.0f}")


if __name__ == "__main__":
    main()
