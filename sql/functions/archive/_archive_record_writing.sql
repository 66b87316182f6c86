-- jobctl._archive_record_writing: record that the exporter is about to write the file at p_url, committed
-- before the file is written (the exporter's second, autocommit connection), so that a crash never
-- leaves a file that no row names: the unit's commit (jobctl._archive_commit) or an erasure's
-- rewrite (jobctl._archive_rewritten) deletes the row with the file recorded; a row a crash left is
-- found by jobctl._archive_crashed, whose files the next run deletes first. Again for the same URL it
-- changes nothing. As the schema owner. Writes: archive_writing.
create or replace function jobctl._archive_record_writing(p_url text)
returns void
language sql
as $$
    insert into jobctl.archive_writing (url) values (p_url) on conflict do nothing
$$;
