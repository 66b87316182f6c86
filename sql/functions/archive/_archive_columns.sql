-- jobctl._archive_columns: the columns of jobctl.job in table order with their types: the columns
-- of jobctl._archive_chunk's rows, which the exporter's Parquet schema follows (one column each, and
-- the jobs' events in a list column). As the schema owner. Reads: the catalog.
create or replace function jobctl._archive_columns()
returns table (name text, type text)
language sql
stable
as $$
    select a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod)
    from pg_catalog.pg_attribute as a
    where a.attrelid = 'jobctl.job'::regclass and a.attnum > 0 and not a.attisdropped
    order by a.attnum
$$;
