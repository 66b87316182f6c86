-- 0015_tenant_access: who may act for which tenants, an audit trail, and data subjects.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- The roles, their grants and the row-level security policies are in sql/grants.sql (re-applied
-- on every migrate); the rules are in docs/security.md.

-- The tenants a database role acts for: a login acts for the tenants of every role it is a member
-- of (jobctl.grant_tenant); tenant_id NULL: every tenant. By OID: a role dropped and made again
-- under its name does not inherit the old one's tenants, and a renamed role keeps its own.
create table jobctl._role_tenant (
    role_oid oid not null,
    tenant_id text,
    granted_at timestamptz not null default now(),
    granted_by text not null default session_user
);
create unique index _role_tenant_key on jobctl._role_tenant (role_oid, coalesce(tenant_id, ''));

-- Who did what that a tenant or an auditor may ask about later: grants, tokens, tenant settings,
-- forgotten subjects. Append-only for everyone but the schema owner.
create table jobctl.audit_log (
    audit_id bigint generated always as identity primary key,
    at timestamptz not null default clock_timestamp(),
    actor text not null default session_user,
    token_id bigint,
    action text not null,
    tenant_id text,
    detail jsonb not null default '{}'
);
create index audit_log_tenant_idx on jobctl.audit_log (tenant_id, audit_id);

-- The data subject (a person) a job's payload is about, so that jobctl.forget_subject finds every
-- job of theirs; last in both tables, which keep the same columns in the same order (ATTACH).
alter table jobctl.job add column subject_key text;
alter table jobctl.job_archive add column subject_key text;
create index job_subject_idx on jobctl.job (tenant_id, subject_key) where subject_key is not null;
create index job_archive_subject_idx on jobctl.job_archive (tenant_id, subject_key) where subject_key is not null;
alter type jobctl._job_spec add attribute subject_key text;
drop function if exists jobctl._find_job(bigint);  -- it gains the caller's scope
-- it gains subject_key
drop function if exists jobctl.submit_job(text, text, jsonb, integer, timestamptz, text, integer, jsonb, interval);
