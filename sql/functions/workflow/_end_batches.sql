-- jobctl._end_batches: end the given batches, whose members have all ended (completed, dead or
-- cancelled): each batch row gets finished_at and the members' counts by outcome, once (a batch
-- another transaction ended is skipped: the update's row lock and its finished_at guard). Returns
-- the callbacks that fire (on_finish always, on_success when no member was discarded, on_discard
-- when one was: dead or cancelled) and those that do not; the caller releases and cancels them.
-- Locks: the batch rows. Writes: batch.
create or replace function jobctl._end_batches(p_batches bigint[], out fire bigint[], out skip bigint[])
language plpgsql
as $$
begin
    with counted as (
        select b.batch_id,
            count(*) filter (where m.state = 'completed') as completed,
            count(*) filter (where m.state = 'dead') as dead,
            count(*) filter (where m.state = 'cancelled') as cancelled
        from jobctl.batch as b
        inner join jobctl.job as m on m.batch_id = b.batch_id
        where b.batch_id = any(p_batches)
            and m.job_id is distinct from b.on_finish and m.job_id is distinct from b.on_success
            and m.job_id is distinct from b.on_discard
        group by b.batch_id
    ),
    ended as (
        update jobctl.batch as b
        set finished_at = clock_timestamp(),
            counts = jsonb_build_object('completed', c.completed, 'dead', c.dead, 'cancelled', c.cancelled)
        from counted as c
        where b.batch_id = c.batch_id and b.finished_at is null
        returning b.on_finish, b.on_success, b.on_discard, c.dead + c.cancelled > 0 as discarded
    )
    select
        array_remove(array_agg(e.on_finish) || array_agg(case when e.discarded then e.on_discard else e.on_success end), null),
        array_remove(array_agg(case when e.discarded then e.on_success else e.on_discard end), null)
    into fire, skip
    from ended as e;
    if cardinality(fire) = 0 then
        fire := null;
    end if;
    if cardinality(skip) = 0 then
        skip := null;
    end if;
end
$$;
