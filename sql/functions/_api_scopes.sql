-- jobctl._api_scopes: the scopes an API token may carry.
create or replace function jobctl._api_scopes()
returns text[]
language sql
immutable
as $$
    select array[
        'jobs:cancel', 'jobs:read', 'jobs:retry', 'jobs:submit', 'queues:read', 'queues:write', 'schedules:read',
        'schedules:write'
    ]
$$;
