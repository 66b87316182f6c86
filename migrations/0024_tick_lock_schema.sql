-- 0024_tick_lock_schema: jobctl.tick's lock table moves to a schema no role but the owner may use.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- PostgreSQL takes a query's table locks while parsing it, before the privilege check, so any login
-- with USAGE on schema jobctl (every jobctl role has it) could hold ROW SHARE on jobctl._tick_lock
-- in an open transaction (PREPARE parses and never executes) and keep every tick from taking its
-- EXCLUSIVE lock. Without USAGE on the schema the name does not resolve, and nothing is locked.
create schema jobctl_owner;
revoke all on schema jobctl_owner from public;
alter table jobctl._tick_lock set schema jobctl_owner;
