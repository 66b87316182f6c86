-- 0041_glossary_names: private names that now match the glossary (docs/design.md §9). Immutable once
-- landed: later changes go into a new numbered migration.
--
-- A caller awaiting a job's end is a watcher (the word `waiting` is the state of a job blocked on its
-- parents): jobctl._waiter becomes jobctl._watcher, and the notice sent to watchers when a job
-- finishes is jobctl._notify_watchers (it was _hint_finished: a hint is the NOTIFY to workers).
-- Unblocking the children of a finished parent is jobctl._unblock_children (it was _release_waiting:
-- to release is to give a lease back). The drained time units of _ready, _running and _lane_cache
-- are periods: jobctl._rotate_periods (it was _rotate_slots). Renames only: no row moves, and the
-- functions under their new names are created by the same `jobctl migrate`, in its transaction.
alter table jobctl._waiter rename to _watcher;
alter index jobctl._waiter_job rename to _watcher_job;
alter index jobctl._waiter_tenant rename to _watcher_tenant;
alter index jobctl._waiter_expires rename to _watcher_expires;
drop function if exists jobctl._hint_finished(bigint[]);
drop function if exists jobctl._release_waiting(bigint[], boolean);
drop function if exists jobctl._rotate_slots(timestamptz);
