"""The repository keeps its promises: CI runs the README's test command; packages are typed with explicit API."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_readme_starts_with_main_job_and_test_commands():
    main_job, tests = _readme_commands()[:2]
    assert main_job.startswith('bash scripts/setup-venv.sh && .venv/bin/seakr ask "')
    assert main_job.endswith('?"'), "the main job answers a question on the embedded defaults: no other argument"
    assert tests == "bash scripts/test.sh"


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert _readme_commands()[1] in ci.splitlines()


@pytest.mark.parametrize("package", ["seakr_integrations", "langchain_seakr", "llamaindex_seakr"])
def test_packages_are_typed(package):
    assert (ROOT / package / "py.typed").is_file()


@pytest.mark.parametrize(
    "module",
    [
        "seakr_integrations",
        "seakr_integrations.uncertainty",
        "seakr_integrations.backends",
        "seakr_integrations.backends.hf",
        "seakr_integrations.models",
        "seakr_integrations.params",
        "seakr_integrations.outputs",
        "seakr_integrations.reasoning",
        "seakr_integrations.retrieval",
        "seakr_integrations.retrieval.bm25",
        "seakr_integrations.demo",
        "seakr_integrations.reasoning.trace",
        "seakr_integrations.reasoning.records",
    ],
)
def test_explicit_all_names_exist(module):
    mod = importlib.import_module(module)
    assert mod.__all__ and all(hasattr(mod, name) for name in mod.__all__)


EXPORTING = (
    "seakr_integrations",
    "seakr_integrations.reasoning",
    "seakr_integrations.uncertainty",
    "seakr_integrations.retrieval",
    "seakr_integrations.evaluation",
    "langchain_seakr",
    "llamaindex_seakr",
)
"""The packages whose ``__all__`` is what a user constructs or reads back (helpers are imported from modules)."""


def _user_code() -> str:
    """The Python a user copies: the README, docs/usage.md and the notebooks' code cells."""
    import json

    texts = [(ROOT / "README.md").read_text(), (ROOT / "docs" / "usage.md").read_text()]
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return "\n".join(texts)


@pytest.mark.parametrize("package", EXPORTING)
def test_what_users_import_from_a_package_is_in_its_all(package):
    mod = importlib.import_module(package)
    statements = re.findall(rf"^\s*from {re.escape(package)} import (\([^)]*\)|[^\n]+)", _user_code(), re.M)
    imported = {name for s in statements for name in re.findall(r"\w+", s.split("#")[0])}
    assert imported <= set(mod.__all__), f"{package} does not export {sorted(imported - set(mod.__all__))}"
    assert not [n for n in mod.__all__ if n.startswith("_") and n != "__version__"]


def test_ruff_is_clean():
    import shutil
    import subprocess
    import sys

    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install 'seakr-integrations[dev]')")
    paths = ["seakr_integrations", "langchain_seakr", "llamaindex_seakr", "experiments", "tests", "bench"]
    done = subprocess.run([ruff, "check", *paths], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]


def test_the_wheel_holds_the_library_without_the_lab():
    """``experiments/`` (this project's report, confirmation and decision statistics) imports the library and is
    not packaged; no packaged module imports it."""
    import json

    from setuptools import find_packages

    include = re.search(r"^include = (\[.*\])$", (ROOT / "pyproject.toml").read_text(), re.M)
    packaged = find_packages(ROOT, include=json.loads(include.group(1)))
    assert "seakr_integrations.evaluation" in packaged and not [p for p in packaged if p.startswith("experiments")]
    sources = [
        p for name in ("seakr_integrations", "langchain_seakr", "llamaindex_seakr") for p in (ROOT / name).rglob("*.py")
    ]
    assert [p for p in sources if re.search(r"^\s*(from|import) experiments\b", p.read_text(), re.M)] == []


def test_a_seakr_results_file_in_runs_holds_todays_default_rules():
    """A method's name in ``runs/`` means one configuration: ``seakr.jsonl`` is a run of ``SeaKRConfig()``'s decision
    rules; a run of other rules is named for them (``seakr-paper.jsonl``, ``seakr-rules-0-99.jsonl``).  A header is
    read as it is: one written before the rules were objects has no ``rules`` and is no run of today's rules."""
    from seakr_integrations.evaluation.results import read_results
    from seakr_integrations.reasoning.config import SeaKRConfig

    def decisions(seakr):  # the cascade's band is calibrated with delta: a setting of the model, not of the rules
        rules = [{k: v for k, v in r.items() if k != "band"} for r in seakr.get("rules") or []]
        return {"retrieve": seakr.get("retrieve"), "max_docs": seakr.get("max_docs"), "rules": rules}

    today = decisions(SeaKRConfig().to_dict())
    assert today["rules"]  # the comparison below is never of two empty lists
    paths = sorted([*(ROOT / "runs").rglob("seakr.jsonl"), *(ROOT / "runs").rglob("seakr.jsonl.gz")])
    assert paths, "runs/ holds no seakr.jsonl(.gz): the results page's runs are missing"
    for path in paths:
        seakr = read_results(path)[0]["seakr"]
        assert decisions(seakr) == today, f"{path} holds other rules: rename it for them"
