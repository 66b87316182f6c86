-- jobctl._claim_check: the first step of jobctl.claim_job: its arguments, and the isolation level
-- the claim needs. Raises JC001 naming the argument, or JC007.
-- Calls: nothing. Locks and writes: nothing; reads no table.
create or replace function jobctl._claim_check(
    p_worker_id text, p_queues text[], p_max_jobs integer, p_lease interval
)
returns void
language plpgsql
as $$
begin
    if p_worker_id is null or p_worker_id = '' or length(p_worker_id) > 200 then
        raise exception using errcode = 'JC001', message = 'worker_id must be a non-empty string of at most 200 characters';
    end if;
    if p_max_jobs is null or p_max_jobs not between 1 and 1000 then
        raise exception using errcode = 'JC001', message = format('max_jobs must be from 1 to 1000, not %s', coalesce(p_max_jobs::text, 'NULL'));
    end if;
    if p_lease is null or p_lease <= interval '0' or p_lease > interval '1 day' then
        raise exception using errcode = 'JC001', message = 'lease must be positive and at most 1 day';
    end if;
    if p_queues is not null and array_position(p_queues, null) is not null then
        raise exception using errcode = 'JC001', message = 'queues must not contain NULL';
    end if;
    if cardinality(p_queues) > 1000 or exists (select from unnest(p_queues) as q (queue) where length(q.queue) > 200) then
        raise exception using errcode = 'JC001', message = 'queues must hold at most 1000 names of at most 200 characters',
            detail = 'field: queues';
    end if;
    -- max_running counts what earlier claims committed, and SKIP LOCKED meets rows other claimers
    -- deleted: both need a fresh snapshot per statement
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception using errcode = 'JC007',
            message = format('claim_job needs READ COMMITTED isolation, not %s', upper(current_setting('transaction_isolation'))),
            hint = 'Claim in autocommit mode or in a short READ COMMITTED transaction.';
    end if;
end
$$;
