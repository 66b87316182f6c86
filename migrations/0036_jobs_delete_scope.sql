-- 0036_jobs_delete_scope: deleting finished jobs (jobctl.delete_jobs, the dashboard's bulk delete)
-- needs a scope of its own, jobs:delete; jobs:cancel allowed it before (issue 33, item 10).
-- Immutable once landed: later changes go into a new numbered migration.
--
-- A token made with every scope there was (`jobctl token create` without --scope gives every scope,
-- admin token or a tenant's) gains jobs:delete, so that it keeps doing all it did; a token made with
-- chosen scopes keeps exactly those, so jobs:cancel no longer lets it delete. Revoked tokens are left
-- as they are. Scopes are stored sorted and distinct (jobctl.create_api_token).
update jobctl._api_token as t
set
    scopes = array(
        select distinct s.scope from unnest(t.scopes || 'jobs:delete'::text) as s (scope)
        order by 1
    )
where
    t.revoked_at is null
    and t.scopes @> array[
        'audit:read', 'jobs:cancel', 'jobs:read', 'jobs:retry', 'jobs:submit', 'queues:read', 'queues:write',
        'schedules:read', 'schedules:write', 'tenants:read', 'tenants:write', 'workers:read'
    ]::text[];
