// daemon.js - build/attnd for the node tests (the page test, the OpenAPI
// check, the docs' examples): started on an ephemeral 127.0.0.1 port, and
// stopped.  The node counterpart of tests/daemon.c.
"use strict";

const { spawn } = require("child_process");

// Starts attndBin on 127.0.0.1:0 with args (after --host and --port) and
// extra environment env; resolves with {proc, base, text} once the log names
// the port and /health answers 200 (text: everything it logged so far).
// Each daemon is pushed onto list, for stopDaemons.
function startDaemon(attndBin, args, env, list) {
  return new Promise((resolve, reject) => {
    const proc = spawn(attndBin, ["--host", "127.0.0.1", "--port", "0", ...args], {
      env: { ...process.env, OPENBLAS_NUM_THREADS: "1", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const d = { proc, base: null, text: "" };
    list.push(d);
    const timer = setTimeout(() => reject(new Error("attnd did not start:\n" + d.text)), 20000);
    proc.stderr.on("data", async (chunk) => {
      d.text += chunk;
      const m = !d.base && /listening on http:\/\/[^:\s]+:(\d+)/.exec(d.text);
      if (!m) return;
      d.base = "http://127.0.0.1:" + m[1];
      for (let i = 0; i < 200; i++) {
        try {
          if ((await fetch(d.base + "/health")).status === 200) {
            clearTimeout(timer);
            return resolve(d);
          }
        } catch (e) { /* not yet */ }
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    proc.on("exit", (code) => reject(new Error("attnd exited (" + code + "):\n" + d.text)));
  });
}

// SIGTERM to each daemon of list still running, then up to 10 s each to
// exit (SIGKILL after that).
async function stopDaemons(list) {
  for (const d of list) {
    if (d.proc.exitCode !== null || d.proc.signalCode !== null) continue;
    const exited = new Promise((r) => d.proc.once("exit", r));
    d.proc.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10000))]);
    if (d.proc.exitCode === null) d.proc.kill("SIGKILL");
  }
}

// What is wrong with how the stopped daemons of list ended: an exit status
// other than 0 on SIGTERM, or a sanitizer's report in the log (a
// SANITIZER= build); one string each, [] when nothing.
function daemonProblems(list) {
  const problems = [];
  for (const d of list) {
    const tail = "\n--- the end of its log:\n" + d.text.slice(-3000);
    if (d.proc.exitCode !== 0)
      problems.push(`attnd (${d.base}) exited ${d.proc.exitCode ?? d.proc.signalCode} on SIGTERM` + tail);
    if (/AddressSanitizer|LeakSanitizer|runtime error:/.test(d.text))
      problems.push(`attnd (${d.base}): a sanitizer report` + tail);
  }
  return problems;
}

module.exports = { startDaemon, stopDaemons, daemonProblems };
