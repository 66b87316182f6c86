"""Every statement the Python shell runs is one call of a jobctl function (python/jobctl/queries.py):
no statement names a table or runs DDL, except those in the allowlists below, each with why.

queries.py's constants are read with ast (no import: a constant is checked as written). A statement
passes when it calls a function of schema jobctl (or jobctl_router, on the router) and every relation
it reads from is a function call, a subquery or a name of its own WITH clause; names of jobctl's
tables, DML and DDL fail it. Outside queries.py, every string literal that starts like a statement
and every literal handed to execute() fails, unless allowlisted: raw SQL belongs in queries.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "jobctl"

# queries.py's statements that call no jobctl function, or name a table, and why they may
QUERIES_ALLOWED = {
    # commands of the LISTEN/NOTIFY hints, not queries: the worker's channel and a watcher's own
    "LISTEN": "the worker listens for hints",
    "LISTEN_CHANNEL": "a watcher listens on its channel",
    # the API's health ping and the database clock (`jobctl stats`, `jobctl top`): no table, no rule
    "PING": "health ping",
    "NOW": "the database clock",
    # `jobctl migrate` and `jobctl shards init-router` serialize on the migration's advisory lock
    "MIGRATE_LOCK": "migrate's lock",
}

# modules outside queries.py that may hold raw SQL, and why
ELSEWHERE_ALLOWED = {
    # `jobctl migrate` runs before the functions exist (it creates them): its bookkeeping table
    # (jobctl._applied), its advisory lock, its session setting and the script `migrate --sql` prints
    "migrate.py": "migrate creates what the functions need",
}

# a string that starts like a statement (not like a sentence: "delete finished jobs"); jobctl writes
# its SQL in lower case
STATEMENT_START = re.compile(
    r"^\s*(select\s.*\bfrom\s|select\s+[\w.]+\s*\(|select\s+\d|insert\s+into\s|update\s+[\w.]+\s+set\s|delete\s+from\s"
    r"|with\s+(recursive\s+)?\w+\s+as\s*\(|lock\s+table\s|(create|drop|alter)(\s+or\s+replace)?\s+"
    r"(table|schema|function|index|type|role|extension|sequence|view|trigger)\s|truncate\s|listen\s+\w+\s*$"
    r"|notify\s+\w+|set\s+(local\s+|session\s+)?[\w.]+\s*(=|to)\s|show\s+[\w.]+\s*$|copy\s+[\w.]+\s+(from|to)\s)",
    re.S,
)
DML_DDL = re.compile(
    r"\b(insert|update|delete|create|drop|alter|truncate|lock|grant|revoke|copy|listen|notify|set|vacuum)\b",
    re.I,
)
CALL = re.compile(r"\bjobctl(_router)?\.\w+\s*\(")
SCHEMA_NAME = re.compile(r"\bjobctl(_router)?\.(\w+)\s*(\()?")
# the relation after FROM or JOIN (LATERAL skipped): a call, a subquery or a WITH name passes
SOURCE = re.compile(r"\b(?:from|join)\s+(?:lateral\s+)?([\w.]+\s*\(|\(|[\w.]+)", re.I)
WITH_NAME = re.compile(r"(?:\bwith(?:\s+recursive)?|,)\s*(\w+)\s*(?:\([^)]*\)\s*)?as\s*\(", re.I)


def _bare(text: str) -> str:
    """The statement without comments, string literals and the FROM of extract(field from ...)."""
    text = re.sub(r"--[^\n]*", " ", text)
    text = re.sub(r"'(?:[^']|'')*'", "''", text)
    return re.sub(r"\bextract\s*\(\s*\w+\s+from\b", "extract(", text, flags=re.I)


def problems(text: str) -> list[str]:
    """What makes a statement more than calls of jobctl functions (empty: nothing)."""
    sql = _bare(text)
    found = [f"runs {m.group(1).upper()}" for m in DML_DDL.finditer(sql)]
    if not CALL.search(sql):
        found.append("calls no jobctl function")
    found += [f"names the table {m.group(0).strip()}" for m in SCHEMA_NAME.finditer(sql) if not m.group(3)]
    own = {m.group(1).lower() for m in WITH_NAME.finditer(sql)}
    for m in SOURCE.finditer(sql):
        source = m.group(1)
        if source.endswith("(") or source.lower() in own:
            continue
        found.append(f"reads from {source}")
    return found


def statements() -> dict[str, str]:
    """queries.py's module-level string constants, by name."""
    tree = ast.parse((PACKAGE / "queries.py").read_text())
    out: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out.update((t.id, node.value.value) for t in node.targets if isinstance(t, ast.Name))
    return out


def test_the_checks_can_fail() -> None:
    """The checks find what they must: a table read, DML, DDL, a call of no jobctl function."""
    assert problems("select * from jobctl.get_job(%(job_id)s::bigint)") == []
    assert (
        problems(
            "with r as (select * from jobctl.job_rates(now())) select * from r cross join lateral unnest(r.a)"
        )
        == []
    )
    assert "names the table jobctl_router.shard" in problems("select count(*) from jobctl_router.shard")
    assert "names the table jobctl.job" in problems("select jobctl.tick() from jobctl.job")
    assert "runs DELETE" in problems("delete from jobctl.archive_writing where url = any(%(urls)s)")
    assert "runs DROP" in problems("drop table {part}")
    assert "runs LOCK" in problems("lock table jobctl.job_archive in access exclusive mode")
    assert "calls no jobctl function" in problems("select archive_url from retention")
    assert "reads from pg_catalog.pg_attribute" in problems(
        "select jobctl.tick(), a.attname from pg_catalog.pg_attribute as a"
    )
    assert problems("select extract(epoch from timeout) from jobctl.claim_job('w')") == []


def test_every_statement_of_queries_py_is_a_call_of_jobctl_functions() -> None:
    found = statements()
    assert len(found) > 100
    assert set(QUERIES_ALLOWED) <= set(found), "an allowlisted statement is gone: take it off the list"
    bad = {name: problems(text) for name, text in found.items() if name not in QUERIES_ALLOWED}
    assert {name: p for name, p in bad.items() if p} == {}


def _literal(node: ast.expr) -> str | None:
    """The text of a string literal (f-strings with their holes as {}), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "SQL"
        and node.args
    ):
        return _literal(node.args[0])
    return None


def _scan(tree: ast.AST) -> list[str]:
    """The literals of a module that start like a statement or are handed to execute(),
    executemany(), stream() or copy(), in source order."""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        text = None
        if not isinstance(node, ast.expr):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in ("execute", "executemany", "stream", "copy"):
                text = _literal(node.args[0])
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and STATEMENT_START.match(node.value)
        ):
            text = node.value
        if text is not None:
            found.append((node.lineno, node.col_offset, text))
    seen: list[str] = []
    for _, _, text in sorted(found):
        if text not in seen:
            seen.append(text)
    return seen


def raw_sql() -> list[tuple[str, str]]:
    """(module, literal) of every raw statement outside queries.py (_scan)."""
    found: list[tuple[str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "queries.py":
            module = str(path.relative_to(PACKAGE))
            found += [(module, text) for text in _scan(ast.parse(path.read_text()))]
    return found


def test_no_raw_sql_outside_queries_py() -> None:
    found = raw_sql()
    modules = {Path(module).name for module, _ in found}
    assert set(ELSEWHERE_ALLOWED) <= modules, "an allowlisted module holds no SQL now: take it off the list"
    assert [(m, text[:60]) for m, text in found if Path(m).name not in ELSEWHERE_ALLOWED] == []


def test_raw_sql_is_found_in_a_module() -> None:
    """The scan finds a statement handed to execute() and one kept in a variable, not a sentence."""
    tree = ast.parse(
        "conn.execute('select 1')\n"
        "q = 'delete from jobctl.job where job_id = 1'\n"
        "conn.execute(sql.SQL('drop table {}').format(x))\n"
        "help = 'delete finished jobs'\n"
    )
    assert [text for text in _scan(tree)] == [
        "select 1",
        "delete from jobctl.job where job_id = 1",
        "drop table {}",
    ]


@pytest.mark.parametrize("name", sorted(QUERIES_ALLOWED))
def test_each_allowlisted_statement_is_flagged_without_its_entry(name: str) -> None:
    """An entry the checks would pass anyway is not needed: the list names only real exceptions."""
    assert problems(statements()[name])
