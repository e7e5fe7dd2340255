"""The command line as a whole (bert.cli.main): every command answers -h as --help; the group listings show whole
first sentences; one way to give each kind of target (the thing acted on positional, a descriptor --system with
help that names MLPERF_BERT_SYSTEMS, what is written -o/--out), the older forms still taken where scripts pass
them; --version prints the package version and the code's commit."""

import configparser
import re

import click
import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.cli.common import SYSTEM_HELP, first_sentence
from bert.descriptor_files import SEARCH_PATH_ENV
from bert.provenance import CHECKOUT, head_commit, running_code


def _commands(group: click.Group = main, path: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


COMMANDS = list(_commands())
GROUPS = [((), main)] + [(path, command) for path, command in COMMANDS if isinstance(command, click.Group)]


def _help(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", [()] + [path for path, _ in COMMANDS], ids=lambda p: " ".join(p) or "main")
def test_every_command_answers_h_as_help(path):
    assert _help(*path, "-h") == _help(*path, "--help")


@pytest.mark.parametrize("path, group", GROUPS, ids=[" ".join(p) or "main" for p, _ in GROUPS])
def test_a_group_lists_each_commands_first_sentence_whole(path, group):
    listing = _help(*path, "--help").split("Commands:\n", 1)[1]
    shown = {}
    for line in listing.splitlines():
        name, _, text = line.strip().partition(" ")
        if line.startswith("  ") and not line.startswith("   ") and name in group.commands:
            current = shown[name] = [text.strip()]
        else:
            current.append(line.strip())
    for name, command in group.commands.items():
        text = " ".join(" ".join(shown[name]).split())
        assert text == first_sentence(command) and text.endswith(".") and not text.endswith("..."), (name, text)


def test_a_first_sentence_ends_at_a_full_stop_not_at_an_abbreviation():
    command = click.Command("c", help="Do a thing, e.g. this one, i.e. well. Then more.\n\nAnother paragraph.")
    assert first_sentence(command) == "Do a thing, e.g. this one, i.e. well."


def test_one_way_to_give_each_kind_of_target():
    for path, command in COMMANDS:
        where = " ".join(path)
        usage = _help(*path, "--help").splitlines()[0]
        assert "SYSTEM" not in usage and "OUT" not in usage.split("[OPTIONS]", 1)[-1], (where, usage)
        for param in command.params:
            shown = isinstance(param, click.Option) and not param.hidden
            if param.name in ("system", "systems", "system_name"):  # a system, named by --system
                assert isinstance(param, click.Option) and param.opts == ["--system"], (where, param.opts)
            if param.name in ("system", "system_name"):  # a descriptor: the help says where names are read
                assert param.help.endswith(f"{SYSTEM_HELP}.") or param.help.endswith(f"{SYSTEM_HELP}. Repeatable."), \
                    where
            if param.name == "systems":  # systems picked from the submissions a compliance command reads
                assert param.multiple and param.help.startswith("A system of the package"), where
            if shown and "--out" in param.opts:
                assert param.opts == ["-o", "--out"], (where, param.opts)
            if shown:  # what a command acts on is positional: the options scripts passed it in before are hidden
                assert not set(param.opts) & {"--logs", "--input", "--text"}, (where, param.opts)
    assert SEARCH_PATH_ENV in SYSTEM_HELP


def test_the_forms_scripts_passed_before_are_still_taken(tmp_path):
    assert _help("system", "show", "cpu_micro") == _help("system", "show", "--system", "cpu_micro")
    assert _help("system", "check", "cpu_micro", "--system", "cpu_tiny").count(": ok (") == 2
    assert "time: NEXP=2 run(s)" in _help("system", "time-check", "cpu_micro", "--runs", "2", "--", "--time=1:00:00")
    assert _help("system", "time-check", "cpu_micro", "--runs", "2", "--", "--time=1:00:00") == \
        _help("system", "time-check", "--system", "cpu_micro", "--runs", "2", "--time=1:00:00")
    twice = CliRunner().invoke(main, ["system", "show", "cpu_micro", "--system", "cpu_tiny"])
    assert twice.exit_code == 2 and "--system cpu_tiny and cpu_micro: give it once, as --system" in twice.output
    missing = CliRunner().invoke(main, ["system", "plan"])
    assert missing.exit_code == 2 and "Missing option '--system'" in missing.output


def test_version_prints_the_package_version_and_the_codes_commit():
    config = configparser.ConfigParser()
    config.read(CHECKOUT / "setup.cfg")
    lines = _help("--version").splitlines()
    assert lines[0] == f"mlperf-bert {config['metadata']['version']}"
    commit = head_commit()
    assert re.fullmatch(rf"commit {commit}( with uncommitted changes in bert/)?", lines[1]) if commit else \
        lines[1] == "commit none (not a git checkout)"
    assert lines[2] == f"code {running_code().digest} (code_version in run logs)"
