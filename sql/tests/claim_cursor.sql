-- jobctl.claim_job's lane cursors: while the xmin horizon is held back (jobctl.horizon_held), a
-- session probes each lane from where it last left it in the current half-second slot
-- (jobctl.claim_cursor): higher priorities, the rest of the cursor's, lower ones.
-- Tenant tap_cur_t, queue tap_cur_q.
begin;
select plan(9);
set local jit = off;
\ir helpers.psql

select jobctl.put_tenant('tap_cur_t');
-- housekeeping's once-a-second look at the horizon is put off, and the horizon is said held
select set_config('jobctl.reaped_at', (extract(epoch from clock_timestamp()) + 3600)::text, false);
select set_config('jobctl.horizon_held', 'true', false);

create function pg_temp.claim() returns setof bigint
language sql as $$
    select job_id from jobctl.claim_job('tap_cur_w', array['tap_cur_q'], 1)
$$;

-- the lane's cursor at the end of priority 0, for the current slot (with at least 0.2 s of it
-- left for the claim that follows) or for slot p_slot
create function pg_temp.cursor_at_end(p_slot text default null) returns void
language plpgsql as $$
declare
    v_e float8 := extract(epoch from clock_timestamp()) * 2;
begin
    if v_e - floor(v_e) > 0.6 then
        perform pg_sleep(0.25);
        v_e := extract(epoch from clock_timestamp()) * 2;
    end if;
    perform set_config('jobctl.claim_cursor', jsonb_build_object(
        'slot', coalesce(p_slot, floor(v_e)::bigint::text),
        'tap_cur_q' || chr(31) || 'tap_cur_t', jsonb_build_array(0, 'infinity', 0)
    )::text, false);
end
$$;

-- the jobs of this file by number
create temp table s (i integer primary key, job_id bigint not null);

create function pg_temp.submit(p_i integer, p_priority integer default 0, p_run_at timestamptz default null)
returns void
language sql as $$
    insert into s (i, job_id)
    select p_i, x.job_id from jobctl.submit_job('tap_cur_t', 'tap_cur_q', '{}', priority => p_priority, run_at => p_run_at) as x;
$$;

create function pg_temp.nth(p_i integer) returns bigint
language sql as $$
    select s.job_id from s
    where s.i = p_i
$$;

select pg_temp.submit(1);
select pg_temp.submit(2);
select pg_temp.submit(3);
select is(pg_temp.claim(), pg_temp.nth(1), 'the first claim takes the lane''s head');
select is(
    current_setting('jobctl.claim_cursor')::jsonb -> ('tap_cur_q' || chr(31) || 'tap_cur_t') ->> 0, '0',
    'and leaves the lane''s cursor at priority 0'
);

select pg_temp.submit(4, 5);
select is(pg_temp.claim(), pg_temp.nth(4), 'a higher priority submitted later comes first');
select is(pg_temp.claim(), pg_temp.nth(2), 'then the lower one, in order');

select pg_temp.cursor_at_end();
select is_empty('select pg_temp.claim()', 'a job behind the cursor waits while the slot lasts');
select pg_temp.cursor_at_end('0');
select is(pg_temp.claim(), pg_temp.nth(3), 'a cursor of another slot is not used');

select pg_temp.submit(5);
select pg_temp.cursor_at_end();
select set_config('jobctl.horizon_held', 'false', false);
select is(pg_temp.claim(), pg_temp.nth(5), 'with the horizon free, no cursor is used');

select set_config('jobctl.horizon_held', 'true', false);
select pg_temp.submit(6, 0, now() + interval '1 hour');
select pg_temp.make_due(pg_temp.nth(6));
select pg_temp.cursor_at_end();
select is(pg_temp.claim(), pg_temp.nth(6), 'a claim that made jobs due starts at the lanes'' heads');
select is(
    current_setting('jobctl.claim_cursor')::jsonb - 'slot' - ('tap_cur_q' || chr(31) || 'tap_cur_t'), '{}'::jsonb,
    'the setting holds the slot and the lane''s cursor, nothing else'
);

select * from finish();
rollback;
