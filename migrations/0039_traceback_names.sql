-- 0039_traceback_names: issue 33, item 22. Immutable once landed: later changes go into a new
-- numbered migration.
--
-- last_traceback: the traceback of the failure last_error describes (jobctl.fail_job's traceback,
-- its last 8,192 characters; NULL for a failure without one, cleared whenever last_error is).
-- workflow_name: the name submit_workflow gave the job (NULL for a job submitted otherwise).
-- Both columns are NULL: a metadata-only change on the existing rows. job and job_archive gain them
-- in the same order (jobctl._job_view reads the two as one, and a day's partition moves from one to
-- the other).
alter table jobctl.job add column last_traceback text, add column workflow_name text;
alter table jobctl.job_archive add column last_traceback text, add column workflow_name text;
alter type jobctl.job_info add attribute last_traceback text, add attribute workflow_name text;

-- fail_job gains traceback, _end_attempts p_traceback, _submit p_names (new signatures: the old ones
-- go; sql/functions makes the new ones in the same migrate)
drop function if exists jobctl.fail_job(bigint, bigint, text, boolean);
drop function if exists jobctl._end_attempts(jsonb, text, boolean, boolean);
drop function if exists jobctl._submit(jobctl._job_spec[], boolean, boolean, boolean, text, timestamptz);
