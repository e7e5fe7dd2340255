"""What the data commands share (bert.cli.data_options): inputs after the options, folders expanded to the files
of a suffix, an output inside an input refused, errors of the work as one line, the shape options in order."""

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bert.cli.data_options import DataError, data_errors, input_paths, shape_options, shard_inputs, shard_paths


def test_inputs_are_expanded_and_an_output_inside_one_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    for name in ("a/x.hdf5", "a/y.h5", "a/notes.txt", "z.hdf5"):
        (tmp_path / name).write_text("")
    found = shard_paths((tmp_path / "a",), (tmp_path / "z.hdf5",), tmp_path / "out")
    assert sorted(found) == [tmp_path / "a" / "x.hdf5", tmp_path / "a" / "y.h5", tmp_path / "z.hdf5"]
    with pytest.raises(DataError, match=r"a/out: lies inside the input .*/a; write the output elsewhere"):
        shard_paths((), (tmp_path / "a",), tmp_path / "a" / "out")
    with pytest.raises(click.UsageError, match="give at least one text part"):
        input_paths((), (), tmp_path / "out", "give at least one text part")


def test_the_work_s_errors_are_one_line():
    def full_disk():
        raise OSError(28, "No space left on device", "/data/out.hdf5")

    def bad_value():
        raise ValueError("x.hdf5: not a shard")

    with pytest.raises(DataError, match=r"^/data/out.hdf5: No space left on device"):
        data_errors(full_disk)
    with pytest.raises(DataError, match=r"^x.hdf5: not a shard$"):
        data_errors(bad_value)
    assert data_errors(lambda: 7) == 7


def test_a_command_with_the_shared_options_lists_them_in_order(tmp_path):
    @click.command()
    @shard_inputs
    @shape_options
    def command(inputs: tuple[Path, ...], more_inputs: tuple[Path, ...], form: str, max_seq_length: int,
                max_predictions: int) -> None:
        click.echo(f"{[p.name for p in (*inputs, *more_inputs)]} {form} {max_seq_length} {max_predictions}")

    (tmp_path / "s.hdf5").write_text("")
    shown = CliRunner().invoke(command, ["--help"]).output
    assert shown.index("--format") < shown.index("--max-seq-length") < shown.index("--max-predictions")
    assert "SHARDS..." in shown
    ran = CliRunner().invoke(command, ["--format", "varlen", str(tmp_path / "s.hdf5")])
    assert ran.output == "['s.hdf5'] varlen 512 76\n"
