-- jobctl._archive_chunk: the next p_max_rows jobs after p_after_id (job_id order: the (tenant_id,
-- job_id) index) of one file of the export (jobctl._archive_tenants: a tenant's jobs of a UTC day in
-- a unit's partition, created before p_before), as jobctl.job rows: the exporter writes them to the
-- file a row group at a time, then asks for the next chunk after the last id. One statement per
-- chunk, so no snapshot is held while files are written. Refuses a part that is not the archive's
-- (JC001) and p_max_rows outside 1..100000 (JC001). As the schema owner. Reads: the unit's partition.
create or replace function jobctl._archive_chunk(
    p_part regclass, p_tenant_id text, p_day date, p_before timestamptz, p_after_id bigint, p_max_rows integer
)
returns setof jobctl.job
language plpgsql
stable
as $$
begin
    if p_max_rows is null or p_max_rows not between 1 and 100000 then
        raise exception using errcode = 'JC001', message = 'max_rows must be from 1 to 100000',
            detail = 'field: p_max_rows';
    end if;
    -- jobctl.job's columns by name: the archive's tables have the same columns, perhaps in another order
    return query execute format(
        'select %s from %s as j
        where j.tenant_id = $1 and j.created_at >= $2::timestamp at time zone ''UTC''
            and j.created_at < ($2 + 1)::timestamp at time zone ''UTC''
            and j.created_at < $3 and j.job_id > $4
        order by j.job_id
        limit $5',
        (
            select string_agg(format('j.%I', a.attname), ', ' order by a.attnum)
            from pg_catalog.pg_attribute as a
            where a.attrelid = 'jobctl.job'::regclass and a.attnum > 0 and not a.attisdropped
        ),
        jobctl._archive_part(p_part)
    ) using p_tenant_id, p_day, p_before, coalesce(p_after_id, 0), p_max_rows;
end
$$;
