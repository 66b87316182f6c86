-- jobctl._unprintable: the characters a name must not contain (a regular expression): C0 and C1
-- control characters, DEL, and the bidirectional overrides and isolates, which would move or
-- recolour what a terminal or a page shows around the name (docs/security.md, Bounds).
create or replace function jobctl._unprintable()
returns text
language sql
immutable
parallel safe
as $$
    select '[\x01-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]'::text
$$;
