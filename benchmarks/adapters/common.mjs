// Shared plumbing for the Node adapters (graphile.mjs, pgboss.mjs): the protocol of README.md.
// Argument parsing, the timed enqueue loops, and the `work` life cycle (ready / go / SIGTERM / out
// file). Nothing here knows a peer; each adapter passes the calls that talk to its library.
import { parseArgs } from "node:util";
import { renameSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

// stdout carries only the protocol (one JSON line, or `ready`): anything a library logs goes to stderr.
for (const k of ["log", "info", "debug"]) console[k] = console.error;

/** Wall-clock milliseconds (float), the protocol's clock. */
export const nowMs = () => performance.timeOrigin + performance.now();

export class UsageError extends Error {}

const SUBCOMMANDS = {
  install: [],
  "enqueue-bulk": ["jobs", "batch", "first"],
  "enqueue-single": ["jobs", "clients", "first"],
  "enqueue-paced": ["rate", "seconds", "first"],
  work: ["setting", "out"],
};
const INTS = new Set(["jobs", "batch", "first", "clients"]);
const NUMS = new Set(["rate", "seconds"]);

/** Parse `SUBCOMMAND --dsn URL ...`; returns {cmd, dsn, jobs, batch, first, clients, rate, seconds, setting, out}. */
export function parseCli(argv = process.argv.slice(2)) {
  const options = { dsn: { type: "string" } };
  for (const names of Object.values(SUBCOMMANDS)) for (const n of names) options[n] = { type: "string" };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(e.message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1 || !(positionals[0] in SUBCOMMANDS)) {
    throw new UsageError(`expected one subcommand of: ${Object.keys(SUBCOMMANDS).join(", ")}`);
  }
  const cmd = positionals[0];
  const allowed = new Set(["dsn", ...SUBCOMMANDS[cmd]]);
  for (const k of Object.keys(values)) {
    if (!allowed.has(k)) throw new UsageError(`${cmd}: unexpected option --${k}`);
  }
  for (const k of allowed) {
    if (values[k] === undefined) throw new UsageError(`${cmd}: missing --${k}`);
  }
  const out = { cmd, dsn: values.dsn };
  for (const k of SUBCOMMANDS[cmd]) {
    const v = values[k];
    if (INTS.has(k)) {
      if (!/^-?\d+$/.test(v)) throw new UsageError(`--${k} must be an integer, got ${JSON.stringify(v)}`);
      out[k] = Number(v);
      if (k !== "first" && out[k] < 1) throw new UsageError(`--${k} must be >= 1`);
    } else if (NUMS.has(k)) {
      out[k] = Number(v);
      if (!Number.isFinite(out[k]) || out[k] <= 0) throw new UsageError(`--${k} must be a positive number`);
    } else if (k === "setting") {
      try {
        out.setting = JSON.parse(v);
      } catch (e) {
        throw new UsageError(`--setting is not JSON: ${e.message}`);
      }
      if (out.setting === null || typeof out.setting !== "object" || Array.isArray(out.setting)) {
        throw new UsageError("--setting must be a JSON object");
      }
    } else {
      out[k] = v;
    }
  }
  return out;
}

/**
 * Validate a setting object against {key: {type: "int"|"number", min, default}}; unknown keys are
 * an error (a typo must not silently fall back to a default). Returns the merged setting.
 */
export function checkSetting(setting, spec) {
  const res = {};
  for (const k of Object.keys(setting)) {
    if (!(k in spec)) throw new UsageError(`unknown setting key ${JSON.stringify(k)}; accepted: ${Object.keys(spec).join(", ")}`);
  }
  for (const [k, s] of Object.entries(spec)) {
    const v = k in setting ? setting[k] : s.default;
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isFinite(v) || (s.type === "int" && !Number.isInteger(v))) {
      throw new UsageError(`setting ${k} must be ${s.type === "int" ? "an integer" : "a number"}, got ${JSON.stringify(v)}`);
    }
    if (s.min !== undefined && v < s.min) throw new UsageError(`setting ${k} must be >= ${s.min}`);
    res[k] = v;
  }
  return res;
}

/** Print the subcommand's one JSON object as the last stdout line. */
export function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

/** Run `handlers[cmd](args)`; print its result (if any) as JSON; errors -> stderr, exit 1. */
export async function main(name, handlers) {
  let args;
  try {
    args = parseCli();
    const result = await handlers[args.cmd](args);
    if (result !== undefined) emit(result);
    process.exit(0);
  } catch (e) {
    const msg = e instanceof UsageError ? e.message : e?.stack || String(e);
    process.stderr.write(`${name}${args ? " " + args.cmd : ""}: error: ${msg}\n`);
    process.exit(1);
  }
}

/** Open `n` connections of a pg.Pool at once (so no timed call pays for a connect). */
export async function warmPool(pool, n) {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  for (const c of clients) c.release();
}

/**
 * enqueue-bulk: call `sendBatch(ns)` for consecutive batches of n = first .. first+jobs-1, `batch`
 * per call, one call at a time. Only this loop is timed.
 */
export async function enqueueBulk({ jobs, batch, first }, sendBatch) {
  const t0 = performance.now();
  for (let i = 0; i < jobs; i += batch) {
    const ns = [];
    for (let j = i; j < Math.min(i + batch, jobs); j++) ns.push(first + j);
    await sendBatch(ns);
  }
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, jobs };
}

/**
 * enqueue-single: `clients` concurrent loops share one counter and call `sendOne(n)` one job at a
 * time (each call its own transaction, on the connection the adapter gives that call).
 */
export async function enqueueSingle({ jobs, clients, first }, sendOne) {
  let next = 0;
  const loop = async () => {
    for (let i = next++; i < jobs; i = next++) await sendOne(first + i);
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(clients, jobs) }, loop));
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, jobs };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * enqueue-paced: job i is due at start + i/rate (absolute schedule: no drift; a late call is made
 * at once, and its `t` says when it really began). One call at a time, payload {n, t}.
 * `seconds` = from the first due time to the end of the last call.
 */
export async function enqueuePaced({ rate, seconds, first }, sendOne) {
  const total = Math.max(1, Math.round(rate * seconds));
  const period = 1000 / rate;
  const start = nowMs() + 5;
  let late = 0;
  let maxLate = 0;
  for (let i = 0; i < total; i++) {
    const due = start + i * period;
    let wait = due - nowMs();
    if (wait > 1.5) {
      await sleep(wait - 1); // timers are ~1 ms coarse: sleep short, then yield until due
      wait = due - nowMs();
    }
    while (wait > 0) {
      await new Promise((r) => setImmediate(r));
      wait = due - nowMs();
    }
    if (wait < -5) late++;
    maxLate = Math.max(maxLate, -wait);
    const t = nowMs();
    await sendOne({ n: first + i, t });
  }
  const elapsed = (nowMs() - start) / 1000;
  if (late) {
    process.stderr.write(
      `enqueue-paced: ${late} of ${total} calls began more than 5 ms late (max ${maxLate.toFixed(1)} ms); ` +
        `t is when each call really began\n`,
    );
  }
  return { jobs: total, seconds: elapsed };
}

/**
 * work: `prepare()` connects (before `ready`); after the `go` line, `start(recorder)` starts the
 * real worker(s) and returns an async `stop()` used on SIGTERM/SIGINT. `recorder(payloads)` must be
 * called at handler start with the job payload(s); it records n and, for paced payloads, the
 * pickup latency (one clock reading per handler call). Writes the out file, then exits 0.
 */
export async function runWork({ out }, { prepare, start }) {
  const handled = [];
  const latency = [];
  let goAt = 0;
  const record = (payloads) => {
    const now = nowMs();
    if (!handled.length && goAt) process.stderr.write(`work: first handler call ${(now - goAt).toFixed(1)} ms after go\n`);
    for (const p of payloads) {
      handled.push(p.n);
      if (p.t !== undefined) latency.push(now - p.t);
    }
  };

  let startP = null; // the promise of start(record), resolving to stop()
  let phase = "preparing"; // preparing -> ready -> running
  let stopping = null;
  const finish = (code) => {
    const cpu = process.cpuUsage();
    writeFileSync(`${out}.tmp`, JSON.stringify({ handled, latency_ms: latency, cpu_s: (cpu.user + cpu.system) / 1e6 }) + "\n");
    renameSync(`${out}.tmp`, out);
    process.stderr.write(`work: wrote ${out}: ${handled.length} handled, ${latency.length} latencies\n`);
    process.exit(code);
  };
  const onSignal = (sig) => {
    if (stopping) return;
    process.stderr.write(`work: ${sig} received (${phase}), stopping\n`);
    stopping = (async () => {
      try {
        const stop = startP && (await startP);
        if (stop) await stop();
      } catch (e) {
        process.stderr.write(`work: error while stopping: ${e?.stack || e}\n`);
        finish(1);
      }
      finish(0);
    })();
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));

  const keepAlive = setInterval(() => {}, 1 << 30); // live until a signal; finish() exits
  await prepare();
  if (stopping) return new Promise(() => {});

  const go = new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin });
    let got = false;
    rl.on("line", (line) => {
      if (line.trim() === "go" && !got) {
        got = true;
        rl.close();
        resolve();
      } else if (!got) {
        process.stderr.write(`work: ignoring stdin line ${JSON.stringify(line)} (waiting for "go")\n`);
      }
    });
    rl.on("close", () => {
      if (!got) process.stderr.write('work: stdin closed before "go"; waiting for SIGTERM\n'); // never resolves
    });
  });
  phase = "ready";
  process.stdout.write("ready\n");
  await go;
  goAt = nowMs();
  if (stopping) return new Promise(() => {});
  phase = "running";
  startP = start(record);
  await startP;
  process.stderr.write(`work: worker(s) started ${(nowMs() - goAt).toFixed(1)} ms after go\n`);
  void keepAlive;
  return new Promise(() => {});
}
