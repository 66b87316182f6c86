-- jobctl._promote_due: move delayed jobs whose run_at has come from _delayed to _ready, oldest
-- first, at most p_limit. Rows another session is promoting are skipped, never waited for.
-- Writes: _delayed (delete), _ready (insert). Returns the number promoted.
create or replace function jobctl._promote_due(p_limit integer default 10000)
returns integer
language plpgsql
as $$
declare
    v_queues text[];
    v_count integer;
begin
    with due as (
        delete from jobctl._delayed as d
        where d.ctid = any(array(
            select x.ctid from jobctl._delayed as x
            where x.run_at <= clock_timestamp()
            order by x.run_at, x.job_id
            limit p_limit
            for update skip locked
        ))
        returning d.*
    ),
    moved as (
        insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
        select due.queue, due.tenant_id, due.priority, due.run_at, due.job_id, due.created_at from due
        returning queue
    )
    select array_agg(distinct m.queue), count(*) into v_queues, v_count from moved as m;
    if v_count > 0 then
        perform jobctl._notify(v_queues);
    end if;
    return v_count;
end
$$;
