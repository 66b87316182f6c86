#!/usr/bin/env node
// Benchmark adapter for graphile-worker 0.17.3 (0.18 needs Node >= 22.18). Protocol: README.md.
//   node graphile.mjs install        --dsn URL
//   node graphile.mjs enqueue-bulk   --dsn URL --jobs N --batch B --first F   (WorkerUtils.addJobs = add_jobs(specs[]))
//   node graphile.mjs enqueue-single --dsn URL --jobs N --clients C --first F (WorkerUtils.addJob = add_job(), pool of C)
//   node graphile.mjs enqueue-paced  --dsn URL --rate R --seconds S --first F
//   node graphile.mjs work           --dsn URL --setting JSON --out FILE
// Setting keys (all optional; defaults are graphile-worker's own):
//   concurrency            jobs run at once by the worker pool (default 1)
//   localQueueSize         preset.worker.localQueue.size: jobs fetched and locked per query (default -1 = off)
//   completeJobBatchDelay  preset.worker.completeJobBatchDelay, ms to batch completions (default -1 = off)
//   pollInterval           ms between polls; new jobs arrive through LISTEN "jobs:insert" (default 2000)
//   maxPoolSize            connections of the worker's pool (default 10)
import pg from "pg";
import { Logger, makeWorkerUtils, run, runMigrations } from "graphile-worker";
import { checkSetting, enqueueBulk, enqueuePaced, enqueueSingle, main, runWork, warmPool } from "./common.mjs";

const TASK = "noop";

// graphile-worker's default logger prints an info line per job: keep warnings and errors only.
const logger = new Logger((scope) => (level, message) => {
  if (level === "error" || level === "warning") {
    process.stderr.write(`graphile-worker ${level}${scope.label ? ` [${scope.label}]` : ""}: ${message}\n`);
  }
});

function makePool(dsn, max) {
  const pool = new pg.Pool({ connectionString: dsn, max, idleTimeoutMillis: 0 });
  pool.on("error", (e) => process.stderr.write(`pg pool error: ${e.message}\n`));
  pool.on("connect", (client) => client.on("error", (e) => process.stderr.write(`pg client error: ${e.message}\n`)));
  return pool;
}

/** WorkerUtils on a pool of `max` connections, all opened before anything is timed. */
async function utilsOn(dsn, max) {
  const pool = makePool(dsn, max);
  await warmPool(pool, max);
  const utils = await makeWorkerUtils({ pgPool: pool, logger });
  return {
    utils,
    close: async () => {
      await utils.release();
      await pool.end();
    },
  };
}

const SETTING = {
  concurrency: { type: "int", min: 1, default: 1 },
  localQueueSize: { type: "int", min: -1 },
  completeJobBatchDelay: { type: "int", min: -1 },
  pollInterval: { type: "int", min: 1 },
  maxPoolSize: { type: "int", min: 2, default: 10 },
};

await main("graphile", {
  async install({ dsn }) {
    await runMigrations({ connectionString: dsn, logger });
    return {};
  },

  async "enqueue-bulk"(args) {
    const { utils, close } = await utilsOn(args.dsn, 1);
    try {
      return await enqueueBulk(args, (ns) => utils.addJobs(ns.map((n) => ({ identifier: TASK, payload: { n } }))));
    } finally {
      await close();
    }
  },

  async "enqueue-single"(args) {
    const { utils, close } = await utilsOn(args.dsn, args.clients);
    try {
      return await enqueueSingle(args, (n) => utils.addJob(TASK, { n }));
    } finally {
      await close();
    }
  },

  async "enqueue-paced"(args) {
    const { utils, close } = await utilsOn(args.dsn, 1);
    try {
      return await enqueuePaced(args, (payload) => utils.addJob(TASK, payload));
    } finally {
      await close();
    }
  },

  async work(args) {
    const s = checkSetting(args.setting, SETTING);
    const worker = {};
    if (s.localQueueSize !== undefined) worker.localQueue = { size: s.localQueueSize };
    if (s.completeJobBatchDelay !== undefined) worker.completeJobBatchDelay = s.completeJobBatchDelay;
    let pool;
    return runWork(args, {
      async prepare() {
        pool = makePool(args.dsn, s.maxPoolSize);
        await warmPool(pool, s.maxPoolSize);
        const { rows } = await pool.query("select to_regclass('graphile_worker._private_jobs') is not null as ok");
        if (!rows[0].ok) throw new Error("graphile_worker schema is missing: run install first");
      },
      async start(record) {
        // The runner starts only after "go": no job is fetched or locked before it.
        const runner = await run({
          pgPool: pool,
          logger,
          noHandleSignals: true,
          concurrency: s.concurrency,
          ...(s.pollInterval !== undefined ? { pollInterval: s.pollInterval } : {}),
          preset: { worker },
          parsedCronItems: [],
          taskList: {
            [TASK]: async (payload) => {
              record([payload]);
            },
          },
        });
        runner.promise.catch((e) => {
          process.stderr.write(`graphile: runner failed: ${e?.stack || e}\n`);
          process.exit(1);
        });
        return async () => {
          await runner.stop();
          await pool.end();
        };
      },
    });
  },
});
