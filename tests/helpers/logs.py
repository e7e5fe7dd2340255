"""MLPerf log lines for stand-ins of the trainer."""

from __future__ import annotations

import json


def mllog_line(key: str, **metadata) -> str:
    """One :::MLLOG line (for stand-ins of the trainer that must leave a log)."""
    event = {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": key, "value": None,
             "metadata": metadata}
    return f":::MLLOG {json.dumps(event)}"
