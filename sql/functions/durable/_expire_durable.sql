-- jobctl._expire_durable: the retention of steps and events (maintain_partitions): the steps of
-- jobs that have left the hot tables (archived or deleted; a job carried over keeps its steps),
-- the children they spawned, and the events emitted before the hot retention. Writes: _step,
-- _spawn, _emitted (delete).
create or replace function jobctl._expire_durable(p_hot interval)
returns void
language plpgsql
as $$
begin
    delete from jobctl._step as s
    where s.job_created_at < now() - p_hot
        and not exists (select from jobctl.job as j where j.job_id = s.job_id and j.created_at = s.job_created_at);
    delete from jobctl._spawn as s
    where not exists (select from jobctl.job as j where j.job_id = s.parent_id);
    delete from jobctl._emitted as e where e.emitted_at < now() - p_hot;
end
$$;
