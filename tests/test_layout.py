"""experiments/ keeps DESIGN.md's layout: imports run one way, "cli -> reports, training -> sweeps -> config -> paths,
atomic, display", and no module names a task family.

The rules, for every import in experiments/, at module level or inside a function:
- ``paths``, ``atomic``, ``display`` and ``run_metrics`` (the base) import no other module of experiments;
- ``config`` imports only config and the base;
- ``sweeps`` imports only sweeps, config and the base: it runs training through the run function's dotted path and
  never imports ``training`` or ``reports``;
- ``training`` and ``reports`` import their own package, sweeps, config and the base; reports may also import
  training (to count a run's parameters from its config, the module built as the run builds it), training never
  imports reports;
- nothing imports ``cli``, which may import everything;
and no two modules import each other, directly or through others.
"""

import ast
import re
from pathlib import Path

from experiments.paths import REPOSITORY_ROOT

EXPERIMENTS = REPOSITORY_ROOT / "experiments"
BASE = {"paths", "atomic", "display", "run_metrics"}
MAY_IMPORT = {
    "base": {"base"},
    "config": {"config", "base"},
    "sweeps": {"sweeps", "config", "base"},
    "training": {"training", "sweeps", "config", "base"},
    "reports": {"reports", "training", "sweeps", "config", "base"},
    "evaluation": {"evaluation", "training", "sweeps", "config", "base"},
    "cli": {"cli", "reports", "evaluation", "training", "sweeps", "config", "base"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPOSITORY_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(EXPERIMENTS.rglob("*.py"))}


def part_of(module: str) -> str:
    """The package of experiments a module belongs to (the base modules count as one)."""
    first = module.split(".")[1] if module.count(".") else "cli"
    return "base" if first in BASE else first


def imported(module: str) -> set[str]:
    """The modules of experiments that ``module`` imports anywhere in its code."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module
                      for alias in node.names}
    return {name for name in found if name in MODULES and name != module and MODULES[name].name != "__init__.py"}


def test_imports_run_one_way():
    wrong = [f"{module} imports {target}" for module in MODULES for target in sorted(imported(module))
             if part_of(target) not in MAY_IMPORT[part_of(module)]]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph = {module: imported(module) for module in MODULES}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(target == goal or (target not in seen and not seen.add(target) and reaches(target, goal, seen))
                   for target in graph[start])

    cycles = [module for module in MODULES if reaches(module, module, set())]
    assert not cycles, f"modules on an import cycle: {cycles}"


def test_experiments_names_no_task_family():
    family = re.compile(r"formal_languages?|mqar", re.IGNORECASE)
    named = [f"{path.relative_to(REPOSITORY_ROOT)}:{number}: {line.strip()}" for path in MODULES.values()
             for number, line in enumerate(path.read_text().splitlines(), 1) if family.search(line)]
    assert not named, "\n".join(named)
