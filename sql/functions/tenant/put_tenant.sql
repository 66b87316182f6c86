-- jobctl.put_tenant: create or replace a tenant's settings; omitted fields get their defaults.
-- A rate gets a token bucket and max_pending two counters (sequences, jobctl._put_sequence;
-- a new rate keeps the bucket's level; the counters are recounted exactly); a burst left NULL is
-- one second's worth of the rate, at least 1.
create or replace function jobctl.put_tenant(
    tenant_id text,
    weight integer default 1,
    max_pending bigint default null,
    max_running integer default null,
    submit_rate numeric default null,
    submit_burst integer default null,
    claim_rate numeric default null,
    claim_burst integer default null,
    encrypt_payloads boolean default false
)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_field text;
    v_key_check text;  -- of the session's key for the tenant, when its payloads are to be sealed
begin
    v_field := case
        when tenant_id is null or tenant_id = '' or length(tenant_id) > 200 or tenant_id ~ jobctl._unprintable()
            then 'tenant_id'
        when weight is null or weight not between 1 and 10000 then 'weight'
        when max_pending < 0 then 'max_pending'
        when max_running < 0 then 'max_running'
        when submit_rate <= 0 or submit_rate > 1000000 then 'submit_rate'
        when submit_burst < 1 then 'submit_burst'
        when claim_rate <= 0 or claim_rate > 1000000 then 'claim_rate'
        when claim_burst < 1 then 'claim_burst'
        when encrypt_payloads is null then 'encrypt_payloads'
    end;
    if v_field is not null then
        raise exception using errcode = 'JC001',
            message = format('%s is out of range', v_field),
            detail = format('field: %s', v_field),
            hint = 'tenant_id: 1-200 characters, no control characters; weight: 1..10000; limits: NULL (unlimited) or >= 0; rates > 0 and <= 1000000 a second; bursts >= 1.';
    end if;
    v_key_check := case when encrypt_payloads then jobctl._key_check(jobctl._payload_key(tenant_id)) end;
    if encrypt_payloads and v_key_check is null then
        raise exception using errcode = 'JC008',
            message = format('encrypt_payloads: jobctl.payload_keys has no key for tenant %s', tenant_id),
            detail = 'field: jobctl.payload_keys',
            hint = 'Set it for the session, {"<tenant>": "<key>"}: the key the tenant''s payloads will be sealed with.';
    end if;
    insert into jobctl.tenant as t (
        tenant_id, weight, max_pending, max_running, submit_rate, submit_burst, claim_rate, claim_burst,
        encrypt_payloads, payload_key_check, submit_bucket, claim_bucket, admitted, finished
    )
    values (
        tenant_id, weight, max_pending, max_running, submit_rate, submit_burst, claim_rate, claim_burst,
        encrypt_payloads, v_key_check,
        jobctl._put_sequence(tenant_id, 'submit_bucket', ceil(1000000 / submit_rate)::bigint),
        jobctl._put_sequence(tenant_id, 'claim_bucket', ceil(1000000 / claim_rate)::bigint),
        jobctl._put_sequence(tenant_id, 'admitted', case when max_pending is not null then 1 end),
        jobctl._put_sequence(tenant_id, 'finished', case when max_pending is not null then 1 end)
    )
    on conflict on constraint tenant_pkey do update
    set weight = excluded.weight,
        max_pending = excluded.max_pending,
        max_running = excluded.max_running,
        submit_rate = excluded.submit_rate,
        submit_burst = excluded.submit_burst,
        claim_rate = excluded.claim_rate,
        claim_burst = excluded.claim_burst,
        encrypt_payloads = excluded.encrypt_payloads,
        payload_key_check = excluded.payload_key_check,
        submit_bucket = excluded.submit_bucket,
        claim_bucket = excluded.claim_bucket,
        admitted = excluded.admitted,
        finished = excluded.finished,
        updated_at = now();
    if max_pending is not null then
        perform jobctl._recount_pending(tenant_id);
    end if;
    perform jobctl._audit('put_tenant', tenant_id, jsonb_build_object(
        'weight', weight, 'max_pending', max_pending, 'max_running', max_running, 'submit_rate', submit_rate,
        'submit_burst', submit_burst, 'claim_rate', claim_rate, 'claim_burst', claim_burst,
        'encrypt_payloads', encrypt_payloads
    ));
end
$$;

comment on function jobctl.put_tenant(text, integer, bigint, integer, numeric, integer, numeric, integer, boolean) is
'Create or replace a tenant''s settings; every field is set, omitted ones to their defaults (NULL
= unlimited). weight 1..10000 (share of claims), max_pending (unfinished jobs), max_running, submit/claim rate per
second and burst; encrypt_payloads: payloads are sealed at submit with the key jobctl.payload_keys holds for the
tenant now (submits must use the same one; docs/security.md). Audited.
Errors: JC001 naming the field, JC008 encrypt_payloads without a key for the tenant in jobctl.payload_keys.
Example:
select jobctl.put_tenant(''acme'', weight => 3, max_running => 10, submit_rate => 500, submit_burst => 1000);';
