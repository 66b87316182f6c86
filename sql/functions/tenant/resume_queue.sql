-- jobctl.resume_queue: restart claims from a paused queue (jobctl.pause_queue(queue, false)).
create or replace function jobctl.resume_queue(queue text)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return jobctl.pause_queue(resume_queue.queue, false);
end
$$;

comment on function jobctl.resume_queue(text) is
'Resume claims from a paused queue, at once (pause_queue(queue, false)). Returns whether the
state changed.
Errors: JC001 a bad queue, 42501 the caller does not act for every tenant.
Example:
select jobctl.resume_queue(''email'');';
