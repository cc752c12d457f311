"""How long `accelbench report` takes on a store of runs: prints the wall time of one render with the
number of runs and level rows it read, and the part of it spent before the notebook (loading the runs
and every analysis once, in this process) so a slow render can be placed.

    python benchmarks/report_render.py                    # the committed outputs/
    python benchmarks/report_render.py --outputs DIR      # any outputs folder

The committed store is copied to a temporary folder first, so the render leaves outputs/ untouched.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from accelbench.config import paths
from accelbench.report import render_report
from accelbench.store import runset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outputs", type=Path, default=paths.OUTPUTS_DIR, help="outputs folder to render")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="accelbench-render-") as tmp:
        outputs = Path(tmp) / "outputs"
        shutil.copytree(paths.results_dir(args.outputs), paths.results_dir(outputs))
        t = time.perf_counter()
        runs = runset.run_set(outputs)
        levels = runs.levels()
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        render_report(outputs)
        render_s = time.perf_counter() - t
    print(f"runs read: {len(runs.manifests)}; level rows: {len(levels)}")
    print(f"loading the run set in this process: {load_s:.2f} s")
    print(f"accelbench report (notebook executed in its own kernel, HTML written): {render_s:.1f} s")


if __name__ == "__main__":
    main()
