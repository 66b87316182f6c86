-- 0035_move_keys: dedup keys whose holder is on the other shard of a tenant's unfinished move
-- (issue 33, item 3; docs/operations.md, Moving a tenant between shards). Immutable once landed:
-- later changes go into a new numbered migration.
--
-- On the source, jobctl._move_out_delete keeps the key of each job it deletes (the job now lives on
-- the target); on the target, jobctl._move_in_keys keeps the keys of the jobs still on the source at
-- the fence (running, or pending and failed ones the drain copies later). jobctl._submit takes such a
-- row as the key's holder, as it takes a job of its own, so that a repeat answers the job on the
-- other shard (duplicate = true; the router routes its id there) instead of making a second one. The
-- source's rows go when its move finishes (jobctl._move_out_finish), the target's when the mover
-- ends the move there (jobctl._move_in_end); a row whose job comes in goes with the import.
create table jobctl._move_key (
    job_id bigint primary key,
    tenant_id text not null,
    dedup_key text not null,
    state text not null,            -- the holder's state when its key was recorded
    created_at timestamptz not null  -- the holder's, for jobctl._submit's newest-holder order
);
create index _move_key_key_idx on jobctl._move_key (tenant_id, dedup_key, created_at desc);
-- no policy: no role but the owner (the functions, the mover) sees a row, even if granted SELECT
alter table jobctl._move_key enable row level security;
