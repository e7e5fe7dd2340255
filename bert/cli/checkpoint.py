"""`mlperf-bert checkpoint ...`: convert published checkpoints to this model and inspect them."""

from __future__ import annotations

from pathlib import Path

import click

from bert.cli.common import Group, descriptor_for_command, out_option, system_option
from bert.model.config import BertConfig, named_config

_SOURCES = ("SRC: a TensorFlow checkpoint prefix (model.ckpt-28252, or its folder), a PyTorch file (a state dict "
            "or NVIDIA's {'model': ...}) or a .safetensors file, with TF, transformers or this model's names.")


def _config(system: str | None, model: str) -> BertConfig:
    if system is not None:
        return descriptor_for_command(system).model_config()
    try:
        return named_config(model)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--model") from None


def _model_options(command):
    command = click.option("--model", default="large", show_default=True,
                           help="Named model config the checkpoint is for (ignored with --system).")(command)
    return system_option("Take the model config from this descriptor")(command)


@click.group(name="checkpoint", cls=Group)
def checkpoint_group() -> None:
    """Model checkpoints (the MLPerf phase-1 checkpoint and its converted forms)."""


@checkpoint_group.command(name="convert", help=f"Convert SRC to this model's state dict. OUT is written in "
                          f"NVIDIA's {{'model': ...}} layout (what run.init_checkpoint loads); an existing OUT is "
                          f"replaced only when convert wrote it, or with --force. {_SOURCES}")
@click.argument("src", type=click.Path(path_type=Path))
@out_option("The converted checkpoint to write (OUT).", required=True, file=True, positional_alias=True)
@_model_options
@click.option("--force", is_flag=True, help="Replace OUT even when it is a file that convert did not write.")
def convert(src: Path, out: Path, system: str | None, model: str, force: bool) -> None:
    from bert.checkpoint import convert as run_convert
    from bert.checkpoint_files import CheckpointError

    try:
        fit = run_convert(src, out, _config(system, model), force)
    except CheckpointError as e:
        raise click.ClickException(str(e)) from None
    from bert.prep.official_files import checkpoint_verdict

    click.echo(f"wrote {out}: {len(fit.state)} tensors from {fit.naming} names "
               f"({len(fit.ignored)} non-parameters skipped)")
    click.echo(checkpoint_verdict(out).line("phase-1 checkpoint"))
    if fit.unexpected:
        click.echo(f"warning: {len(fit.unexpected)} tensor(s) of {src} have no place in the model and were "
                   f"left out: {', '.join(fit.unexpected[:5])}", err=True)


@checkpoint_group.command(name="inspect", help=f"List the tensors of FILE and which model parameters are missing "
                          f"or unexpected. {_SOURCES.replace('SRC', 'FILE')}")
@click.argument("file", type=click.Path(path_type=Path))
@_model_options
def inspect(file: Path, system: str | None, model: str) -> None:
    from bert.checkpoint import describe, map_to_model, model_shapes
    from bert.checkpoint_files import CheckpointError, read_source

    config = _config(system, model)
    try:
        source = read_source(file)
    except CheckpointError as e:
        raise click.ClickException(str(e)) from None
    fit = map_to_model(source, config, model_shapes(config))
    for line in describe(source, fit):
        click.echo(line)
    if not fit.fits:
        raise SystemExit(1)


COMMANDS = [checkpoint_group]
