-- jobctl._archive_events: the history events of archived jobs (jobctl._event_archive), in job and
-- time order: the exporter writes each job's into its row's events column. As the schema owner.
-- Reads: _event_archive (its job_id index).
create or replace function jobctl._archive_events(p_job_ids bigint[])
returns table (
    job_id bigint, at timestamptz, event text, attempt integer, lease_epoch bigint, worker_id text, detail text
)
language sql
stable
as $$
    select e.job_id, e.at, e.event, e.attempt, e.lease_epoch, e.worker_id, e.detail
    from jobctl._event_archive as e
    where e.job_id = any(p_job_ids)
    order by e.job_id, e.at
$$;
