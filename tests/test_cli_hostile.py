"""The CLI against hostile data: tenants' strings holding terminal escapes, and a payload
nested too deeply for Python's JSON decoder. output.py's functions directly, then the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import psycopg
import pytest
from click.testing import CliRunner, Result
from jobctl import client, output
from jobctl.cli import main

Conn = psycopg.Connection[tuple[object, ...]]

JOBCTL = [sys.executable, "-m", "jobctl.cli"]
# what must never reach a terminal raw (newlines between lines aside)
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
EVIL = "q\x1b[31mred\x1b]0;title\x07\rX\u202egnp.exe\x9b2J"
EVIL_SHOWN = r"q\x1b[31mred\x1b]0;title\x07\rX\u202egnp.exe\x9b2J"
DEEP = 3000
DEEP_JSON = "[" * DEEP + "]" * DEEP


def run(dsn: str, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"JOBCTL_DSN": dsn})


# --- output.py


def test_printable_escapes_what_a_terminal_acts_on() -> None:
    assert output.printable("plain text, é and 漢字") == "plain text, é and 漢字"
    assert output.printable(EVIL) == EVIL_SHOWN
    assert output.printable("a\nb\tc\x00\x7f\u2066d\u2069") == r"a\nb\tc\x00\x7f\u2066d\u2069"


def test_cells_tables_and_key_values_are_printable() -> None:
    name = "nightly\nreport"  # a schedule name with a newline
    assert output.cell(EVIL) == EVIL_SHOWN
    assert output.cell({"q": EVIL}) == r'{"q":"q\u001b[31mred\u001b]0;title\u0007\rX\u202egnp.exe\x9b2J"}'
    assert output.cell([EVIL, "b"]) == EVIL_SHOWN + ",b"
    table = output.table(["NAME", "QUEUE"], [[name, EVIL]])
    assert table.splitlines()[1] == rf"nightly\nreport  {EVIL_SHOWN}"
    kv = output.key_values([("queue", EVIL), ("name", name)])
    assert kv.splitlines() == [f"queue: {EVIL_SHOWN}", r"name:  nightly\nreport"]
    assert not UNSAFE.search(table + kv)


def test_json_output_escapes_them_too_and_round_trips() -> None:
    doc = {"queue": EVIL, "n": 1}
    text = output.to_json(doc)
    assert not UNSAFE.search(text), text
    assert r"\u202e" in text and r"\u009b" in text and r"\u001b" in text
    assert json.loads(text) == doc


def test_json_nested_too_deeply_is_kept_as_its_text() -> None:
    raw = client.load_json(DEEP_JSON.encode())
    assert isinstance(raw, client.RawJson) and raw.text == DEEP_JSON
    assert client.load_json(b'{"a": "[[[[", "b": [1]}') == {"a": "[[[[", "b": [1]}
    shallow = "[" * 150 + "]" * 150  # within MAX_JSON_DEPTH: decoded
    assert not isinstance(client.load_json(shallow), client.RawJson)
    wide = json.dumps([[i] for i in range(1000)])  # many brackets, shallow: decoded
    assert client.load_json(wide) == [[i] for i in range(1000)]
    shown = output.cell(raw)
    assert shown.startswith("[" * output.RAW_SHOWN + "…") and "6,000 characters" in shown
    text = output.to_json({"payload": raw, "job_id": 1})
    assert DEEP_JSON in text
    assert json.loads(text.replace(DEEP_JSON, "null")) == {"payload": None, "job_id": 1}


# --- the CLI, end to end


def test_get_shows_a_job_whose_payload_is_nested_too_deeply(dsn: str, conn: Conn, name: str) -> None:
    row = conn.execute("select job_id from jobctl.submit_job(%s, %s, '{}')", (name, name + "_q")).fetchone()
    assert row is not None
    job_id = str(row[0])
    conn.execute("select jobctl.cancel_job(%s)", (job_id,))  # no worker claims it
    # as the superuser, behind submit's back: submit refuses payloads deeper than 100 levels
    conn.execute("update jobctl.job set payload = %s::jsonb where job_id = %s", (DEEP_JSON, job_id))
    env = {**os.environ, "JOBCTL_DSN": dsn}
    out = subprocess.run([*JOBCTL, "get", job_id], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    [payload] = [line for line in out.stdout.splitlines() if line.startswith("payload:")]
    assert "nested too deeply to decode" in payload and len(payload) < 400
    assert "state:" in out.stdout and "cancelled" in out.stdout
    as_json = subprocess.run(
        [*JOBCTL, "get", job_id, "--json"], env=env, capture_output=True, text=True, timeout=30
    )
    assert as_json.returncode == 0, as_json.stderr
    assert DEEP_JSON in as_json.stdout, "the payload whole, as it is stored"
    doc = json.loads(as_json.stdout.replace(DEEP_JSON, "null"))
    assert (doc["job_id"], doc["payload"]) == (int(job_id), None)


def test_list_and_errors_show_a_queue_name_with_escapes_escaped(dsn: str, conn: Conn, name: str) -> None:
    row = conn.execute("select job_id from jobctl.submit_job(%s, %s, '{}')", (name, name + "_q")).fetchone()
    assert row is not None
    job_id = int(str(row[0]))
    conn.execute("select jobctl.cancel_job(%s)", (job_id,))  # out of the queues: only its row shows it
    # as the superuser: the SQL layer may refuse control characters in names
    conn.execute("update jobctl.job set queue = %s where job_id = %s", (EVIL, job_id))
    listed = run(dsn, "list", "--tenant", name)
    assert listed.exit_code == 0, listed.output
    assert not UNSAFE.search(listed.stdout), listed.stdout
    assert EVIL_SHOWN in listed.stdout
    got = run(dsn, "get", str(job_id))
    assert got.exit_code == 0 and "queue:" in got.stdout and EVIL_SHOWN in got.stdout
    assert not UNSAFE.search(got.stdout)
    as_json = run(dsn, "list", "--tenant", name, "--json")
    assert as_json.exit_code == 0 and not UNSAFE.search(as_json.stdout)
    assert [j["queue"] for j in json.loads(as_json.stdout)] == [EVIL]
    # an error line that echoes a tenant's string (one line: a message is cut at its first line break)
    one_line, one_line_shown = EVIL.replace("\r", ""), EVIL_SHOWN.replace("\\r", "")
    failed = run(dsn, "tenant", "pause", name + one_line)
    assert failed.exit_code == 1
    assert failed.stderr == f"jobctl: no tenant {name}{one_line_shown} [P0002, field: tenant_id]\n"


@pytest.mark.parametrize("as_json", [False, True])
def test_get_of_a_missing_job_is_still_one_line(dsn: str, as_json: bool) -> None:
    result = run(dsn, "get", "999999999999", *(["--json"] if as_json else []))
    assert result.exit_code == 1 and result.stderr.startswith("jobctl: no job 999999999999")
