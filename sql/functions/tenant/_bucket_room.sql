-- jobctl._bucket_room: how many tokens a rate bucket holds now (NULL bucket: no limit, NULL).
-- The bucket is a sequence holding its theoretical arrival time (TAT, GCRA) in
-- microseconds since the epoch, whose increment is one token's cost T = 1 s / rate (made by
-- jobctl._put_sequence). A full bucket holds _bucket_size tokens; it lacks one for every T the TAT
-- is ahead of now. Rounded down to whole tokens.
create or replace function jobctl._bucket_room(p_bucket regclass, p_rate numeric, p_burst integer)
returns bigint
language sql
volatile  -- the clock and the sequence move between calls
as $$
    select jobctl._bucket_size(p_rate, p_burst) - ceil(greatest(
        coalesce(pg_sequence_last_value(p_bucket), 0) - extract(epoch from clock_timestamp()) * 1000000, 0
    ) * p_rate / 1000000)::bigint
    where p_bucket is not null
$$;
