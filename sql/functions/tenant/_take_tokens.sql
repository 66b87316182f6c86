-- jobctl._take_tokens: take p_n tokens from a rate bucket (see jobctl._bucket_room), all or
-- none. Returns 0 when taken; otherwise the seconds until the bucket would hold them, or
-- infinity when p_n is more than a full bucket holds (nothing taken either way). A NULL bucket
-- has no limit. Taking is p_n nextval calls, each advancing the TAT by one token's cost (after a
-- setval to now if the bucket had refilled). Concurrent takers read the room and then advance
-- without a lock, so a bucket may run over by what others took between one's read and its
-- advance (claim_job takes under the tenant's row lock, so claims do not); tokens taken stay
-- taken if the caller rolls back.
create or replace function jobctl._take_tokens(p_bucket regclass, p_rate numeric, p_burst integer, p_n integer)
returns float8
language plpgsql
as $$
declare
    v_room bigint;
    v_now bigint;
begin
    if p_bucket is null or p_n <= 0 then
        return 0;
    end if;
    if p_n > jobctl._bucket_size(p_rate, p_burst) then
        return 'infinity';
    end if;
    v_room := jobctl._bucket_room(p_bucket, p_rate, p_burst);
    if v_room < p_n then
        return (p_n - v_room) / p_rate;
    end if;
    v_now := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
    if coalesce(pg_sequence_last_value(p_bucket), 0) < v_now then
        perform setval(p_bucket, v_now);  -- it had refilled: count from now
    end if;
    perform nextval(p_bucket) from generate_series(1, p_n);
    return 0;
end
$$;
