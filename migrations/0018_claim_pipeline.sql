-- 0018_claim_pipeline: jobctl.claim_job becomes a pipeline of step functions (check the arguments,
-- promote due jobs, list the lanes, pick, cap, take, start the attempts: docs/design.md §3), which
-- hand each other these three values. Immutable once landed: later changes go into a new numbered
-- migration.
--
-- Periodic work leaves the claim: reaping, schedule expansion and the rotation of the slot
-- partitions run in jobctl.tick, which workers call a few times a second (one at a time per
-- database) and pg_cron every minute. The claim no longer keeps lane cursors, so it keeps no
-- session setting; jobctl._housekeep is gone, and jobctl._lanes returns a _lane_set.

-- the lanes with due work for one queue filter, laid end to end: lane i is queues[i], tenants[i],
-- from lows[i] to lows[i + 1] (the last to total); limited: its tenant has max_running or a claim
-- rate; cached: the list came from the shared cache and a fresh listing might find more
create type jobctl._lane_set as (
    queues text [],
    tenants text [],
    limited boolean [],
    lows float8 [],
    total float8,
    cached boolean
);

-- the lanes one round of a claim picked (ascending lane numbers), the jobs wanted from each, the
-- jobs the caps leave (0: none this round); rated: a picked lane's tenant has a claim rate
create type jobctl._picks as (
    lanes integer [],
    wanted integer [],
    n integer [],
    rated boolean
);

-- what one round took: the jobs' ids and created_at, and the lanes that gave fewer than wanted
create type jobctl._took as (
    ids bigint [],
    cas timestamptz [],
    short integer []
);

drop function if exists jobctl._housekeep(integer);
drop function if exists jobctl._lanes(text[], boolean);
-- jobctl.tick gains a parameter (full: the once-a-minute work too)
drop function if exists jobctl.tick();
