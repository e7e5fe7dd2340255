"""What every command module shares: the descriptor loader with one-line errors."""

from __future__ import annotations

import click

from bert.system import System, load_system
from bert.typed_config import ConfigError


def load_descriptor(system: str) -> System:
    """The descriptor named or pointed to by `system`; a bad one ends the command with its field-level error."""
    try:
        return load_system(system)
    except ConfigError as e:
        raise click.ClickException(str(e)) from None
