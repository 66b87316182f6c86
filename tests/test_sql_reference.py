"""docs/sql-reference.md is what `tools/sql_reference.py` writes from the test database's
COMMENT ON texts: regenerate it (`make sql-reference`) after changing a comment or a signature."""

from __future__ import annotations

import importlib
import sys

import psycopg
from jobctl import db

sys.path.insert(0, str(db.ROOT / "tools"))
reference = importlib.import_module("sql_reference")


def test_the_committed_sql_reference_is_current(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        functions, types = reference.fetch(conn)
    committed = (db.ROOT / "docs" / "sql-reference.md").read_text()
    assert reference.render(functions, types) == committed, (
        "docs/sql-reference.md is stale: run `make sql-reference`"
    )


def test_every_public_function_has_a_comment_with_errors_and_an_example(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        functions, _ = reference.fetch(conn)
    assert len(functions) >= 40
    lacking = [
        f.name for f in functions if not f.comment.text or f.comment.errors is None or not f.comment.example
    ]
    assert lacking == []


def test_comments_are_parsed_into_text_errors_and_example() -> None:
    c = reference.parse_comment(
        "Do a thing (NULL: all).\nMore.\n"
        "Errors: JC001 a bad x, y or z, 42501 another\ntenant.\n"
        "Example:\nselect 1;"
    )
    assert c.text == "Do a thing (NULL: all). More."
    assert c.errors == [("JC001", "a bad x, y or z"), ("42501", "another tenant")]
    assert c.example == "select 1;"
    assert reference.parse_comment("Only text.\nErrors: none.").errors == []
    assert reference.split_top_level("a text DEFAULT 'x, y'::text, b int[] DEFAULT ARRAY[1, 2]") == [
        "a text DEFAULT 'x, y'::text",
        "b int[] DEFAULT ARRAY[1, 2]",
    ]
