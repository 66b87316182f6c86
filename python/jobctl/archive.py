"""The archive in object storage (docs/operations.md "Archive in object storage").

With `jobctl.retention.archive_url` set (a filesystem path or an fsspec URL such as s3://bucket/jobctl),
`jobctl archive run` moves each day of the database archive (jobctl.job_archive) past
`retention.archive` out of the database, as Parquet files:

    <archive_url>/tenant=<tenant id, percent-encoded>/day=<YYYY-MM-DD>/jobs.parquet
    <archive_url>/tenant=<...>/day=<...>/late-<first id>-<last id>.parquet

one file per tenant and day (`late-`: jobs carried over past their day that reached the archive after
it had left), one row per job sorted by job_id, its history events in a list column. Per tenant, so
that the tenant rule is a manifest lookup in SQL (jobctl.archived_job) and an erasure rewrites one
tenant's files only.

The database's side of the export is in SQL (the private functions jobctl._archive_*, as the schema
owner): which units are due and in what order, their files' rows, and the commit with every check.
This module reads the rows they hand it, writes the Parquet files, and passes back what it wrote. A
unit: each tenant's file is written (its URL first recorded by jobctl._archive_record_writing,
committed), read back and checked (row count, SHA-256 of the bytes); then jobctl._archive_commit,
one transaction: the lease renewed, ACCESS EXCLUSIVE on the archive's parents (50 ms lock_timeout,
three tries), a check that the day holds exactly the jobs written (else it is left for the next
run), the files recorded in jobctl.archive_manifest, the day's partitions dropped. Nothing is locked
while files are written, so no writer waits for the exporter holding a lock the exporter needs. A
crash before the commit leaves the database as it was plus the archive_writing rows, whose files the
next run deletes first (jobctl._archive_crashed); after it, the day is gone and recorded. No
statement holds a snapshot while files are written (READ COMMITTED, one statement per chunk).

forget_subject queues an erasure (jobctl.archive_erasure); the next run rewrites the tenant's files
that hold the subject without its rows (written beside, then moved over the old one, then the
manifest updated: jobctl._archive_erasures, _archive_rewritten) and deletes the request
(jobctl._archive_erased). Until then the readers skip the subject's rows.

pyarrow, fsspec and s3fs are the `archive` extra (pip install 'jobctl[archive]'): imported when a file
is read or written, with a clear error when missing. Storage options (an S3 endpoint, keys) come from
JOBCTL_ARCHIVE_OPTIONS (a JSON object handed to fsspec) and the usual AWS_* variables.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from jobctl import errors, queries
from jobctl.client.rows import Row, load_json

Conn = psycopg.Connection[Any]

LEASE_S = 600  # the exporter's lease (jobctl._archive_lease), renewed at each file and each commit
CHUNK_ROWS = 50_000  # rows read a statement, and written a row group
# a lookup by id reads the one row group whose job_id statistics hold it: at 1,000 rows about 5x faster
# than at 10,000, for about 17 % more bytes
ROW_GROUP_ROWS = 1_000
WHOLE_FILE_BYTES = 4 << 20  # a lookup fetches a file this small whole, a larger one by ranges
RANGE_BYTES = 1 << 20
LATE_PART = "jobctl.job_archive_default"  # the late unit (jobctl._archive_units): reported only with files
# the fields of a job's events (jobctl._archive_events) and their types, which the files' schema follows
EVENT_TYPES = {
    "at": "timestamp with time zone",
    "event": "text",
    "attempt": "integer",
    "lease_epoch": "bigint",
    "worker_id": "text",
    "detail": "text",
}
JSON_COLUMNS = ("payload", "result", "backoff", "progress")


class ArchiveUnavailable(errors.JobctlError):
    """The archive's libraries are not installed, or its storage cannot be reached."""

    http_status = 500


class ArchiveCorrupt(errors.JobctlError):
    """A file read back does not match what was written (rows, checksum)."""

    http_status = 500


def _libraries() -> tuple[Any, Any, Any]:
    try:
        import fsspec
        import pyarrow
        import pyarrow.parquet
    except ImportError as e:
        raise ArchiveUnavailable(
            f"the object archive needs pyarrow and fsspec (and s3fs for s3:// URLs): "
            f"pip install 'jobctl[archive]' ({e.name} is missing)"
        ) from None
    return pyarrow, pyarrow.parquet, fsspec


def storage_options() -> dict[str, Any]:
    """fsspec's options for the archive's URL, from JOBCTL_ARCHIVE_OPTIONS (a JSON object)."""
    text = os.environ.get("JOBCTL_ARCHIVE_OPTIONS", "").strip() or "{}"
    with suppress(ValueError):
        options = json.loads(text)
        if isinstance(options, dict):
            return options
    raise errors.InvalidInput("JOBCTL_ARCHIVE_OPTIONS must be a JSON object (fsspec storage options)")


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of a URL (or path) and the path within it."""
    _, _, fsspec = _libraries()
    try:
        fs, path = fsspec.core.url_to_fs(url, **storage_options())
    except ImportError as e:  # s3fs for s3://, ...
        raise ArchiveUnavailable(f"no filesystem for {url!r}: {e}") from None
    return fs, str(path)


def file_url(base: str, tenant_id: str, day: date, name: str) -> str:
    return f"{base.rstrip('/')}/tenant={urllib.parse.quote(tenant_id, safe='')}/day={day.isoformat()}/{name}"


def _dicts(conn: Conn, statement: str, params: dict[str, Any] | None = None) -> list[Row]:
    """A statement's rows as dicts keyed by column name."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(statement, params).fetchall()


# --- reading: the clients' fallback of get_job and job_history


def _read_rows(url: str, size: int, job_id: int) -> list[Row]:
    """The rows with this id in the file: only the row groups whose job_id statistics cover it are
    read. A file up to WHOLE_FILE_BYTES is fetched in one request (an object store's round trip
    costs more than the bytes), a larger one by ranges."""
    pa, pq, _ = _libraries()
    import pyarrow.compute as pc

    fs, path = filesystem(url)
    try:
        if size <= WHOLE_FILE_BYTES:
            source: Any = pa.BufferReader(fs.cat_file(path))
        else:
            source = fs.open(path, "rb", block_size=RANGE_BYTES, cache_type="bytes")
    except FileNotFoundError:
        return []  # deleted by an erasure (emptied file) or by a lifecycle rule
    with source:
        pf = pq.ParquetFile(source)
        column = pf.schema_arrow.get_field_index("job_id")
        stats = [
            pf.metadata.row_group(i).column(column).statistics for i in range(pf.metadata.num_row_groups)
        ]
        groups = [
            i for i, s in enumerate(stats) if s is None or not s.has_min_max or s.min <= job_id <= s.max
        ]
        table = pf.read_row_groups(groups)  # none: an empty table
    rows: list[Row] = table.filter(pc.equal(table.column("job_id"), job_id)).to_pylist()
    return rows


def find_archived(files: Sequence[Row], job_id: int) -> Row | None:
    """The job's row from the first of jobctl.archived_job's files that holds it (None: none does, or
    its subject is being forgotten)."""
    for f in files:
        for row in _read_rows(f["url"], f["bytes"], job_id):
            if row.get("subject_key") is not None and row["subject_key"] in (f["forgotten"] or []):
                return None
            if row["tenant_id"] == f["tenant_id"]:
                return row
    return None


def sealed(row: Row) -> bool:
    """Whether an archived row's payload is a sealed envelope (docs/security.md): the client opens it
    with jobctl.open_archived_payload, as get_job does in the database."""
    payload = row.get("payload")
    return isinstance(payload, str) and payload.startswith('{"$jobctl_sealed":')


def job_fields(row: Row, names: Sequence[str]) -> dict[str, Any]:
    """An archived row as the fields of client.JobInfo: JSON columns decoded, no lease."""
    out = {name: row.get(name) for name in names}
    for name in JSON_COLUMNS:
        if isinstance(value := out.get(name), str):
            out[name] = load_json(value)
    return out | {"priority": int(row["priority"])}


def history_rows(row: Row) -> list[dict[str, Any]]:
    """jobctl.job_history of an archived row: submitted, its events, and the claim and completion
    the row holds (the SQL function's rules)."""
    blank = dict.fromkeys(EVENT_TYPES)
    out = [{**blank, "at": row["created_at"], "event": "submitted", "attempt": 0}]
    out += [{k: e.get(k) for k in EVENT_TYPES} for e in row.get("events") or []]
    who = {"attempt": row["attempt"], "lease_epoch": row["lease_epoch"], "worker_id": row["worker_id"]}
    if row["state"] in ("running", "completed"):
        out.append({**blank, **who, "at": row["started_at"], "event": "claimed"})
    if row["state"] == "completed":
        out.append({**blank, **who, "at": row["finished_at"], "event": "completed"})
    # by time; a stable sort keeps this order (submitted, events, claimed, completed) among equal times
    return sorted(out, key=lambda r: (r["at"] is None, r["at"] or datetime.min))


# --- writing: the exporter


@dataclass
class UnitReport:
    """One day's partition (or the late jobs) leaving the database."""

    source: str
    day: date | None
    files: list[Row] = field(default_factory=list)  # each: tenant_id, day, url and its _facts
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(f["rows"] for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f["bytes"] for f in self.files)


@dataclass
class RunReport:
    url: str | None
    units: list[UnitReport] = field(default_factory=list)
    erased_files: int = 0
    erased_rows: int = 0
    left: list[str] = field(default_factory=list)  # units left for the next run, and why


def _arrow_type(pa: Any, pg_type: str) -> Any:
    types = {
        "bigint": pa.int64(),
        "integer": pa.int32(),
        "smallint": pa.int16(),
        "boolean": pa.bool_(),
        "timestamp with time zone": pa.timestamp("us", tz="UTC"),
        "interval": pa.duration("us"),
        "bigint[]": pa.list_(pa.int64()),
        "text[]": pa.list_(pa.string()),
    }
    return types.get(pg_type, pa.string())  # text, jsonb (as its text), anything else as text


def _columns(conn: Conn, pa: Any) -> tuple[Any, sql.Composable]:
    """The files' schema: jobctl.job's columns (their Arrow types), then the job's events; and the select
    list that reads the columns from jobctl._archive_chunk (JSON and types Arrow has no match for as text)."""
    cols = conn.execute(queries.ARCHIVE_COLUMNS).fetchall()
    event = pa.struct([(name, _arrow_type(pa, t)) for name, t in EVENT_TYPES.items()])
    schema = pa.schema([*((name, _arrow_type(pa, t)) for name, t in cols), ("events", pa.list_(event))])
    select = sql.SQL(", ").join(
        sql.SQL("j.{}").format(sql.Identifier(name))
        if _arrow_type(pa, t) != pa.string() or t == "text"
        else sql.SQL("j.{}::text as {}").format(sql.Identifier(name), sql.Identifier(name))
        for name, t in cols
    )
    return schema, select


def _tables(
    conn: Conn, pa: Any, schema: Any, chunk: sql.Composed, params: Row, ids: list[int]
) -> Iterator[Any]:
    """A tenant's rows of a day (chunk: ARCHIVE_CHUNK for params' unit, tenant and day) in job_id order
    with their events, as Arrow tables of CHUNK_ROWS rows at most; their ids appended to ids."""
    after = 0
    while True:
        rows = conn.execute(chunk, {**params, "after": after, "rows": CHUNK_ROWS}).fetchall()
        if not rows:
            return
        events: dict[int, list[Row]] = {}
        for e in _dicts(conn, queries.ARCHIVE_EVENTS, {"job_ids": [r[0] for r in rows]}):
            events.setdefault(e.pop("job_id"), []).append(e)
        values = [*zip(*rows, strict=True), [events.get(r[0], []) for r in rows]]
        ids.extend(r[0] for r in rows)
        yield pa.Table.from_arrays(
            [pa.array(list(v), type=t) for v, t in zip(values, schema.types, strict=True)], schema=schema
        )
        if len(rows) < CHUNK_ROWS:
            return
        after = rows[-1][0]


def _parquet(pq: Any, schema: Any, tables: Iterable[Any]) -> bytes:
    """Tables written as one Parquet file in memory."""
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for table in tables:
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
    return sink.getvalue()


def _facts(data: bytes, ids: Sequence[int]) -> dict[str, Any]:
    """A file of these jobs as the manifest records it (jobctl._archive_commit, _archive_rewritten)."""
    first, last = (ids[0], ids[-1]) if ids else (0, 0)
    sha256 = hashlib.sha256(data).hexdigest()
    return {"rows": len(ids), "bytes": len(data), "min_job_id": first, "max_job_id": last, "sha256": sha256}


def _put_checked(side: Conn, url: str, data: bytes, facts: dict[str, Any]) -> None:
    """Write the file (its URL recorded first by jobctl._archive_record_writing, on the autocommit
    connection `side`), read it back, check its bytes and rows against its facts (_facts)."""
    _, pq, _ = _libraries()
    fs, path = filesystem(url)
    side.execute(queries.ARCHIVE_WRITING, {"url": url})
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    fs.pipe_file(path, data)
    back = fs.cat_file(path)
    if hashlib.sha256(back).hexdigest() != facts["sha256"]:
        raise ArchiveCorrupt(f"{url}: the bytes read back differ from those written")
    if pq.ParquetFile(io.BytesIO(back)).metadata.num_rows != facts["rows"]:
        raise ArchiveCorrupt(f"{url}: the file read back does not hold {facts['rows']} rows")


@dataclass
class _Lease:
    """This run's hold on the exporter's lease (jobctl._archive_lease): one run at a time, and a run
    that lost it (stopped past its expiry while another took over) records nothing more: the
    functions that record (jobctl._archive_commit, jobctl._archive_rewritten) renew it first."""

    holder: str = field(default_factory=lambda: str(uuid.uuid4()))

    def take(self, conn: Conn, wait: float) -> None:
        deadline = time.monotonic() + wait
        while not self._renew(conn, queries.ARCHIVE_LEASE)[0]:
            if time.monotonic() >= deadline:
                raise errors.TryAgain("another `jobctl archive run` holds the archive's lease")
            time.sleep(0.25)

    def _renew(self, conn: Conn, statement: str, **params: Any) -> tuple[Any, ...]:
        """The statement's row: one of the functions that renew the lease first (its first column: held)."""
        row = conn.execute(statement, {"holder": self.holder, "seconds": LEASE_S, **params}).fetchone()
        return row or (False,)

    def keep(self, conn: Conn, statement: str = queries.ARCHIVE_LEASE, **params: Any) -> tuple[Any, ...]:
        """Renew it (as each file is written), or run a statement that renews it first; TryAgain when
        another run took it over."""
        row = self._renew(conn, statement, **params)
        if not row[0]:
            raise errors.TryAgain(LEASE_LOST)
        return row

    def commit(self, conn: Conn, unit: Row, files: list[Row], ids: list[int]) -> None:
        """jobctl._archive_commit: the unit recorded and dropped (or its late jobs deleted); _Changed
        when the function left it for the next run."""
        _, changed = self.keep(
            conn,
            queries.ARCHIVE_COMMIT,
            part=unit["part"],
            before=unit["before"],
            files=json.dumps(files, default=date.isoformat),
            id_sum=sum(ids),
            job_ids=ids if unit["late"] else None,
        )
        if changed is not None:
            raise _Changed(changed)

    def rewritten(self, conn: Conn, file_id: int, file: dict[str, Any] | None) -> None:
        """jobctl._archive_rewritten: a file an erasure wrote again (None: gone)."""
        text = None if file is None else json.dumps(file)
        self.keep(conn, queries.ARCHIVE_REWRITTEN, file_id=file_id, file=text)

    def release(self, conn: Conn) -> None:
        conn.execute(queries.ARCHIVE_RELEASE, {"holder": self.holder})


LEASE_LOST = "another `jobctl archive run` took over the archive's lease"


def _export(lease: _Lease, conn: Conn, side: Conn, base: str, unit: Row) -> UnitReport:
    """One unit of jobctl._archive_units: each tenant's file written (nothing locked meanwhile), then
    jobctl._archive_commit, which checks, records and drops in one transaction."""
    started = time.perf_counter()
    report = UnitReport(unit["part"], None)
    ids: list[int] = []
    pa, pq, _ = _libraries()
    schema, select = _columns(conn, pa)
    chunk = sql.SQL(queries.ARCHIVE_CHUNK).format(columns=select)
    where = {"part": unit["part"], "before": unit["before"]}
    for group in _dicts(conn, queries.ARCHIVE_TENANTS, where):
        tenant_id, day, start = group["tenant_id"], group["day"], len(ids)
        report.day = report.day or day
        lease.keep(side)
        data = _parquet(pq, schema, _tables(conn, pa, schema, chunk, {**where, **group}, ids))
        facts = _facts(data, ids[start:])
        name = f"late-{facts['min_job_id']}-{facts['max_job_id']}.parquet" if unit["late"] else "jobs.parquet"
        url = file_url(base, tenant_id, day, name)
        _put_checked(side, url, data, facts)
        report.files.append({"tenant_id": tenant_id, "day": day, "url": url, **facts})
    lease.commit(conn, unit, report.files, ids)
    report.seconds = time.perf_counter() - started
    return report


class _Changed(Exception):
    """The rows changed while they were written: the unit is left for the next run."""


def _erase(lease: _Lease, conn: Conn, side: Conn, report: RunReport) -> None:
    """forget_subject's requests (jobctl._archive_erasures) applied to the files: each file of the
    tenant that holds a subject's rows written again without them (beside it, then moved over it)
    and recorded (jobctl._archive_rewritten), then the tenant's requests marked done."""
    pa, pq, _ = _libraries()
    import pyarrow.compute as pc

    rows = _dicts(conn, queries.ARCHIVE_ERASURES)
    for tenant_id, group in itertools.groupby(rows, key=lambda r: r["tenant_id"]):
        files = list(group)
        for f in files:
            if f["file_id"] is None:
                continue
            fs, path = filesystem(f["url"])
            try:
                data = fs.cat_file(path)
            except FileNotFoundError:
                lease.rewritten(conn, f["file_id"], None)
                continue
            table = pq.read_table(io.BytesIO(data))
            # is_in: false for a row without a subject key
            kept = table.filter(
                pc.invert(pc.is_in(table.column("subject_key"), value_set=pa.array(f["subjects"])))
            )
            kept_ids = kept.column("job_id").to_pylist()
            if kept.num_rows == table.num_rows:
                if hashlib.sha256(data).hexdigest() != f["sha256"]:  # a rewrite moved in before a crash
                    lease.rewritten(conn, f["file_id"], _facts(data, kept_ids))
                continue
            report.erased_files += 1
            report.erased_rows += table.num_rows - kept.num_rows
            if kept.num_rows == 0:
                fs.rm(path)
                lease.rewritten(conn, f["file_id"], None)
                continue
            new = _parquet(pq, table.schema, [kept])
            facts = _facts(new, kept_ids)
            _put_checked(side, f["url"] + ".tmp", new, facts)
            lease.keep(side)
            fs.mv(path + ".tmp", path)
            lease.rewritten(conn, f["file_id"], {**facts, "tmp_url": f["url"] + ".tmp"})
        conn.execute(queries.ARCHIVE_ERASED, {"tenant_id": tenant_id, "last_id": files[0]["last_id"]})


def _clean_up(conn: Conn) -> None:
    """The files a crashed run was writing (jobctl._archive_crashed), deleted: none is in the manifest."""
    for (url,) in conn.execute(queries.ARCHIVE_CRASHED).fetchall():
        fs, path = filesystem(url)
        if fs.exists(path):
            fs.rm(path)
        conn.execute(queries.ARCHIVE_WRITTEN, {"urls": [url]})


def run(dsn: str, *, lock_wait: float = 10.0, max_days: int | None = None) -> RunReport:
    """`jobctl archive run`: the units jobctl._archive_units names, in its order (every day past
    retention.archive, oldest first, then the late jobs), then forget_subject's erasures. Nothing when
    no archive_url is set. As the schema owner; one run at a time (the exporter's lease, waited for
    up to lock_wait seconds)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        units = _dicts(conn, queries.ARCHIVE_UNITS)
        report = RunReport(units[0]["archive_url"] if units else None)
        if report.url is None:
            return report
        filesystem(report.url)  # missing libraries, an unknown protocol, a missing s3fs: before any work
        lease = _Lease()
        lease.take(conn, lock_wait)
        try:
            with psycopg.connect(dsn, autocommit=True) as side:
                _clean_up(conn)
                # again: another run may have exported days meanwhile
                units = _dicts(conn, queries.ARCHIVE_UNITS)
                days = [u for u in units if not u["late"]][:max_days] + [u for u in units if u["late"]]
                for unit in days:
                    try:
                        exported = _export(lease, conn, side, report.url, unit)
                    except _Changed as e:  # its rows changed meanwhile: left for the next run
                        report.left.append(str(e))
                        continue
                    if exported.files or exported.source != LATE_PART:
                        report.units.append(exported)
                _erase(lease, conn, side, report)
        finally:
            if not conn.closed:
                lease.release(conn)
    return report


def manifest(conn: Conn, tenant_id: str | None = None) -> list[Row]:
    return _dicts(conn, queries.ARCHIVE_LIST, {"tenant_id": tenant_id})


def verify(conn: Conn, tenant_id: str | None = None) -> list[tuple[Row, str | None]]:
    """Each manifest file read back: None when its bytes and rows match the manifest, else what is wrong."""
    _, pq, _ = _libraries()
    out: list[tuple[Row, str | None]] = []
    for f in manifest(conn, tenant_id):
        fs, path = filesystem(f["url"])
        try:
            data = fs.cat_file(path)
        except FileNotFoundError:
            out.append((f, "missing"))
            continue
        if hashlib.sha256(data).hexdigest() != f["sha256"]:
            out.append((f, "checksum differs"))
        elif pq.ParquetFile(io.BytesIO(data)).metadata.num_rows != f["rows"]:
            out.append((f, "row count differs"))
        else:
            out.append((f, None))
    return out
