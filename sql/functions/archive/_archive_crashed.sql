-- jobctl._archive_crashed: the files a run that crashed was writing (jobctl.archive_writing rows
-- that no commit deleted): none of them is in the manifest. The next run deletes each file, then
-- its row (jobctl._archive_written), before it exports anything. As the schema owner.
-- Reads: archive_writing.
create or replace function jobctl._archive_crashed()
returns setof text
language sql
stable
as $$
    select w.url from jobctl.archive_writing as w order by w.url
$$;
