-- jobctl.put_concurrency_limit: set how many jobs of one concurrency key of a tenant may run at once
-- (concurrency_key NULL: the limit of the tenant's keys that have none of their own; max_running
-- NULL: no limit of its own, so a key falls back to the tenant's, and the tenant's keys to none).
-- A raised limit admits the waiting jobs it makes room for at once (jobctl._admit); a lowered one
-- lets running jobs finish and admits no more until the key is under it.
-- Locks: the tenant row; through _admit the tenant's key locks. Writes: concurrency_limit or
-- tenant (key_max_running), audit_log, through _admit _held and _ready.
create or replace function jobctl.put_concurrency_limit(
    tenant_id text, concurrency_key text, max_running integer
)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_keys text[];
begin
    if put_concurrency_limit.concurrency_key = '' or length(put_concurrency_limit.concurrency_key) > 200 then
        raise exception using errcode = 'JC001', message = 'concurrency_key must be NULL or a string of 1 to 200 characters',
            detail = 'field: concurrency_key';
    end if;
    if put_concurrency_limit.max_running not between 0 and 100000 then
        raise exception using errcode = 'JC001',
            message = format('max_running must be NULL or from 0 to 100000, not %s', put_concurrency_limit.max_running),
            detail = 'field: max_running';
    end if;
    perform from jobctl.tenant as t where t.tenant_id = put_concurrency_limit.tenant_id for update;
    if not found then
        raise exception using errcode = 'P0002', message = format('no tenant %s', put_concurrency_limit.tenant_id),
            detail = 'field: tenant_id', hint = 'Create it with jobctl.put_tenant or by submitting a job for it.';
    end if;
    if put_concurrency_limit.concurrency_key is null then
        update jobctl.tenant as t set key_max_running = put_concurrency_limit.max_running, updated_at = now()
        where t.tenant_id = put_concurrency_limit.tenant_id;
        v_keys := array(select distinct h.concurrency_key from jobctl._held as h where h.tenant_id = put_concurrency_limit.tenant_id);
    else
        if put_concurrency_limit.max_running is null then
            delete from jobctl.concurrency_limit as c
            where c.tenant_id = put_concurrency_limit.tenant_id and c.concurrency_key = put_concurrency_limit.concurrency_key;
        else
            insert into jobctl.concurrency_limit as c (tenant_id, concurrency_key, max_running)
            values (put_concurrency_limit.tenant_id, put_concurrency_limit.concurrency_key, put_concurrency_limit.max_running)
            on conflict on constraint concurrency_limit_pkey do update set max_running = excluded.max_running;
        end if;
        v_keys := array[put_concurrency_limit.concurrency_key];
    end if;
    perform jobctl._admit(array_fill(put_concurrency_limit.tenant_id, array[cardinality(v_keys)]), v_keys);
    perform jobctl._audit('put_concurrency_limit', put_concurrency_limit.tenant_id, jsonb_build_object(
        'concurrency_key', put_concurrency_limit.concurrency_key, 'max_running', put_concurrency_limit.max_running
    ));
end
$$;

comment on function jobctl.put_concurrency_limit(text, text, integer) is
'Set how many jobs of a tenant''s concurrency key may run at once (0..100000; 1 makes
the key a mutex, its jobs run one at a time in run_at order). concurrency_key NULL: the limit of every key of the
tenant without one of its own. max_running NULL: remove that limit. Waiting jobs a raised limit makes room for are
admitted at once.
Errors: JC001 naming the bad field, P0002 no tenant has this id.
Example:
select jobctl.put_concurrency_limit(''acme'', ''account-17'', 1);
select jobctl.put_concurrency_limit(''acme'', null, 5);  -- the default for its other keys';
