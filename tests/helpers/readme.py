"""The README's commands as a user runs them: in a fresh copy of the repository (fresh_copy), through bash, one
line at a time. A site folder (MLPERF_BERT_SYSTEMS) holds quick stand-ins for the CPU systems the README names,
cpu_micro with a development target its runs reach after an eval or two and cpu_tiny the same (whose own runs
take minutes), as a site would hold its own descriptors of the same names; everything else is the copy's own."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bert.descriptor_files import SEARCH_PATH_ENV
from bert.system import load_descriptor
from tests.helpers.compliance import MICRO_EVAL
from tests.helpers.repo import REPO, fresh_copy, this_python_env

_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def readme_commands(readme: Path = REPO / "README.md") -> list[str]:
    """Every command line of the README's bash blocks, without its comment."""
    blocks = _BLOCK.findall(readme.read_text())
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


@dataclass(frozen=True)
class ReadmeCheckout:
    root: Path  # the fresh copy, where the commands run
    sites: Path  # the site folder of the stand-ins

    @classmethod
    def make(cls, folder: Path) -> ReadmeCheckout:
        root, sites = fresh_copy(folder / "checkout"), folder / "site_systems"
        for name in ("cpu_micro", "cpu_tiny"):
            load_descriptor("cpu_micro").variant({"eval": MICRO_EVAL, "dataset.dir": str(root / "data" / name)},
                                             name=name).write(sites)
        return cls(root, sites)

    def env(self, **extra: str) -> dict[str, str]:
        env = {**os.environ, **this_python_env(), SEARCH_PATH_ENV: str(self.sites), **extra}
        env.setdefault("OMP_NUM_THREADS", "1")  # one thread per process, as the suite's other subprocesses
        return env

    def run(self, line: str, timeout: float = 600, **extra: str) -> subprocess.CompletedProcess:
        """`line` as typed at a shell prompt in the copy."""
        return subprocess.run(["bash", "-c", line], cwd=self.root, env=self.env(**extra), capture_output=True,
                              text=True, timeout=timeout)
