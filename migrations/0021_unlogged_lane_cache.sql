-- 0021_unlogged_lane_cache: the lane cache's partitions are UNLOGGED. Immutable once landed: later
-- changes go into a new numbered migration.
--
-- A claim that found nothing in the shared lane list lists the lanes afresh and shares the listing
-- as a row of jobctl._lane_cache: its only write. In a logged table that row made the claim's
-- commit wait for a WAL flush, as did the tick's deletion of superseded rows, and those flushes
-- queued with the submits' and the completions' (docs/design.md §3). A transaction that wrote no
-- WAL commits without waiting for a flush. The cache is rebuilt by the next claim, so losing it in
-- a crash or a failover (an unlogged table is emptied then) costs one listing. The partitioned
-- parent has no storage of its own; each partition is set.
alter table jobctl._lane_cache_s0 set unlogged;
alter table jobctl._lane_cache_s1 set unlogged;
