"""`mlperf-bert check | package | score | report | review` (bert.cli.compliance): how a compliance function's
refusal reaches the user, as one line and an exit status, and its progress as bars. The verdicts themselves:
tests/compliance."""

import errno

import click
import pytest

from bert.cli.compliance import _with_progress
from compliance.check import Progress
from compliance.errors import InputError, UsageError


def _failing(error: Exception):
    def work(path, progress):
        progress.step("reading", 1)
        raise error
    return work


def test_the_work_gets_a_progress_and_returns_its_result():
    seen = []

    def work(path, progress):
        progress.step("reading", 2)
        progress.advance(2)
        seen.append((path, isinstance(progress, Progress)))
        return "verdict"
    assert _with_progress(work, "logs") == "verdict" and seen == [("logs", True)]
    assert _with_progress(work, "logs", quiet=True) == "verdict"


@pytest.mark.parametrize("error, kind, line", [
    (UsageError("ruleset 3.1.0 does not know BERT; use 4.1.0 or 5.0.0"), click.UsageError,
     "ruleset 3.1.0 does not know BERT; use 4.1.0 or 5.0.0"),
    (InputError("logs/x: holds no result_<i>.txt"), click.ClickException, "logs/x: holds no result_<i>.txt"),
    (OSError(errno.EACCES, "Permission denied", "out/org"), click.ClickException,
     "out/org: Permission denied; nothing was changed"),
])
def test_a_refusal_is_one_line_usage_exit_2_else_1(error, kind, line):
    with pytest.raises(kind) as info:
        _with_progress(_failing(error), "logs")
    assert type(info.value) is kind and info.value.format_message() == line
    assert info.value.exit_code == (2 if kind is click.UsageError else 1)
