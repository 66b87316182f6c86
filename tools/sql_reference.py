"""docs/sql-reference.md, written from the database's own catalog: every public function of schema
jobctl (granted to a jobctl role; `_`-prefixed helpers left out), its signature, parameters and
result from pg_proc, and its text, errors and example from its COMMENT ON FUNCTION.

    .venv/bin/python tools/sql_reference.py [--dsn DSN] > docs/sql-reference.md

A comment is prose, then optional paragraphs that start a line with `Errors:` (a list of
`SQLSTATE when` items separated by commas, or `none`) and `Example:` (SQL, shown as written).
The output depends only on the catalog's definitions: sorted, no OIDs, owners or timestamps.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

import psycopg
from jobctl import db

ROLES = ("jobctl_reader", "jobctl_writer", "jobctl_worker", "jobctl_api", "jobctl_admin")

FUNCTIONS = """
select p.proname as name,
    pg_catalog.pg_get_function_identity_arguments(p.oid) as identity,
    pg_catalog.pg_get_function_arguments(p.oid) as arguments,
    pg_catalog.pg_get_function_result(p.oid) as result,
    p.prosecdef as definer,
    coalesce(pg_catalog.obj_description(p.oid, 'pg_proc'), '') as comment,
    array(
        select r.rolname::text
        from pg_catalog.aclexplode(p.proacl) as a
        inner join pg_catalog.pg_roles as r on r.oid = a.grantee
        where a.privilege_type = 'EXECUTE' and r.rolname = any(%(roles)s)
        order by array_position(%(roles)s, r.rolname::text)
    ) as grantees
from pg_catalog.pg_proc as p
where p.pronamespace = 'jobctl'::regnamespace and p.proname !~ '^_' and p.prokind = 'f'
order by p.proname, identity
"""

# the columns of a composite type a public function returns (SETOF jobctl.job_info)
COMPOSITE = """
select a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod)
from pg_catalog.pg_type as t
inner join pg_catalog.pg_attribute as a on a.attrelid = t.typrelid
where t.typnamespace = 'jobctl'::regnamespace and t.typname = %s and a.attnum > 0 and not a.attisdropped
order by a.attnum
"""

_SECTION = re.compile(r"^(Errors|Example):[ \t]*", re.MULTILINE)
_ERROR_SPLIT = re.compile(r",\s+(?=(?:JC\d{3}|P\d{4}|\d{2}[0-9A-Z]{3})\s)")
_ERROR_ITEM = re.compile(r"^((?:JC\d{3}|P\d{4}|\d{2}[0-9A-Z]{3}))\s+(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: str | None


@dataclass(frozen=True)
class Comment:
    text: str
    errors: list[tuple[str, str]] | None  # None: the comment says nothing; []: "none"
    example: str | None


@dataclass(frozen=True)
class Function:
    name: str
    identity: str
    arguments: str
    result: str
    definer: bool
    comment: Comment
    grantees: list[str]

    @property
    def parameters(self) -> list[Parameter]:
        return [parse_parameter(a) for a in split_top_level(self.arguments)]

    @property
    def anchor(self) -> str:
        """GitHub's anchor for the function's heading (underscores are kept)."""
        return self.name


def split_top_level(text: str) -> list[str]:
    """Split a pg_get_function_arguments text at the commas outside quotes, parentheses and brackets."""
    parts: list[str] = []
    depth = 0
    quoted = False
    start = 0
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted  # a doubled quote toggles twice
        elif quoted:
            continue
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last:
        parts.append(last)
    return parts


def parse_parameter(text: str) -> Parameter:
    """`name type [DEFAULT expr]`, as pg_get_function_arguments writes it (no OUT/INOUT here)."""
    head, sep, default = text.partition(" DEFAULT ")
    name, _, typ = head.partition(" ")
    return Parameter(name, typ, default if sep else None)


def unwrap(text: str) -> str:
    """Comments are wrapped at about 120 columns in the .sql files: one paragraph per blank line."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def parse_comment(text: str) -> Comment:
    pieces = _SECTION.split(text)
    body = pieces[0]
    errors: list[tuple[str, str]] | None = None
    example: str | None = None
    for label, value in zip(pieces[1::2], pieces[2::2], strict=True):
        if label == "Errors":
            errors = parse_errors(unwrap(value))
        else:
            example = value.strip()
    return Comment(unwrap(body), errors, example)


def parse_errors(text: str) -> list[tuple[str, str]]:
    text = text.strip().rstrip(".")
    if text.lower() in ("", "none", "none of its own"):
        return []
    items = []
    for item in _ERROR_SPLIT.split(text):
        m = _ERROR_ITEM.match(item.strip())
        if not m:
            raise ValueError(f"an Errors item must start with a SQLSTATE: {item!r}")
        items.append((m.group(1), m.group(2).strip()))
    return items


Columns = dict[str, list[tuple[str, str]]]


def fetch(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[list[Function], Columns]:
    rows = conn.execute(FUNCTIONS, {"roles": list(ROLES)}).fetchall()
    functions = []
    for name, identity, arguments, result, definer, comment, grantees in rows:
        functions.append(
            Function(
                str(name),
                str(identity),
                str(arguments),
                str(result),
                bool(definer),
                parse_comment(str(comment)),
                [str(g) for g in grantees] if isinstance(grantees, list) else [],
            )
        )
    types: Columns = {}
    for f in functions:
        m = re.fullmatch(r"SETOF jobctl\.(\w+)", f.result)
        if m and m.group(1) not in types:
            cols = conn.execute(COMPOSITE, (m.group(1),)).fetchall()
            types[m.group(1)] = [(str(c), str(t)) for c, t in cols]
    return functions, dict(sorted(types.items()))


def first_sentence(text: str) -> str:
    """The comment's first sentence: up to the first full stop outside parentheses."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "." and depth == 0 and (i + 1 == len(text) or text[i + 1].isspace()):
            return text[: i + 1]
    return text


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(functions: list[Function], types: Columns) -> str:
    public = [f for f in functions if f.grantees]
    owner_only = [f for f in functions if not f.grantees]
    out = [
        "# SQL reference",
        "",
        "<!-- Generated by `tools/sql_reference.py` from the database's COMMENT ON FUNCTION texts",
        "     (sql/functions/*/*.sql): edit those, run `jobctl migrate`, then regenerate. -->",
        "",
        "Every function of schema `jobctl` that a jobctl role may execute, and the periodic functions",
        "that only the schema owner runs. Names starting with `_` are internal and not listed. Roles",
        "and what each may do: docs/security.md; SQLSTATEs: docs/errors.md.",
        "",
        "Conventions for every function below:",
        "",
        "- A function acts only for the tenants its caller may act for (docs/security.md). In a",
        "  transaction that called `jobctl.authenticate` (the HTTP API), any of them may also raise",
        "  `JC020` (the token was revoked meanwhile) or `JC021` (the token lacks the scope the call",
        "  needs); these are not repeated under each function.",
        "- A parameter of the wrong type or out of its type's range fails in PostgreSQL's own cast",
        "  before the function runs (`22P02`, `22003`, `22007`, `22008`).",
        "- Times come from the database clock; no function takes the current time as a parameter.",
        "",
        "| function | granted to | what it does |",
        "|---|---|---|",
    ]
    for f in public + owner_only:
        roles = ", ".join(f"`{g}`" for g in f.grantees) or "the schema owner"
        out.append(f"| [`{f.name}`](#{f.anchor}) | {roles} | {cell(first_sentence(f.comment.text))} |")
    out.append("")
    out.append("## Functions granted to the jobctl roles")
    out.append("")
    for f in public:
        out += render_function(f)
    out.append("## Periodic functions (schema owner only)")
    out.append("")
    out.append("Granted to no role: pg_cron and `jobctl.tick` run them as the owner (docs/operations.md).")
    out.append("")
    for f in owner_only:
        out += render_function(f)
    if types:
        out.append("## Types")
        out.append("")
        for name, cols in types.items():
            out.append(f"### `jobctl.{name}`")
            out.append("")
            out.append("| column | type |")
            out.append("|---|---|")
            out += [f"| `{c}` | `{t}` |" for c, t in cols]
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def render_function(f: Function) -> list[str]:
    out = [f"### {f.name}", ""]
    out += ["```sql", f"jobctl.{f.name}({f.arguments})", f"    returns {f.result}", "```", ""]
    out += [f.comment.text or "(no comment)", ""]
    grantees = ", ".join(f"`{g}`" for g in f.grantees) if f.grantees else "no role (the schema owner runs it)"
    definer = "SECURITY DEFINER" if f.definer else "SECURITY INVOKER"
    out += [f"Granted to {grantees}; {definer}.", ""]
    params = f.parameters
    out += ["**Parameters**", ""]
    if params:
        out += ["| name | type | default |", "|---|---|---|"]
        for p in params:
            default = f"`{cell(p.default)}`" if p.default is not None else "required"
            out.append(f"| `{p.name}` | `{p.type}` | {default} |")
    else:
        out.append("None.")
    out += ["", "**Returns**", ""]
    table = re.fullmatch(r"TABLE\((.*)\)", f.result, re.DOTALL)
    setof = re.fullmatch(r"SETOF jobctl\.(\w+)", f.result)
    if table:
        out += ["A row set:", "", "| column | type |", "|---|---|"]
        for col in split_top_level(table.group(1)):
            name, _, typ = col.partition(" ")
            out.append(f"| `{name}` | `{typ}` |")
    elif setof:
        out.append(f"A row set of [`jobctl.{setof.group(1)}`](#jobctl{setof.group(1)}).")
    else:
        out.append(f"`{f.result}`.")
    out += ["", "**Errors**", ""]
    errors = f.comment.errors
    if errors is None:
        out.append("Not documented.")
    elif not errors:
        out.append("None of its own.")
    else:
        out += ["| SQLSTATE | when |", "|---|---|"]
        out += [f"| `{code}` | {cell(when)} |" for code, when in errors]
    out.append("")
    if f.comment.example:
        out += ["**Example**", "", "```sql", f.comment.example, "```", ""]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tools/sql_reference.py", description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", help="the database to read (default: JOBCTL_DSN, else .pg/dsn)")
    args = ap.parse_args(argv)
    with psycopg.connect(args.dsn or db.dsn()) as conn:
        functions, types = fetch(conn)
    sys.stdout.write(render(functions, types))
    return 0


if __name__ == "__main__":
    sys.exit(main())
