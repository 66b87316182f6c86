-- Privileges, re-applied on every migrate. Private helpers (leading underscore) are not callable by
-- PUBLIC; the public functions keep PostgreSQL's default until the role model lands (issue 7).
do $$
declare
    v_fn regprocedure;
begin
    for v_fn in
        select p.oid::regprocedure from pg_catalog.pg_proc as p
        where p.pronamespace = 'jobctl'::regnamespace and p.proname like '\_%'
    loop
        execute format('revoke all on function %s from public', v_fn);
    end loop;
end
$$;
