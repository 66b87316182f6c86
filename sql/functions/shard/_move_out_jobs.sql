-- jobctl._move_out_jobs: one page of a moving tenant's unfinished, unclaimed jobs on the source
-- shard, taken out of its queues: the next p_max_jobs jobs after p_after_id in id order that are
-- pending or failed (waiting out a retry), each locked and its queue row (_ready, _held or _delayed)
-- deleted in the same transaction. Whoever deletes a job's queue row owns its next transition, so
-- after this commits no claim here can take these jobs; a claim that got one first made it running,
-- and it is skipped (it finishes here; a retry it leaves comes out in a later page). The job rows
-- stay until jobctl._move_out_delete, after the target has them: a crash between the two and a rerun
-- return them again. A durable job's state comes along (docs/durable.md): its saved steps, with the
-- outcome of each child it spawned that has ended (as jobctl.await_job would save it: the child is
-- finished history here), its wait for an event and what it is parked on. Returns {"jobs": [job
-- rows], "events": [their _event rows], "steps": [_step rows], "waits": [_awaiting rows], "parked":
-- {job_id: sleep or event}, "last_id": id}.
-- Locks: the page's job rows (FOR UPDATE), first: as jobctl._wake_awaiting takes them.
-- Writes: _ready, _held, _delayed (delete), _stat_delta.
create or replace function jobctl._move_out_jobs(p_tenant_id text, p_after_id bigint, p_max_jobs integer)
returns jsonb
language plpgsql
as $$
declare
    v_ids bigint[];
    v_page jsonb;
    v_parked jsonb;
begin
    if not exists (
        select from jobctl._tenant_move as m where m.tenant_id = p_tenant_id and m.finished_at is null
    ) then
        raise exception using errcode = 'JC010', message = format('tenant %s is not moving off this shard', p_tenant_id),
            detail = 'field: tenant_id', hint = 'Start the move with jobctl shards move.';
    end if;
    select array_agg(j.job_id order by j.job_id), jsonb_agg(to_jsonb(j) order by j.job_id)
    into v_ids, v_page
    from (
        select * from jobctl.job as j
        where j.tenant_id = p_tenant_id and j.job_id > p_after_id and j.state in ('pending', 'failed')
        order by j.job_id
        limit p_max_jobs
        for update
    ) as j;
    if v_ids is null then
        return jsonb_build_object(
            'jobs', '[]'::jsonb, 'events', '[]'::jsonb, 'steps', '[]'::jsonb, 'waits', '[]'::jsonb,
            'parked', '{}'::jsonb, 'last_id', null
        );
    end if;
    select jsonb_object_agg(d.job_id::text, d.parked) into v_parked
    from jobctl._delayed as d
    where d.tenant_id = p_tenant_id and d.job_id = any(v_ids) and d.parked is not null;
    -- the queue rows, and the gauges they stood for, in the order jobs move between them
    -- (_promote_due: _delayed to _ready or _held; _admit: _held to _ready), each in a statement of
    -- its own: a delete that waited for a mover's lock finds its row gone, and the next statement's
    -- snapshot, taken after that mover's commit, finds the row it made
    with delayed as (
        delete from jobctl._delayed as d where d.tenant_id = p_tenant_id and d.job_id = any(v_ids)
        returning d.queue, d.retry
    )
    insert into jobctl._stat_delta (tenant_id, queue, delayed, retrying)
    select p_tenant_id, d.queue, -count(*) filter (where not d.retry), -count(*) filter (where d.retry)
    from delayed as d
    group by d.queue;
    with held as (
        delete from jobctl._held as h where h.tenant_id = p_tenant_id and h.job_id = any(v_ids)
        returning h.queue
    )
    insert into jobctl._stat_delta (tenant_id, queue, pending)
    select p_tenant_id, h.queue, -count(*) from held as h
    group by h.queue;
    with ready as (
        delete from jobctl._ready as r where r.tenant_id = p_tenant_id and r.job_id = any(v_ids)
        returning r.queue
    )
    insert into jobctl._stat_delta (tenant_id, queue, pending)
    select p_tenant_id, r.queue, -count(*) from ready as r
    group by r.queue;
    return jsonb_build_object(
        'jobs', v_page,
        'events', coalesce((
            select jsonb_agg(to_jsonb(e)) from jobctl._event as e where e.job_id = any(v_ids)
        ), '[]'),
        'steps', coalesce((
            select jsonb_agg(to_jsonb(s)) from (
                select s.* from jobctl._step as s where s.job_id = any(v_ids)
                union all
                select p.job_id, x.step, p.created_at, p.tenant_id, p.attempt, p.lease_epoch, clock_timestamp(),
                    jsonb_build_object('child_id', c.job_id, 'state', c.state, 'result', c.result, 'error', c.last_error)
                from jobctl._spawn as x
                inner join jobctl.job as p on p.job_id = x.parent_id
                inner join jobctl.job as c on c.job_id = x.child_id
                where x.parent_id = any(v_ids) and p.tenant_id = p_tenant_id
                    and c.state in ('completed', 'dead', 'cancelled')
                    and not exists (select from jobctl._step as s where s.job_id = x.parent_id and s.step = x.step)
            ) as s
        ), '[]'),
        'waits', coalesce((
            select jsonb_agg(to_jsonb(a)) from jobctl._awaiting as a where a.job_id = any(v_ids)
        ), '[]'),
        'parked', coalesce(v_parked, '{}'),
        'last_id', v_ids[cardinality(v_ids)]
    );
end
$$;
