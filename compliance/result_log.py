"""One MLPerf result log, parsed once: its events, the lines that do not parse, and the figures read off them.

Lines are found the way the official parser finds them (any line holding `:::MLLOG `, the text after its last
occurrence), so that what is reported here is what the checkers see. A line is malformed when it is not a JSON
object with `time_ms`, `key`, `value` and `metadata`: the official parser rejects the file for bad JSON and
crashes on a missing field, so such a line is reported here, with its line number in the file.

Before any line is parsed, the log is screened for what the official tools cannot parse in bounded time: their
parser strips each `:::MLLOG` line with `re.sub(".*:::MLLOG ", ...)`, whose time grows with the square of the
line's length (measured with mlperf-logging 4.1.68: 0.1 s for a line of 4,000 characters, 5 s at 64,000, hours at a
megabyte). A log with a longer line than MAX_MLLOG_LINE, or whose lines add up to more work than MAX_PARSE_WORK,
is not read (its ResultLog says why), so it never reaches those tools.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

from compliance.files import MAX_LOG_BYTES, UnreadableFile, parse_json, read_regular_file

TOKEN = ":::MLLOG "
SYSTEM_TOKEN = ":::SYSJSON "  # NVIDIA's scripts print the system description the run saw (its GPUs, its nodes)
ENCODING = "latin-1"  # what the official tools read logs as
# The longest :::MLLOG line of the 3,381 published BERT logs of Training v0.7 to v5.0 is 377 characters; the official
# parser takes about 0.1 s (at worst, 0.14 s) for a line of 4,096.
MAX_MLLOG_LINE = 4096
# The sum over a log's :::MLLOG lines of their length squared: the parser's time is about 1 to 8 ns times it
# (8 at worst: lines of colons), so this bound keeps one parse under about 16 s. The busiest published BERT log
# (NVIDIA's 512-node v2.0 run, 5,054 lines) comes to 2.04e8, a tenth of it.
MAX_PARSE_WORK = 2 * 10**9


@dataclass(frozen=True)
class Event:
    lineno: int  # line number in the file, from 1
    time_ms: float
    key: str
    value: Any
    metadata: dict


@dataclass(frozen=True)
class Malformed:
    lineno: int
    text: str
    problem: str


@dataclass(frozen=True)
class EvalPoint:
    samples: float  # training samples seen (the eval_accuracy epoch_num)
    accuracy: float


@dataclass(frozen=True)
class ThroughputPoint:
    samples: float  # training samples seen at the end of the block
    samples_per_second: float  # training only: from block_start to the following eval_start


def number(value: Any) -> float | None:
    """`value` when it is a number (a log value may be any JSON: an object, a string, true), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _parse_line(text: str) -> dict | str:
    """The event fields of one `:::MLLOG` line, or what is wrong with it."""
    body = text[text.rindex(TOKEN) + len(TOKEN):].strip()
    try:
        data = parse_json(body)
    except ValueError as e:
        return str(e)
    if not isinstance(data, dict):
        return "not a JSON object"
    missing = [f for f in ("time_ms", "key", "value", "metadata") if f not in data]
    if missing:
        return f"no {', '.join(missing)} field"
    if isinstance(data["time_ms"], bool) or not isinstance(data["time_ms"], (int, float)):
        return f"time_ms is {data['time_ms']!r}, not a number"
    if not isinstance(data["key"], str):
        return f"key is {data['key']!r}, not a string"
    if not isinstance(data["metadata"], dict):
        return f"metadata is {data['metadata']!r}, not an object"
    return data


@dataclass(frozen=True)
class ResultLog:
    path: Path
    events: tuple[Event, ...]
    malformed: tuple[Malformed, ...]
    unreadable: str | None = None  # why the file was not read (compliance.files); then it has no events
    stated_systems: tuple[dict, ...] = ()  # the :::SYSJSON objects the log prints (no official tool reads them)

    def all(self, key: str) -> list[Event]:
        return [e for e in self.events if e.key == key]

    def values(self, key: str) -> list[Any]:
        return [e.value for e in self.events if e.key == key]

    def first(self, key: str) -> Event | None:
        return next((e for e in self.events if e.key == key), None)

    def value(self, key: str) -> Any:
        """The value of the first `key` event, or None."""
        event = self.first(key)
        return event.value if event is not None else None

    @property
    def division(self) -> Any:
        return self.value("submission_division")

    @property
    def global_batch_size(self) -> Any:
        return self.value("global_batch_size")

    @property
    def seed(self) -> Any:
        return self.value("seed")

    @property
    def status(self) -> str | None:
        """The run_stop status (`success` or `aborted`), or None for a log without run_stop."""
        stop = self.first("run_stop")
        return None if stop is None else str(stop.metadata.get("status"))

    @property
    def converged(self) -> bool:
        return self.status == "success"

    @property
    def run_minutes(self) -> float | None:
        """Wall-clock minutes from run_start to run_stop: the time the result summarizer scores."""
        start, stop = self.first("run_start"), self.first("run_stop")
        if start is None or stop is None:
            return None
        return (stop.time_ms - start.time_ms) / 60_000

    @property
    def evals(self) -> list[EvalPoint]:
        return [EvalPoint(e.metadata["epoch_num"], e.value) for e in self.all("eval_accuracy")
                if number(e.metadata.get("epoch_num")) is not None and number(e.value) is not None]

    @property
    def samples_to_converge(self) -> float | None:
        """As the RCP checker counts it: the epoch_num of the last eval before a successful run_stop."""
        stop = self.first("run_stop")
        if stop is None or not self.converged:
            return None
        before = [e for e in self.all("eval_accuracy") if e.lineno < stop.lineno and "epoch_num" in e.metadata]
        return number(before[-1].metadata["epoch_num"]) if before else None

    def throughput(self) -> list[ThroughputPoint]:
        """Training samples per second of each block (block_start to the next eval_start)."""
        points, block = [], None
        for event in self.events:
            if event.key == "block_start":
                block = event
            elif event.key == "eval_start" and block is not None:
                end, first = number(event.metadata.get("epoch_num")), number(block.metadata.get("first_epoch_num", 0))
                seconds = (event.time_ms - block.time_ms) / 1000
                if end is not None and first is not None and end > first and seconds > 0:
                    points.append(ThroughputPoint(end, (end - first) / seconds))
                block = None
        return points


def _stated_system(line: str) -> dict | None:
    """The system description a :::SYSJSON line prints (the JSON object after the token; a shell's echo may leave
    a quote after it), or None."""
    body = line[line.rindex(SYSTEM_TOKEN) + len(SYSTEM_TOKEN):].strip()
    try:
        data, _ = json.JSONDecoder().raw_decode(body)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _mllog_lines(text: str) -> list[tuple[int, str]] | str:
    """(line number, line) of each :::MLLOG line (and :::SYSJSON line), as Python's text files split lines
    (universal newlines, as the official parser reads them); or why the official parser could not read them in
    bounded time."""
    lines, work = [], 0
    for lineno, line in enumerate(io.StringIO(text, newline=None), start=1):
        if TOKEN not in line:
            if SYSTEM_TOKEN in line and len(line) <= MAX_MLLOG_LINE:
                lines.append((lineno, line))
            continue
        if len(line) > MAX_MLLOG_LINE:
            return (f"line {lineno} is a :::MLLOG line of {len(line):,} characters, over the {MAX_MLLOG_LINE:,} "
                    "that are handed to the official tools: their parser takes time growing with the square of a "
                    "line's length (5 s at 64,000 characters, hours at a megabyte), and no genuine MLLOG line is "
                    "longer than a few hundred characters. The log is damaged or forged; it is not read")
        lines.append((lineno, line))
        work += len(line) ** 2
    if work > MAX_PARSE_WORK:
        longest = max(len(line) for _, line in lines)
        return (f"its {sum(TOKEN in line for _, line in lines):,} :::MLLOG lines (up to {longest:,} characters) "
                "would keep the official parser busy for minutes: its time grows with the square of each line's "
                f"length, and these come to {work:.2e} characters squared, over the {MAX_PARSE_WORK:.0e} handed to "
                "it (ten times the busiest published BERT log). The log is not read")
    return lines


def read_result_log(path: str | Path) -> ResultLog:
    """The log at `path`, read once through compliance.files (a file that is no regular file, too large, or too
    slow for the official parser (MAX_MLLOG_LINE, MAX_PARSE_WORK) is not read: its ResultLog says why)."""
    path = Path(path)
    try:
        data = read_regular_file(path, MAX_LOG_BYTES)
    except UnreadableFile as e:
        return ResultLog(path, (), (), str(e))
    lines = _mllog_lines(data.decode(ENCODING))
    if isinstance(lines, str):
        return ResultLog(path, (), (), lines)
    events, malformed, systems = [], [], []
    for lineno, line in lines:
        if TOKEN not in line:
            if (system := _stated_system(line)) is not None:
                systems.append(system)
            continue
        parsed = _parse_line(line)
        if isinstance(parsed, str):
            malformed.append(Malformed(lineno, line.rstrip("\n"), parsed))
        else:
            events.append(Event(lineno, float(parsed["time_ms"]), parsed["key"], parsed["value"], parsed["metadata"]))
    return ResultLog(path, tuple(events), tuple(malformed), stated_systems=tuple(systems))


def result_logs_in(folder: Path) -> list[Path]:
    """The files the official tools read as a folder's runs (`result_*.txt`), in run order."""
    def run_index(p: Path) -> tuple[int, str]:
        suffix = p.stem.removeprefix("result_")
        return (int(suffix), "") if suffix.isdigit() else (1 << 30, suffix)
    return sorted(folder.glob("result_*.txt"), key=run_index)


def olympic_mean(values: list[float]) -> float:
    """The mean after dropping the lowest and the highest value (the MLPerf score of 10 runs)."""
    if len(values) < 3:
        raise ValueError(f"an olympic mean needs at least 3 values, got {len(values)}")
    ordered = sorted(values)
    return mean(ordered[1:-1])
