"""The report's methods prose: the definitions every number follows, quoted from the modules that compute
them (core.metrics, analysis.cost, analysis.roofline, the validation's method text), and each run's own
method text."""

from __future__ import annotations

import inspect
from pathlib import Path

from IPython.display import Markdown

from accelbench.analysis import cost, roofline, validation, views
from accelbench.analysis.runs import runs
from accelbench.config import paths
from accelbench.core import metrics, uncertainty
from accelbench.report.escape import md_block, md_text
from accelbench.report.labels import COST_BASIS, PRICE_KIND, PROJECTION


def quote(text: str | None) -> str:
    """A docstring of this package as a Markdown block quote (its Markdown kept); < and > escaped so that
    't<i>' is not read as HTML."""
    text = inspect.cleandoc(text or "").replace("<", "&lt;").replace(">", "&gt;")
    return "\n".join(f"> {line}" for line in text.splitlines())


def quote_literally(text: str | None) -> str:
    """Text read from a run folder as a Markdown block quote that shows exactly its characters."""
    return "\n".join(f"> {line}" for line in md_block(inspect.cleandoc(text or "")).splitlines())


def methods(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """The definitions the numbers follow, quoted from accelbench.core.metrics, and each run's method text."""
    doc = inspect.getdoc(metrics) or ""
    definitions = doc[doc.index("\n- ") + 1:] if "\n- " in doc else doc
    r = runs(output_dir)
    method = "No runs yet: each run records how it ran vLLM in its manifest.json." if r.empty else "\n\n".join(
        f"Runs {md_text(', '.join(g['run_label']))}:\n\n{quote_literally(text)}"
        for text, g in r.groupby("method", sort=False))
    return Markdown(f"""**Definitions** (quoted from `accelbench.core.metrics`):

{definitions}

In this report ITL is vLLM's: every gap between consecutive output chunks, pooled over requests. What AIPerf
calls ITL is TPOT here.

**Repetitions, engine starts and intervals** (quoted from `accelbench.core.uncertainty`):

{quote(uncertainty.__doc__)}

A level is *unstable* when any metric's coefficient of variation exceeds {uncertainty.CV_LIMIT:.0%}.

**Saturation rule** (open-loop levels, `metrics.saturation`):

{quote(metrics.saturation.__doc__)}

**SLO goodput** (`uncertainty.meets_slo`, `metrics.goodput`):

{quote(uncertainty.meets_slo.__doc__)}
>
{quote(metrics.goodput.__doc__)}

**Pareto frontier.** Tokens/s per user = 1000 / TPOT p50 (ms): how fast one request streams once it has
started. Tokens/s per accelerator = output tokens/s / accelerators used. A level is on its run's frontier when
no other level of the run is at least as good on both and better on one (`analysis.pareto.pareto_front`).

**Cost.** {" ".join(f"`{f}`." for f in cost.FORMULAS.values())} Prices: params/instances.yaml, each with its
source and date; basis "{COST_BASIS}" (see Cost efficiency).

**Roofline.** Decode step bytes = `{roofline.DECODE_BYTES}`; prefill FLOPs = `{roofline.PREFILL_FLOPS}`.

**Validation against vLLM's own client** (`accelbench.core.serve_method.METHODS_TEXT`):

{quote(validation.METHODS_TEXT)}

**Labels.** "Measured on" is built from each run's manifest: the accelerator the run saw (NVML names of the
GPUs it was given), the instance class it declares, the vLLM and torch versions recorded, and whether the
weights were vLLM's dummy weights. Figures from the seed documents are always marked "{PROJECTION}".

**How the model was run** (each run's `manifest.json`, field `method`):

{method}
""")


def cost_basis(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """Which basis and price the cost tables use, the formulas, and how each configuration is charged."""
    lines = "\n".join(f"- {md_text(line)}" for line in views.pricings(output_dir)) or "- (no completed runs to price)"
    formulas = "\n".join(f"- `{f}`" for f in cost.FORMULAS.values())
    return Markdown(f"""**Basis shown: "{COST_BASIS}", {PRICE_KIND.replace('_', '-')} prices.** The two bases
(quoted from `accelbench.analysis.cost`):

{quote(cost.__doc__)}

Under either basis the USD per token is the same; the full-instance basis multiplies the throughput by M/N
and charges the whole instance. The cost tables below use "{COST_BASIS}".

{formulas}

How each measured configuration is charged:

{lines}
""")


def roofline_formulas() -> Markdown:
    return Markdown(f"""Lower bounds from params/instances.yaml's bandwidth and peak FLOP/s (`accelbench.analysis.roofline`):

- bytes one decode step reads = `{roofline.DECODE_BYTES}`; decode bound on ITL = those bytes / aggregate memory
  bandwidth
- prefill FLOPs of one prompt = `{roofline.PREFILL_FLOPS}`, where the attention term is `{roofline.ATTENTION_FLOPS}`;
  prefill bound on TTFT = max(FLOPs / aggregate peak dense FLOP/s, active weight bytes / bandwidth)
- efficiency % = bound / measured x 100 (ITL and TTFT, medians of the p50s); throughput efficiency = measured
  output tok/s / (batch / decode bound)

{quote(roofline.__doc__)}
""")
