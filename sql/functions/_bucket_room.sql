-- jobctl._bucket_room: how many tokens a rate bucket holds now (NULL bucket: no limit, NULL).
-- The bucket (migration 0006) holds a theoretical arrival time (TAT) counted in tokens since the
-- epoch, so `now` is epoch seconds x rate; a bucket of `burst` tokens (NULL: one second's worth,
-- at least 1) holds burst - (max(TAT, now) - now). Tokens accrue in whole units: the error is
-- under one token.
create or replace function jobctl._bucket_room(p_bucket regclass, p_rate numeric, p_burst integer)
returns bigint
language sql
stable
as $$
    select coalesce(p_burst, greatest(1, ceil(p_rate)))::bigint
        - greatest(
            coalesce(pg_sequence_last_value(p_bucket), 0) - floor(extract(epoch from clock_timestamp()) * p_rate), 0
        )::bigint
    where p_bucket is not null
$$;
