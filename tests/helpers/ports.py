"""A free TCP port on this host, for the rendezvous of ranks and launchers a test starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (the operating system's pick; another process may still take it first)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
