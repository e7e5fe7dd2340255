"""The floors of bert/, declared once: each module imports only from its own floor or the floors below, and no
two packages import each other (round about or directly). Every import is read from the source with ast, those
inside functions and under TYPE_CHECKING too: a deferred import is still an arrow a reader follows.

A module's floor is that of the longest name in LAYERS that starts it (bert.data.shards: bert.data); a module
no entry names fails the test, so a new one is placed on purpose."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.helpers.repo import REPO

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # What any module may use: typed settings, safe file reads, what the harness owns, signals, the code's
    # identity, MLPerf's own rules and reference convergence points, the installed software.
    ("foundation", ("bert", "bert.typed_config", "bert.regular_files", "bert.ownership", "bert.interrupts",
                    "bert.provenance", "bert.mlperf_rules", "bert.rcp", "bert.software_stack")),
    # The components, each with its settings beside it: none reads the whole descriptor.
    ("components", ("bert.model", "bert.optim", "bert.data", "bert.distributed", "bert.prep",
                    "bert.eval_settings", "bert.step_settings", "bert.search_settings",
                    "bert.performance_settings")),
    # The descriptor composes the components' settings, and the rules between them.
    ("descriptor", ("bert.system", "bert.descriptor_files", "bert.descriptor_fields", "bert.closed_division",
                    "bert.reference_hyperparameters", "bert.search_space")),
    # What reads the whole descriptor: planning a launch, simulating it, the log, a step and its warm-up, the eval.
    ("whole descriptor", ("bert.launch", "bert.simulate", "bert.mllog", "bert.compile_warmup", "bert.step",
                          "bert.numerics", "bert.eval", "bert.checkpoint", "bert.checkpoint_files",
                          "bert.run_progress")),
    ("loop", ("bert.train", "bert.hpo")),
    ("commands", ("bert.cli", "compliance")),
)
SOURCES = ("bert", "compliance")


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(module: str, path: Path) -> set[str]:
    """The modules (or the packages) that `module`, in file `path`, imports, relative imports resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            names.add(".".join(base + ([node.module] if node.module else [])))
    return names


def import_arrows(root: Path, sources: Iterable[str] = SOURCES) -> dict[str, set[str]]:
    """Each module of the `sources` packages under `root` -> the names it imports from those packages."""
    arrows = {}
    for source in sources:
        for path in sorted((root / source).rglob("*.py")):
            module = module_name(root, path)
            arrows[module] = {name for name in imported_names(module, path)
                              if name.split(".")[0] in sources and name != module}
    return arrows


def floor_of(module: str, layers=LAYERS) -> int:
    """The index in `layers` of the longest entry naming `module` or a package above it; -1 if none does."""
    best, floor = "", -1
    for index, (_, entries) in enumerate(layers):
        for entry in entries:
            if (module == entry or module.startswith(entry + ".")) and len(entry) > len(best):
                best, floor = entry, index
    return floor


def upward_arrows(arrows: Mapping[str, set[str]], layers=LAYERS) -> list[str]:
    return [f"{module} ({layers[floor_of(module, layers)][0]}) -> {name} ({layers[floor_of(name, layers)][0]})"
            for module, names in sorted(arrows.items()) for name in sorted(names)
            if floor_of(name, layers) > floor_of(module, layers)]


def package_of(module: str) -> str:
    """The node of the package graph: bert's subpackage (bert.data) or top-level module (bert.system), or compliance."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "bert" else parts[0]


def package_cycles(arrows: Mapping[str, set[str]]) -> list[list[str]]:
    """The groups of packages that reach each other through imports (strongly connected components, Tarjan)."""
    graph: dict[str, set[str]] = {}
    for module, names in arrows.items():
        graph.setdefault(package_of(module), set()).update(
            package_of(name) for name in names if package_of(name) != package_of(module))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_every_module_of_bert_and_compliance_has_a_floor():
    assert [module for module in import_arrows(REPO) if floor_of(module) < 0] == []


def test_no_module_imports_from_a_floor_above_its_own():
    assert upward_arrows(import_arrows(REPO)) == []


def test_no_two_packages_import_each_other():
    assert package_cycles(import_arrows(REPO)) == []


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_tool_finds_an_upward_arrow_and_a_cycle_in_deferred_and_relative_imports(tmp_path):
    root = _tree(tmp_path, {
        "bert/__init__.py": "",
        "bert/system.py": "def load():\n    from bert.train import run\n",
        "bert/data/__init__.py": "",
        "bert/data/dataset.py": "from ..system import load\nfrom . import shards\n",
        "bert/data/shards.py": "import bert.prep.reshard\n",
        "bert/prep/reshard.py": "from bert.data import shards\n",
        "bert/train.py": "from bert.data.dataset import load\n",
    })
    layers = (("components", ("bert", "bert.data", "bert.prep")), ("descriptor", ("bert.system",)),
              ("loop", ("bert.train",)))
    arrows = import_arrows(root, ("bert",))
    assert arrows["bert.data.dataset"] == {"bert.system", "bert.data"}
    assert upward_arrows(arrows, layers) == [
        "bert.data.dataset (components) -> bert.system (descriptor)",
        "bert.system (descriptor) -> bert.train (loop)"]
    assert package_cycles(arrows) == [["bert.data", "bert.prep", "bert.system", "bert.train"]]
    del arrows["bert.system"]  # no way back from the loop to the data: only the pair of packages is left
    assert package_cycles(arrows) == [["bert.data", "bert.prep"]]
