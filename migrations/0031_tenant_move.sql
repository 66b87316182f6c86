-- 0031_tenant_move: a tenant may move to another shard (issue 23, docs/operations.md, Moving a
-- tenant between shards). Immutable once landed: later changes go into a new numbered migration.
--
-- The source shard keeps the record of a move out: which shard the tenant goes to, whether it was
-- paused before (the target takes that state over when the move flips), and when its submits were
-- fenced. The move's own steps are functions (jobctl._move_out_*, jobctl._move_in_*) that the mover,
-- python/jobctl/shard_move.py, calls on the source, the target and the router in turn; every step
-- can be run again after a crash and converges.
create table jobctl._tenant_move (
    tenant_id text primary key,
    to_shard integer not null check (to_shard between 0 and 63),
    was_paused boolean not null,
    started_at timestamptz not null default clock_timestamp(),
    fenced_at timestamptz,    -- the tenant's submits here are refused (JC011) from then on
    finished_at timestamptz   -- nothing of the tenant is left here but finished history
);
-- no policy: no role but the owner (the functions, the mover) sees a row, even if granted SELECT
alter table jobctl._tenant_move enable row level security;

-- the shard the tenant moved to: jobctl._submit refuses its submits here (JC011), so that nothing
-- new lands on a shard whose copy of the tenant no longer runs; NULL: the tenant lives here
alter table jobctl.tenant add column moved_to integer;
