-- 0040_fail_job_cause: fail_job gains cause (why an attempt ended when its handler did not fail it:
-- jobctl._failure). Immutable once landed: later changes go into a new numbered migration.
--
-- A new signature is a new function: the old one goes (sql/functions makes the new one in the same
-- migrate).
drop function if exists jobctl.fail_job(bigint, bigint, text, boolean, text);
