"""experiments/ keeps DESIGN.md's layout: imports run one way, "cli -> reports, training -> sweeps -> config -> paths,
atomic, display", and experiments/ names no task or model family; benchmarks import no tests.

The rules, for every import in experiments/, at module level or inside a function:
- ``paths``, ``atomic``, ``display``, ``run_metrics`` and ``stop_signals`` (the base) import no other module of
  experiments;
- ``config`` imports only config and the base;
- ``sweeps`` imports only sweeps, config and the base, and ``run_kinds``: the one way from sweeps into training and
  evaluation (a run's function by its kind, imported when the run starts), which themselves import the run store of
  sweeps; sweeps never imports ``training``, ``evaluation`` or ``reports``;
- ``training`` and ``reports`` import their own package, sweeps, config and the base; reports may also import
  training (to count a run's parameters from its config, the module built as the run builds it), training never
  imports reports;
- ``run_kinds`` imports evaluation, training, config and the base;
- nothing imports ``cli``, which may import everything;
and no two modules import each other, directly or through others.

experiments/ reaches the task and model families through their registries (tasks.registry, models.catalog,
models.registry) and the family-neutral modules beside them: it imports no module of a family's folder (tasks/lm/,
models/mamba/, ...), its code holds no family's or model's name, and no module path in a string (the registries are
imports an IDE follows; plug-ins are loaded from names given at run time, by tasks.registry and the sweep's
``--run-function``).
"""

import ast
import importlib.util
import re
from pathlib import Path

from experiments.paths import REPOSITORY_ROOT
from models.catalog import known_backbones
from tasks.registry import TASK_FAMILIES

EXPERIMENTS = REPOSITORY_ROOT / "experiments"
BASE = {"paths", "atomic", "display", "run_metrics", "stop_signals"}
MAY_IMPORT = {
    "base": {"base"},
    "config": {"config", "base"},
    "sweeps": {"sweeps", "run_kinds", "config", "base"},
    "training": {"training", "sweeps", "config", "base"},
    "reports": {"reports", "training", "sweeps", "config", "base"},
    "evaluation": {"evaluation", "training", "sweeps", "config", "base"},
    "run_kinds": {"run_kinds", "evaluation", "training", "config", "base"},
    "cli": {"cli", "run_kinds", "reports", "evaluation", "training", "sweeps", "config", "base"},
}
# The folders of tasks/ and models/: one family each (a family's modules are its own; the registries name them).
FAMILY_FOLDERS = {
    f"{root}.{folder.name}"
    for root in ("tasks", "models")
    for folder in sorted((REPOSITORY_ROOT / root).iterdir())
    if (folder / "__init__.py").exists()
}
# Names of families and models: the task families, the backbones and the model configs (a name as reports cell it).
FAMILY_NAMES = (
    set(TASK_FAMILIES)
    | set(known_backbones())
    | {path.stem for path in (REPOSITORY_ROOT / "configs" / "model").glob("*.yaml")}
    | {name.split(".")[1] for name in FAMILY_FOLDERS}
)
# Strings of experiments/ that may equal a family's or model's name, each with why.
NAMED_ON_PURPOSE = {
    "experiments/reports/params_report.py": "OPEN_QUESTIONS, the parameter report's notes on the paper's counts of "
    "some models and sizes: report text keyed by model, as the paper's "
    "numbers (results/paper/*.csv) are",
}
REPOSITORY_PACKAGES = ("experiments", "tasks", "models", "kernels", "benchmarks", "tests")
MODULE_PATH = re.compile(rf"^({'|'.join(REPOSITORY_PACKAGES)})(\.\w+)+(:\w+)?$|^({'|'.join(REPOSITORY_PACKAGES)}):\w+$")
# Module paths that experiments/ holds as strings on purpose, each with why.
MODULE_PATHS_ON_PURPOSE = {
    ("experiments/sweeps/sweep.py", "experiments.sweeps.hydra_worker"): "the program a SLURM job runs (python -m)",
    ("experiments/run_kinds.py", "experiments.training.train"): (
        "what a local sweep's forkserver imports once for its workers (the sweep itself must not import torch)"
    ),
    ("experiments/sweeps/worker_allocator.py", "experiments.cli"): (
        "the program `train` runs again (python -m) with tcmalloc preloaded"
    ),
}
# Where modules are imported by a name given at run time: the plug-ins, each with what it loads.
DYNAMIC_IMPORTS = {
    "experiments/sweeps/run_execution.py": "a run function named on the sweep's command line (a test's fake)",
    "tasks/registry.py": "the task families of $XLSTM_SUITE_TASK_FAMILIES",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPOSITORY_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(EXPERIMENTS.rglob("*.py"))}


def part_of(module: str) -> str:
    """The package of experiments a module belongs to (the base modules count as one)."""
    first = module.split(".")[1] if module.count(".") else "cli"
    return "base" if first in BASE else first


def imports_of(source: str) -> set[str]:
    """Every module that ``source`` imports, at module level or inside a function, and ``module.name`` for each name
    imported from a module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def imported(module: str) -> set[str]:
    """The modules of experiments that ``module`` imports anywhere in its code."""
    found = imports_of(MODULES[module].read_text())
    return {name for name in found if name in MODULES and name != module and MODULES[name].name != "__init__.py"}


def family_imports(source: str) -> list[str]:
    """The imports in ``source`` of a family's folder (``tasks.lm``, ``models.mamba.block``, ...)."""
    return sorted(
        name
        for name in imports_of(source)
        if any(name == folder or name.startswith(f"{folder}.") for folder in FAMILY_FOLDERS)
    )


def code_strings(source: str) -> list[tuple[int, str]]:
    """The string constants of ``source`` with their lines, docstrings left out."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def named_families(source: str) -> list[str]:
    """``line: 'name'`` for each string of ``source``'s code that is a family's or a model's name."""
    return [f"{line}: {text!r}" for line, text in code_strings(source) if text in FAMILY_NAMES]


def relative(path: Path) -> str:
    return str(path.relative_to(REPOSITORY_ROOT))


def test_imports_run_one_way():
    wrong = [
        f"{module} imports {target}"
        for module in MODULES
        for target in sorted(imported(module))
        if part_of(target) not in MAY_IMPORT[part_of(module)]
    ]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph = {module: imported(module) for module in MODULES}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            target == goal or (target not in seen and not seen.add(target) and reaches(target, goal, seen))
            for target in graph[start]
        )

    cycles = [module for module in MODULES if reaches(module, module, set())]
    assert not cycles, f"modules on an import cycle: {cycles}"


def test_experiments_imports_no_module_of_a_family():
    wrong = [
        f"{relative(path)} imports {name}" for path in MODULES.values() for name in family_imports(path.read_text())
    ]
    assert not wrong, "\n".join(wrong) + "\nask tasks.registry, models.catalog or models.registry instead"


def test_a_planted_import_of_a_family_is_caught_and_the_registries_are_not():
    planted = [
        "import tasks.lm",
        "from tasks.lm.paloma import SOURCES",
        "from tasks import mqar",
        "def load():\n    from models.mamba.block import MambaBackbone",
        "import models.transformers.stack",
    ]
    assert all(family_imports(source) for source in planted)
    allowed = [
        "from tasks.registry import TEXT, task_spec",
        "from tasks.spec import TaskSpec",
        "import models.catalog",
        "from models.registry import build_backbone",
        "from models.chunked_forward import chunked_logits",
    ]
    assert not any(family_imports(source) for source in allowed)


def test_experiments_code_names_no_family_or_model():
    wrong = [
        f"{relative(path)}:{found}"
        for path in MODULES.values()
        if relative(path) not in NAMED_ON_PURPOSE
        for found in named_families(path.read_text())
    ]
    assert not wrong, "\n".join(wrong) + "\nask the registries for names (models.catalog.display_name, ...)"
    assert named_families('MODEL_NAMES = {"llama": "Llama"}') and named_families('if family != "lm": pass')


def test_experiments_comments_and_strings_name_no_task_family():
    family = re.compile(r"formal_languages?|mqar", re.IGNORECASE)
    named = [
        f"{relative(path)}:{number}: {line.strip()}"
        for path in MODULES.values()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if family.search(line)
    ]
    assert not named, "\n".join(named)


def test_no_module_path_in_a_string_of_experiments():
    wrong = [
        f"{relative(path)}:{line}: {text!r}"
        for path in MODULES.values()
        for line, text in code_strings(path.read_text())
        if MODULE_PATH.match(text) and (relative(path), text) not in MODULE_PATHS_ON_PURPOSE
    ]
    assert not wrong, "\n".join(wrong) + "\nimport the module (a registry entry) instead of naming it"


def test_each_module_named_on_purpose_exists():
    """A name that no longer names a module fails late or silently (a forkserver skips a preload it cannot import)."""
    missing = [name for _, name in MODULE_PATHS_ON_PURPOSE if importlib.util.find_spec(name) is None]
    assert not missing, missing


def test_modules_are_imported_by_name_only_where_plug_ins_are_loaded():
    dynamic = re.compile(r"\bimport_module\(|\b__import__\(")
    found = {
        relative(path)
        for root in ("experiments", "tasks", "models")
        for path in (REPOSITORY_ROOT / root).rglob("*.py")
        if dynamic.search(path.read_text())
    }
    assert found <= set(DYNAMIC_IMPORTS), sorted(found - set(DYNAMIC_IMPORTS))


def test_benchmarks_import_no_tests():
    wrong = [
        f"{relative(path)} imports {name}"
        for path in sorted((REPOSITORY_ROOT / "benchmarks").rglob("*.py"))
        for name in sorted(imports_of(path.read_text()))
        if name == "tests" or name.startswith("tests.")
    ]
    assert not wrong, "\n".join(wrong)
