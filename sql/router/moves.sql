-- Moving a tenant between shards (docs/operations.md, Moving a tenant between shards): the order of
-- the move's steps, on the router, which the mover (`jobctl shards move`, python/jobctl/shard_move.py)
-- asks for the next step and then does it. A move is a sequence of transactions on three databases
-- (router, source, target), each committed before the next starts: PL/Proxy runs one remote
-- statement per call and cannot hold that sequence, so the mover runs each step on its shard (the
-- shards' private functions, sql/functions/shard/_move_*.sql) and reports it done here. The router's own
-- steps (mark, flip) are done here, in the call that reaches them. Every step can be run again: a
-- mover that crashes (kill -9 included) leaves the move at the step it was doing, and the next run
-- does that step again and goes on.
--
--     begin   source: record the move, pause the tenant's claims (its running jobs drain)
--     mark    router: placement.moving_to = target (submits still go to the source)
--     open    target: the tenant with the source's settings, grants and API tokens, paused
--     copy    page by page until none is left: source takes the jobs' queue rows (unclaimable from
--             then on) -> router routes their ids to the target (jobctl_router.move_route) -> target
--             inserts them under the same ids -> source deletes them, keeping their dedup keys
--     fence   source: refuses the tenant's submits (JC011; the router's callers send them again)
--     keys    source: the dedup keys its jobs still hold, and its events -> target: records them
--             (and wakes the jobs parked on those events)
--     resume  target: the tenant claims there (unless it was paused)
--     flip    router: placement.shard = target
--     drain   copy again until the source has no job of the tenant running, pending or failed and
--             no transaction older than the fence (jobctl._move_out_finish)
--     end     target: forgets the source's keys
--     done

-- jobctl_router.move_next: the next step of moving p_tenant_id to shard p_to, after p_done (the step
-- the caller has just done; NULL: a run's first call). Starts the move (step 'begin') unless one to
-- p_to is under way, which it goes on with, at the step it was left at; a tenant placed on p_to with
-- no move under way has nothing to do ('done'). A p_done that is not the move's step is refused
-- (JC010): steps run in order. Returns the step, the source and target shards with their connect
-- strings, `performed` (the router's step this call did: mark or flip, else NULL) and `resumed` (a
-- run's first call found the move under way). Refuses a shard the router does not have (JC001), a
-- tenant not placed on any shard (P0002: it has no jobs) and a tenant moving to another shard
-- (JC010). As the router's owner (granted to no role). Locks: the move row and the tenant's
-- placement. Writes: move, placement (mark, flip).
create or replace function jobctl_router.move_next(p_tenant_id text, p_to integer, p_done text default null)
returns table (
    step text, from_shard integer, from_connstr text, to_shard integer, to_connstr text, performed text,
    resumed boolean
)
language plpgsql
as $$
declare
    v_order constant text[] := array[
        'begin', 'mark', 'open', 'copy', 'fence', 'keys', 'resume', 'flip', 'drain', 'end', 'done'
    ];
    v_placed jobctl_router.placement;
    v_move jobctl_router.move;
    v_resumed boolean := false;
    v_performed text;
begin
    if not exists (select from jobctl_router.shard as s where s.shard = p_to) then
        raise exception using errcode = 'JC001', message = format('no shard %s in jobctl_router.shard', p_to),
            detail = 'field: to', hint = 'Add it first: jobctl shards init-router --shard N=DSN.';
    end if;
    select * into v_placed from jobctl_router.placement as p where p.tenant_id = p_tenant_id for update;
    if not found then
        raise exception using errcode = 'P0002',
            message = format('tenant %s is not placed on any shard (it has no jobs)', p_tenant_id),
            detail = 'field: tenant_id';
    end if;
    select * into v_move from jobctl_router.move as m where m.tenant_id = p_tenant_id for update;
    if v_placed.moving_to is not null and v_placed.moving_to <> p_to then
        raise exception using errcode = 'JC010',
            message = format('tenant %s is moving to shard %s: run that move again first', p_tenant_id, v_placed.moving_to),
            detail = 'field: to', hint = 'A tenant moves to one shard at a time.';
    end if;
    if v_move.tenant_id is null or v_move.step = 'done' or v_move.to_shard <> p_to then
        if p_done is not null then
            raise exception using errcode = 'JC010',
                message = format('tenant %s has no move to shard %s under way', p_tenant_id, p_to),
                detail = 'field: done', hint = 'Start it again: jobctl shards move.';
        end if;
        if v_placed.shard = p_to then  -- already there: nothing to do
            return query select 'done', null::integer, null::text, p_to, null::text, null::text, false;
            return;
        end if;
        insert into jobctl_router.move as m (tenant_id, from_shard, to_shard, step)
        values (p_tenant_id, v_placed.shard, p_to, 'begin')
        on conflict (tenant_id) do update
        set from_shard = excluded.from_shard, to_shard = excluded.to_shard, step = 'begin', started_at = now(), updated_at = now()
        returning * into v_move;
    elsif p_done is null then
        v_resumed := true;
    elsif p_done is distinct from v_move.step then
        raise exception using errcode = 'JC010',
            message = format('the move of tenant %s is at step %s, not %s', p_tenant_id, v_move.step, p_done),
            detail = 'field: done', hint = 'Steps run in order: run the move again.';
    else
        v_move.step := v_order[array_position(v_order, v_move.step) + 1];
        -- the router's own steps, done here
        if v_move.step = 'mark' then
            update jobctl_router.placement as p set moving_to = v_move.to_shard, updated_at = now()
            where p.tenant_id = p_tenant_id and p.shard = v_move.from_shard;
            v_performed := v_move.step;
            v_move.step := 'open';
        elsif v_move.step = 'flip' then
            update jobctl_router.placement as p set shard = v_move.to_shard, moving_to = null, updated_at = now()
            where p.tenant_id = p_tenant_id and p.shard = v_move.from_shard;
            v_performed := v_move.step;
            v_move.step := 'drain';
        end if;
        update jobctl_router.move as m set step = v_move.step, updated_at = now() where m.tenant_id = p_tenant_id;
    end if;
    return query
    select v_move.step, v_move.from_shard, s.connstr, v_move.to_shard, t.connstr, v_performed, v_resumed
    from jobctl_router.shard as s, jobctl_router.shard as t
    where s.shard = v_move.from_shard and t.shard = v_move.to_shard;
end
$$;

-- jobctl_router.move_route: route the ids of a page of a moving tenant's jobs (taken out of the
-- source's queues, not yet on the target) to the move's target, before the target inserts them, so
-- that their by-id calls find them there once they are. Only while the move copies (its step copy or
-- drain: JC010 otherwise). Again for the same ids it changes nothing. Returns how many ids it routed.
-- As the router's owner. Writes: job_route.
create or replace function jobctl_router.move_route(p_tenant_id text, p_ids bigint[])
returns integer
language plpgsql
as $$
declare
    v_target integer;
    v_n integer;
begin
    select m.to_shard into v_target from jobctl_router.move as m
    where m.tenant_id = p_tenant_id and m.step in ('copy', 'drain');
    if not found then
        raise exception using errcode = 'JC010',
            message = format('tenant %s has no move copying its jobs', p_tenant_id),
            detail = 'field: tenant_id', hint = 'Run the move again: jobctl shards move.';
    end if;
    insert into jobctl_router.job_route as r (job_id, shard)
    select u.id, v_target from unnest(p_ids) as u (id)
    on conflict (job_id) do update set shard = excluded.shard;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;
