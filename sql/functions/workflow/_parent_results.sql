-- jobctl._parent_results: the results of the parents p_parents of a job of p_tenant, as
-- {"<parent id>": result}, while the results' JSON text is at most 8 MiB together (the sum of
-- octet_length(result::text); a NULL result counts nothing; docs/security.md, Bounds). Past that,
-- results is NULL and over_bound true. Parents are read in id order and each result measured as
-- it is read, so a call reads at most 9 MiB of results (each is at most 1 MiB) however many parents
-- there are and however well their results compressed on disk. parent_results refuses past the
-- bound (JC001); get_job leaves parent_results NULL. Reads: job, job_archive (the parents by id).
create or replace function jobctl._parent_results(
    p_tenant text, p_parents bigint[], out results jsonb, out over_bound boolean
)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_parent record;
    v_text bigint := 0;
    v_ids text[] := '{}';
    v_results jsonb[] := '{}';
begin
    over_bound := false;
    if p_parents is null then
        return;
    end if;
    for v_parent in
        select p.job_id, p.result
        from (
            select j.job_id, j.result from jobctl.job as j
            where j.job_id = any(p_parents) and j.tenant_id = p_tenant
            union all
            select j.job_id, j.result from jobctl.job_archive as j
            where j.job_id = any(p_parents) and j.tenant_id = p_tenant
        ) as p
        order by p.job_id
    loop
        v_text := v_text + coalesce(octet_length(v_parent.result::text), 0);
        if v_text > 8388608 then
            over_bound := true;
            return;
        end if;
        v_ids := array_append(v_ids, v_parent.job_id::text);
        v_results := array_append(v_results, v_parent.result);
    end loop;
    select jsonb_object_agg(k.id, k.result) into results
    from unnest(v_ids, v_results) as k (id, result);
end
$$;
