-- jobctl._archive_written: forget the archive_writing rows of these URLs (files a crashed run left,
-- deleted by the exporter: jobctl._archive_crashed). Returns how many rows it deleted. As the schema
-- owner. Writes: archive_writing (delete).
create or replace function jobctl._archive_written(p_urls text[])
returns integer
language plpgsql
as $$
declare
    v_n integer;
begin
    delete from jobctl.archive_writing as w where w.url = any(p_urls);
    get diagnostics v_n = row_count;
    return v_n;
end
$$;
