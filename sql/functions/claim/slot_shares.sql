-- jobctl.slot_shares: how a worker process serving several shards shares its slots among them, from
-- each shard's jobctl.claimable_weight (docs/operations.md, Sharding: fairness across shards). Pure:
-- the worker asks any one shard. Each shard gets the whole part of its proportion, 1 at least (a
-- shard with nothing due keeps a slot to claim with, so none starves: hence slots >= shards); then
-- the slots left go one at a time to the largest shortfall, or the slots over are taken one at a
-- time from the share most above its proportion (the first shard on a tie). The loops run at most
-- `slots` times over the shards (both at most 1,000).
create or replace function jobctl.slot_shares(slots integer, weights float8[])
returns integer[]
language plpgsql
security definer
immutable
parallel safe
set search_path = pg_catalog, pg_temp
as $$
declare
    v_n integer := coalesce(cardinality(weights), 0);
    v_known float8[];
    v_sum float8;
    v_ideal float8[];
    v_out integer[];
    v_total integer;
    v_pick integer;
begin
    if slots is null or slots not between 1 and 1000 then
        raise exception using errcode = 'JC001',
            message = format('slots must be between 1 and 1000, not %s', coalesce(slots::text, 'NULL')),
            detail = 'field: slots';
    end if;
    if v_n = 0 or array_ndims(weights) <> 1 then
        raise exception using errcode = 'JC001', message = 'weights must hold one weight a shard',
            detail = 'field: weights', hint = 'For example array[1.0, 3.0]; NULL for a shard that did not answer.';
    end if;
    if v_n > slots then
        raise exception using errcode = 'JC001',
            message = format('slots (%s) must be at least the %s shards: each needs a slot', slots, v_n),
            detail = 'field: slots', hint = 'Give the worker at least as many slots (--concurrency) as shards (--dsn).';
    end if;
    if exists (select from unnest(weights) as w where w < 0 or w in ('NaN', 'Infinity')) then
        raise exception using errcode = 'JC001', message = 'weights must be finite and not negative (NULL: unknown)',
            detail = 'field: weights';
    end if;
    -- a shard whose weight is unknown (it did not answer) weighs nothing; nothing due anywhere: even
    v_known := array(select coalesce(u.w, 0) from unnest(weights) with ordinality as u (w, i) order by u.i);
    v_sum := (select sum(w) from unnest(v_known) as w);
    if v_sum = 0 then
        v_known := array_fill(1::float8, array[v_n]);
        v_sum := v_n;
    end if;
    v_ideal := array(select slots * w / v_sum from unnest(v_known) with ordinality as u (w, i) order by u.i);
    v_out := array(select greatest(1, floor(x))::integer from unnest(v_ideal) with ordinality as u (x, i) order by u.i);
    v_total := (select sum(s) from unnest(v_out) as s);
    while v_total > slots loop  -- the floor of 1 gave more
        v_pick := null;
        for i in 1..v_n loop
            if v_out[i] > 1 and (v_pick is null or v_out[i] - v_ideal[i] > v_out[v_pick] - v_ideal[v_pick]) then
                v_pick := i;
            end if;
        end loop;
        v_out[v_pick] := v_out[v_pick] - 1;
        v_total := v_total - 1;
    end loop;
    while v_total < slots loop
        v_pick := 1;
        for i in 2..v_n loop
            if v_ideal[i] - v_out[i] > v_ideal[v_pick] - v_out[v_pick] then
                v_pick := i;
            end if;
        end loop;
        v_out[v_pick] := v_out[v_pick] + 1;
        v_total := v_total + 1;
    end loop;
    return v_out;
end
$$;

comment on function jobctl.slot_shares(integer, float8[]) is
'How a worker serving several shards shares its slots among them: one count a shard, in the order of weights
(each shard''s claimable_weight; NULL for one that did not answer, counted as 0), adding up to slots exactly, at
least 1 each, in proportion to the weights otherwise (evenly when all are 0). Pure: any shard answers alike.
Errors: JC001 slots outside 1..1000 or fewer than the shards, weights NULL, empty, negative, NaN or infinite.
Example:
select jobctl.slot_shares(8, array[1.0, 3.0]);  -- {2,6}
select jobctl.slot_shares(4, array[1.0, null]);  -- {3,1}';
