-- jobctl._archive_erased: forget_subject's requests of a tenant up to p_last_id applied to its files
-- (jobctl._archive_erasures): they go, and get_job's fallback stops hiding those subjects' rows
-- (they are gone from the files). A request that came in meanwhile (a higher id) stays for the next
-- run. Returns how many it deleted. As the schema owner. Writes: archive_erasure (delete).
create or replace function jobctl._archive_erased(p_tenant_id text, p_last_id bigint)
returns integer
language plpgsql
as $$
declare
    v_n integer;
begin
    delete from jobctl.archive_erasure as e where e.tenant_id = p_tenant_id and e.erasure_id <= p_last_id;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;
