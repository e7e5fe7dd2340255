"""What the command modules share (bert.cli.common): a bad descriptor, an OS error and a --bins value each end a
command in one line naming what to fix; every --bins option obeys the rule of run.length_bins."""

import errno

import click
import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.cli.common import descriptor_for_command, os_error_line, parse_length_bins
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.systems import unchecked_descriptor, write_unchecked


def test_a_descriptor_loads_and_a_bad_one_is_its_field_level_error(tmp_path):
    assert descriptor_for_command("cpu_micro").name == "cpu_micro"
    bad = write_unchecked(tmp_path, "bad", unchecked_descriptor({"model": "huge"}))
    with pytest.raises(click.ClickException, match=r"bad\.json: run\.model: unknown model config 'huge'"):
        descriptor_for_command(str(bad))


def test_an_os_error_is_its_file_and_the_systems_words_else_its_own_message():
    full = OSError(errno.ENOSPC, "No space left on device", "/data/part-0.hdf5")
    assert os_error_line(full) == "/data/part-0.hdf5: No space left on device"
    assert os_error_line(FileExistsError("out: holds files that `mlperf-bert data synth` did not write")) == \
        "out: holds files that `mlperf-bert data synth` did not write"


def test_bins_not_given_are_none_and_given_are_their_edges():
    assert parse_length_bins(None, 512) is None
    assert parse_length_bins("128,256,512", 512) == [128, 256, 512]


def test_length_bins_have_one_rule_for_the_descriptor_and_every_bins_option(tmp_path):
    with pytest.raises(ConfigError, match=r"run.length_bins: the last edge 100 must reach the maximum sequence "
                                          r"length"):
        load_descriptor("cpu_micro").variant({"length_bins": [50, 100], "max_seq_length": 128})
    for command in (["simulate-balance", "--steps", "1", "--max-len", "128"],
                    ["data", "stratify", "--input", str(tmp_path), "--out", str(tmp_path / "o"), "--shards", "1",
                     "--max-seq-length", "128"]):
        result = CliRunner().invoke(main, [*command, "--bins", "50,100"])
        assert result.exit_code == 2 and "--bins: the last edge 100 must reach the maximum sequence length 128" \
            in result.output, result.output
        result = CliRunner().invoke(main, [*command, "--bins", "64,x"])
        assert "'64,x': expected whole numbers separated by commas" in result.output, result.output
