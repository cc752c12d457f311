"""Every project path, once. ACCELBENCH_ROOT overrides the root (tests point it at a copy)."""

import os
from pathlib import Path

ROOT = Path(os.environ.get("ACCELBENCH_ROOT", Path(__file__).resolve().parents[3]))
PARAMS_DIR = ROOT / "params"
INSTANCES_FILE = PARAMS_DIR / "instances.yaml"
MODELS_DIR = PARAMS_DIR / "models"
WORKLOADS_DIR = PARAMS_DIR / "workloads"
SCENARIOS_DIR = PARAMS_DIR / "scenarios"
SLO_FILE = PARAMS_DIR / "slos.yaml"
REFERENCE_DIR = PARAMS_DIR / "reference"
NOTEBOOKS_DIR = ROOT / "notebooks"
RUN_NOTEBOOK = NOTEBOOKS_DIR / "run_scenario.ipynb"
SUMMARY_NOTEBOOK = NOTEBOOKS_DIR / "summary.ipynb"
OUTPUTS_DIR = ROOT / "outputs"


def results_dir(outputs_dir: Path = OUTPUTS_DIR) -> Path:
    return Path(outputs_dir) / "results"


def report_dir(outputs_dir: Path = OUTPUTS_DIR) -> Path:
    return Path(outputs_dir) / "report"


def model_cache_dir(outputs_dir: Path = OUTPUTS_DIR) -> Path:
    """Where a model's config.json is written for vLLM's dummy loader (git-ignored)."""
    return Path(outputs_dir) / ".cache" / "models"


def derived_cache_dir(outputs_dir: Path = OUTPUTS_DIR) -> Path:
    """Where tables derived from run folders are kept between renders (git-ignored, safe to delete)."""
    return Path(outputs_dir) / ".cache" / "derived"
