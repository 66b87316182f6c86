-- 0017_lane_list_age: each lane-cache row records when its lanes were listed. Immutable once
-- landed: later changes go into a new numbered migration.
--
-- A claim that got nothing from the shared list lists the lanes afresh, but not when the shared
-- list is younger than 20 ms (jobctl.claim_job): under a held snapshot a listing walks every dead
-- entry of the lanes claims have drained (heap visits the snapshot makes necessary), 0.93 ms against
-- 0.23 ms without one, and idle claimers listed some 400 times a second
-- (docs/postgres-internals.md §1.4). A constant default: no rewrite.
-- jobctl._housekeep now says whether it made jobs due (those lanes are listed at once).
drop function if exists jobctl._housekeep(integer);
alter table jobctl._lane_cache add column listed_at timestamptz not null default '-infinity';
