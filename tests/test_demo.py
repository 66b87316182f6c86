"""`make demo` end to end: bin/demo with its own run directory and port, then bin/demo stop."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

from jobctl import db


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_demo_runs_every_sample_job_to_its_end(tmp_path: Path) -> None:
    env = {**os.environ, "JOBCTL_DEMO_DIR": str(tmp_path), "JOBCTL_DEMO_PORT": str(free_port())}
    try:
        out = subprocess.run(
            [db.ROOT / "bin" / "demo"], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert out.returncode == 0, out.stdout + out.stderr
        text = out.stdout
        assert re.search(r"same dedup key\s+-> 200 job (\d+) \(duplicate", text), text
        assert "(cancel while running) -> 200" in text, text
        for label, final in [
            ("acme immediate", "completed"),
            ("globex delayed", "completed"),
            ("initech retried", "completed"),
            ("acme cancelled", "cancelled"),
            ("globex dedup", "completed"),
        ]:
            assert re.search(rf"job \d+\s+{label}\s+{final}\n", text), (label, text)
        assert "failed attempt 2 (RuntimeError: simulated failure on attempt 2)" in text, text
        assert re.search(r"export TOKEN=jct_\d+_[0-9a-f]{64}", text), text
        assert re.search(r"The dashboard is at http://127\.0\.0\.1:\d+/ ", text), text
        assert "PUT /api/v1/schedules/demo-steady -> a job every 10 s" in text, text
    finally:
        subprocess.run(
            [db.ROOT / "bin" / "demo", "stop"], env=env, capture_output=True, timeout=60, check=False
        )
    assert not list(tmp_path.glob("*.pid")), "bin/demo stop leaves no processes behind"
