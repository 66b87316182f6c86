#!/usr/bin/env node
// Benchmark adapter for pg-boss 10.4.2 (11+ needs Node >= 22). Protocol: README.md.
//   node pgboss.mjs install        --dsn URL                                 (start() = migrations, createQueue('noop'))
//   node pgboss.mjs enqueue-bulk   --dsn URL --jobs N --batch B --first F    (boss.insert(jobs): one INSERT per call)
//   node pgboss.mjs enqueue-single --dsn URL --jobs N --clients C --first F  (boss.send(): one instance, pool max C, C loops)
//   node pgboss.mjs enqueue-paced  --dsn URL --rate R --seconds S --first F  (boss.send())
//   node pgboss.mjs work           --dsn URL --setting JSON --out FILE
// Setting keys (all optional; defaults are pg-boss's own):
//   works                   boss.work() loops in this process (default 1)
//   batchSize               jobs fetched per poll by each loop; the handler gets them as an array (default 1)
//   pollingIntervalSeconds  sleep between polls, minus the fetch time; >= 0.5 (default 2)
//   max                     connections of the instance's pool (default 10, node-postgres' default)
// Every instance keeps pg-boss's defaults supervise = schedule = true: its docs call turning them off an
// advanced case, not a performance setting. migrate is true only in `install`.
import PgBoss from "pg-boss";
import { checkSetting, enqueueBulk, enqueuePaced, enqueueSingle, main, runWork } from "./common.mjs";

const QUEUE = "noop";

/** A started instance whose pool holds `warm` open connections before anything is timed. */
async function startBoss(dsn, { max, warm, migrate = false }) {
  // migrate: only `install` creates/migrates the schema; elsewhere start() just checks it (and fails if absent).
  // idleTimeoutMillis: 0 keeps the warmed connections open while the process waits (e.g. for "go").
  const boss = new PgBoss({ connectionString: dsn, migrate, ...(max !== undefined ? { max } : {}), idleTimeoutMillis: 0 });
  boss.on("error", (e) => process.stderr.write(`pg-boss error: ${e?.message || e}\n`));
  await boss.start();
  if (warm) {
    const db = boss.getDb();
    await Promise.all(Array.from({ length: warm }, () => db.executeSql("select pg_sleep(0.02)", [])));
  }
  return boss;
}

const stopBoss = (boss) => boss.stop({ graceful: true, wait: true });

const SETTING = {
  works: { type: "int", min: 1, default: 1 },
  batchSize: { type: "int", min: 1 },
  pollingIntervalSeconds: { type: "number", min: 0.5 },
  max: { type: "int", min: 1, default: 10 },
};

await main("pgboss", {
  async install({ dsn }) {
    const boss = await startBoss(dsn, { migrate: true });
    try {
      await boss.createQueue(QUEUE); // v10: a queue must exist before send; it is a LIST partition of pgboss.job
    } finally {
      await stopBoss(boss);
    }
    return {};
  },

  async "enqueue-bulk"(args) {
    const boss = await startBoss(args.dsn, { warm: 1 });
    try {
      return await enqueueBulk(args, (ns) => boss.insert(ns.map((n) => ({ name: QUEUE, data: { n } }))));
    } finally {
      await stopBoss(boss);
    }
  },

  async "enqueue-single"(args) {
    const boss = await startBoss(args.dsn, { max: args.clients, warm: args.clients });
    try {
      return await enqueueSingle(args, (n) => boss.send(QUEUE, { n }));
    } finally {
      await stopBoss(boss);
    }
  },

  async "enqueue-paced"(args) {
    const boss = await startBoss(args.dsn, { warm: 1 });
    try {
      return await enqueuePaced(args, (payload) => boss.send(QUEUE, payload));
    } finally {
      await stopBoss(boss);
    }
  },

  async work(args) {
    const s = checkSetting(args.setting, SETTING);
    const options = {};
    if (s.batchSize !== undefined) options.batchSize = s.batchSize;
    if (s.pollingIntervalSeconds !== undefined) options.pollingIntervalSeconds = s.pollingIntervalSeconds;
    let boss;
    return runWork(args, {
      async prepare() {
        boss = await startBoss(args.dsn, { max: s.max, warm: s.max });
        if (!(await boss.getQueue(QUEUE))) throw new Error(`queue ${QUEUE} is missing: run install first`);
      },
      async start(record) {
        // The work() loops are registered only after "go": nothing is fetched before it.
        for (let i = 0; i < s.works; i++) {
          await boss.work(QUEUE, options, async (jobs) => {
            record(jobs.map((j) => j.data)); // v10: the handler gets an array of jobs
          });
        }
        return () => stopBoss(boss);
      },
    });
  },
});
