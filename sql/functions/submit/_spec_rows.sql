-- jobctl._spec_rows: the specs of a submit with their 1-based positions in the call, each spec whole
-- (for jobctl._spec_fault, which takes one). A SQL function that the planner inlines; OFFSET 0 keeps
-- its subquery, so each spec is read from the array once a row, not once a field (a 10,000-job
-- check: 0.6-0.8 us a job more than spelling the fields out, 3 us less than a subscript a field).
-- A step that needs only some fields and the positions unnests the array itself
-- (unnest(p_specs) with ordinality as o: the type's fields and o.ordinality).
create or replace function jobctl._spec_rows(p_specs jobctl._job_spec[])
returns table (ord integer, spec jobctl._job_spec)
language sql
immutable
as $$
    select o.i, p_specs[o.i] from generate_subscripts(p_specs, 1) as o (i) offset 0
$$;
