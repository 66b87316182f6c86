-- jobctl.claim_job and the age of the shared lane list (jobctl._lane_cache.listed_at): a claim
-- that got nothing lists the lanes afresh only when the shared list was listed more than 20 ms ago.
-- Tenant tap_age_t, queue tap_age_q.
begin;
select plan(5);
set local jit = off;
\ir helpers.psql

select jobctl.put_tenant('tap_age_t');

-- an empty shared list for the queue, fresh for an hour, listed at p_listed_at (in the future: younger
-- than 20 ms, however slow the machine)
create function pg_temp.share_empty_list(p_listed_at timestamptz) returns void
language sql as $$
    delete from jobctl._lane_cache where queues_key = '{tap_age_q}';
    insert into jobctl._lane_cache (queues_key, fresh_until, queues, tenants, limited, lows, total, listed_at)
    values ('{tap_age_q}', clock_timestamp() + interval '1 hour', '{}', '{}', '{}', '{}', 0, p_listed_at);
$$;

create function pg_temp.claim() returns bigint
language sql as $$
    select count(*) from jobctl.claim_job('tap_age_w', array['tap_age_q'], 10)
$$;

select pg_temp.share_empty_list(clock_timestamp() + interval '1 hour');
select jobctl.submit_job('tap_age_t', 'tap_age_q', '{}');
select is(pg_temp.claim(), 0::bigint, 'a job in a lane missing from a list younger than 20 ms waits');
select is(
    (
        select count(*) from jobctl._lane_cache
        where queues_key = '{tap_age_q}'
    ), 1::bigint,
    'and that claim did not list the lanes'
);

select pg_temp.share_empty_list(clock_timestamp() - interval '21 milliseconds');
select is(pg_temp.claim(), 1::bigint, 'with the list listed 21 ms ago, the empty claim lists afresh and takes it');
select is(
    (
        select count(*) from jobctl._lane_cache
        where
            queues_key = '{tap_age_q}' and queues = '{tap_age_q}'
            and listed_at > clock_timestamp() - interval '1 minute' and listed_at < clock_timestamp()
    ), 1::bigint,
    'and shares what it listed, with its listed_at'
);

-- a job made due by the claim's own housekeeping is looked for whatever the list's age
select pg_temp.share_empty_list(clock_timestamp() + interval '1 hour');
create temp table s_later as
select * from jobctl.submit_job('tap_age_t', 'tap_age_q', '{}', run_at => now() + interval '1 hour');
select pg_temp.make_due(job_id) from s_later;
select is(pg_temp.claim(), 1::bigint, 'a delayed job the claim promoted is claimed at once, however young the list');

select * from finish();
rollback;
