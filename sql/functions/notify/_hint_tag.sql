-- jobctl._hint_tag: the payload of a wake-up hint for a queue: the first 16 hex digits of an MD5
-- of jobctl._hint_key's secret and the queue name. A listener learns only that some queue it knows
-- the tag of has work; a collision costs a wasted claim.
create or replace function jobctl._hint_tag(p_queue text)
-- plpgsql, not sql: a SQL function with a FROM is not inlined and is planned on every call (48 us of
-- a 406 us submit_job, track_functions; docs/lab-notes.md, 2026-12-06)
returns text
language plpgsql
stable
as $$
begin
    return (select left(md5(k.secret || p_queue), 16) from jobctl._hint_key as k);
end
$$;
