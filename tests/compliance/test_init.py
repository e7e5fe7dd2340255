"""The map of compliance/ (its __init__ docstring) names every module, so that a newcomer finds where a rule or a job
lives; and every module has its mirrored test file, tests/compliance/test_<module>.py."""

import pkgutil
import re

import compliance
from tests.helpers.repo import REPO


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(compliance.__path__))


def test_the_map_names_every_module():
    named = set(re.findall(r"\b[a-z_]+\b", compliance.__doc__))
    assert len(_modules()) > 20
    assert [name for name in _modules() if name not in named] == []


def test_every_module_has_its_mirrored_test_file():
    tests = REPO / "tests" / "compliance"
    assert [name for name in _modules() if not (tests / f"test_{name}.py").is_file()] == []
