-- jobctl._too_deep: whether a JSON value nests arrays and objects more than 100 levels deep (the
-- bound on payloads, results and schedule payloads: docs/security.md, Bounds). Decoders recurse
-- per level (Python's json stops near 1,000, pydantic's serialiser at 255), so a deeper value would
-- fail whoever reads it. The walk stops at level 100. Immutable SQL: inlined where it is used.
create or replace function jobctl._too_deep(p_value jsonb)
returns boolean
language sql
immutable
parallel safe
as $$
    select jsonb_path_exists(p_value, 'strict $.**{100} ? (@.type() == "array" || @.type() == "object")')
$$;
