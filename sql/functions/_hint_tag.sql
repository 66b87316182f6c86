-- jobctl._hint_tag: the payload of a wake-up hint for a queue: the first 16 hex digits of an MD5
-- of jobctl._hint_key's secret and the queue name. A listener learns only that some queue it knows
-- the tag of has work; a collision costs a wasted claim.
create or replace function jobctl._hint_tag(p_queue text)
returns text
language sql
stable
as $$
    select left(md5(k.secret || p_queue), 16) from jobctl._hint_key as k
$$;
