"""The benchmark harness runs end to end (tiny sizes, jobctl only, on the test cluster): a smoke
test of benchmarks/compare.py, not a measurement. Speed is judged from `make bench` output."""

from __future__ import annotations

import json
import subprocess
import sys
from urllib.parse import quote

from jobctl import db
from psycopg.conninfo import conninfo_to_dict


def test_compare_smoke_prints_json_lines_and_a_table(dsn: str) -> None:
    params = conninfo_to_dict(dsn)
    url = f"postgresql://{params.get('user', 'postgres')}@/postgres?host={quote(str(params['host']))}"
    url += f"&port={params.get('port', 5432)}"
    run = subprocess.run(
        [
            sys.executable,
            str(db.ROOT / "benchmarks" / "compare.py"),
            "--smoke",
            "--systems",
            "jobctl",
            "--url",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert {r["workload"] for r in rows} == {"e-bulk", "e-single", "d-drain", "l-pickup"}
    for r in rows:
        assert "error" not in r, r
        assert r.get("duplicates", 0) == 0 and r.get("missing", 0) == 0, r
    drain = next(r for r in rows if r["workload"] == "d-drain")
    assert drain["jobs_per_s"] > 0 and drain["xids_per_job"] >= 0 and drain["relations_mib"] > 0
    pickup = next(r for r in rows if r["workload"] == "l-pickup")
    assert pickup["at_500"]["handled"] == pickup["at_500"]["jobs"] > 0
    assert "d-drain  (jobs/s" in run.stdout and "jobctl" in run.stdout
