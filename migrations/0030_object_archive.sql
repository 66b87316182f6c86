-- 0030_object_archive: archived days leave the database as Parquet files in object storage (a
-- filesystem path or an S3-compatible URL), written by `jobctl archive run` (python/jobctl/archive.py),
-- recorded in a manifest that get_job's and job_history's Python fallback reads by job id.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- jobctl.retention.archive_url NULL (the default): the archive stays in the database as before, and
-- its days are dropped past retention.archive. Set: a day past retention.archive is exported, one
-- file per tenant, and dropped by the exporter once its files are written, read back, checked and
-- recorded here, in the transaction that drops it; jobctl.maintain_partitions then drops nothing.
alter table jobctl.retention add column archive_url text;
alter table jobctl.retention add constraint retention_archive_url_check
check (archive_url is null or archive_url ~ '^[a-z][a-z0-9+.-]*://.|^/.');

-- one row per file: a tenant's jobs of one day (with their events), sorted by job_id
create table jobctl.archive_manifest (
    file_id bigint generated always as identity primary key,
    tenant_id text not null,
    job_day date not null,  -- the UTC day its jobs were created
    url text not null unique,
    job_count bigint not null,
    bytes bigint not null,
    min_job_id bigint not null,
    max_job_id bigint not null,
    sha256 text not null,
    written_at timestamptz not null default now(),
    rewritten_at timestamptz,  -- last rewritten by an erasure (forget_subject)
    constraint archive_manifest_rows_check check (job_count >= 0 and bytes > 0),
    constraint archive_manifest_ids_check check (min_job_id <= max_job_id),
    constraint archive_manifest_sha256_check check (sha256 ~ '^[0-9a-f]{64}$')
);
-- a lookup by job id: the files whose id range holds it (ranges of one tenant's days barely overlap)
create index archive_manifest_ids_idx on jobctl.archive_manifest
using gist (int8range(min_job_id, max_job_id, '[]'));
create index archive_manifest_tenant_idx on jobctl.archive_manifest (tenant_id, job_day);
-- no policy: no role but the owner (the functions, the exporter) sees a row, even if granted SELECT
alter table jobctl.archive_manifest enable row level security;

-- files being written: the exporter records a URL here (committed) before it writes the file, and
-- deletes the row in the transaction that records the file in the manifest (or moves it into
-- place); a run first deletes the files of rows a crash left, so no file outside the manifest
-- outlives a crash (an erasure could not find it)
create table jobctl.archive_writing (
    url text primary key,
    started_at timestamptz not null default now()
);
alter table jobctl.archive_writing enable row level security;

-- forget_subject's requests for the files: a subject's rows are dropped from every file of its
-- tenant by the next `jobctl archive run`, and the row deleted then; until that, get_job's fallback
-- hides the subject's archived jobs (jobctl.archived_job returns the keys pending)
create table jobctl.archive_erasure (
    erasure_id bigint generated always as identity primary key,
    tenant_id text not null,
    subject_key text not null,
    requested_at timestamptz not null default now()
);
create index archive_erasure_tenant_idx on jobctl.archive_erasure (tenant_id);
alter table jobctl.archive_erasure enable row level security;
