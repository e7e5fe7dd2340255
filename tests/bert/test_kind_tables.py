"""Tables of kinds (bert.kind_tables): a table that is not its Literal's values fails where it is declared, and a
deferred function imports its module only when called, so that reading a descriptor or sealing a log never waits
for torch."""

import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

import pytest

from bert.kind_tables import deferred, kind_table, kinds_where


@dataclass(frozen=True)
class _Kind:
    name: str
    closed_division: bool = True


def test_a_table_is_its_literals_values_in_order():
    table = kind_table(Literal["a", "b"], [_Kind("a"), _Kind("b", False)], "here.py")
    assert list(table) == ["a", "b"] and [k.name for k in kinds_where(table, lambda k: k.closed_division)] == ["a"]


@pytest.mark.parametrize("names", [["a"], ["a", "b", "c"], ["b", "a"], ["a", "a"]])
def test_a_table_that_is_not_its_literal_fails_naming_both(names):
    with pytest.raises(TypeError, match=r"here.py: the kinds .* are not the Literal's values \['a', 'b'\]"):
        kind_table(Literal["a", "b"], [_Kind(name) for name in names], "here.py")


def test_a_deferred_function_is_imported_when_called():
    code = ("import sys; from bert.kind_tables import deferred; join = deferred('shlex', 'join'); "
            "assert 'shlex' not in sys.modules; assert join(['a', 'b c']) == \"a 'b c'\"; print(join.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "shlex.join"
    assert deferred("math", "hypot")(3, 4) == 5


def test_reading_a_descriptor_and_the_log_module_import_no_torch():
    code = ("import sys; import bert.mllog; from bert.system import load_descriptor; "
            "s = load_descriptor('dgxa100_128x8_adam'); print(s.run.optimizer.kind.title, s.run.clip_kind.name, "
            "'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["AdamW", "bucketwise_before_allreduce", "False"]
