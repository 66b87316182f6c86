-- jobctl._stat_add: two histograms added bucket by bucket (an empty one adds nothing). A loop of
-- simple expressions, which plpgsql evaluates without starting an executor: a readout of 10,000
-- lanes calls it per lane (an unnest and array_agg in SQL cost several times more).
create or replace function jobctl._stat_add(p_a bigint[], p_b bigint[])
returns bigint[]
language plpgsql
immutable
as $$
declare
    v_sum bigint[] := '{}';
begin
    for i in 1..greatest(coalesce(cardinality(p_a), 0), coalesce(cardinality(p_b), 0)) loop
        v_sum[i] := coalesce(p_a[i], 0) + coalesce(p_b[i], 0);
    end loop;
    return v_sum;
end
$$;

-- jobctl._stat_sum: the sum of histograms, as an aggregate
create or replace aggregate jobctl._stat_sum(bigint[]) (  -- noqa: PRS
    sfunc = jobctl._stat_add,
    stype = bigint[],
    initcond = '{}'
);
