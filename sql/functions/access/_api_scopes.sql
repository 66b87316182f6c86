-- jobctl._api_scopes: the scopes an API token may carry (docs/security.md, The HTTP API; the same
-- list as python/jobctl/contract.py SCOPES).
create or replace function jobctl._api_scopes()
returns text[]
language sql
immutable
as $$
    select array[
        'audit:read', 'events:emit', 'jobs:cancel', 'jobs:delete', 'jobs:read', 'jobs:retry', 'jobs:submit', 'queues:read', 'queues:write',
        'schedules:read', 'schedules:write', 'tenants:read', 'tenants:write', 'workers:read'
    ]
$$;
