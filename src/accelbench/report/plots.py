"""Charts for the summary report: matplotlib Figures drawn with seaborn, axes labelled from report.labels.LABELS.

Figures are built without pyplot, so a notebook shows each once: as its cell's PNG result.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import Markdown
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, ScalarFormatter

from accelbench.analysis import views
from accelbench.analysis.pareto import pareto
from accelbench.config import paths
from accelbench.report.escape import plot_text
from accelbench.report.labels import (
    COST_BASIS,
    LABELS,
    NOT_MEASURED,
    NOTHING,
    PRICE_KIND,
)

ECDF_POINTS = 201
STAT_STYLE = {"p50": dict(linestyle="-", marker="o"), "p99": dict(linestyle="--", marker="s")}


class Chart(Figure):
    """A Figure that IPython displays as a PNG whatever the matplotlib backend (none is needed)."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()


def _figure(panels: int, width_in: float = 6.0, height_in: float = 4.2, per_row: int = 3) -> tuple[Chart, list]:
    rows, cols = -(-panels // per_row), min(panels, per_row)
    fig = Chart(figsize=(width_in * cols, height_in * rows), dpi=100, layout="constrained")
    with sns.axes_style("whitegrid"):
        axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax in axes[panels:]:
        ax.remove()
    return fig, axes[:panels]


def _levels_axis(ax, values: pd.Series) -> None:
    """Log-2 x axis with the measured levels as ticks (levels double; a linear axis crowds the low ones)."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(values.unique()))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter("")


def _with_ci(ax, df: pd.DataFrame, x: str, metric: str, label: str, color, **style) -> None:
    """Medians over repetitions with their 95% bootstrap CI as error bars (none with one repetition, or for
    a metric without a CI)."""
    d = df.sort_values(x)
    y = d[metric].to_numpy(float)
    if f"{metric}_ci_low" not in d:
        ax.plot(d[x], y, label=label, color=color, **style)
        return
    err = np.vstack([y - d[f"{metric}_ci_low"].to_numpy(float), d[f"{metric}_ci_high"].to_numpy(float) - y])
    err = np.where(np.isfinite(err), np.clip(err, 0, None), np.nan)  # NaN: no bar drawn
    ax.errorbar(d[x], y, yerr=err, label=label, color=color, capsize=4, **style)


def _colors(df: pd.DataFrame) -> dict:
    return dict(zip(df["run_label"].unique(), sns.color_palette(n_colors=df["run_label"].nunique())))


def _by_run(ax, df: pd.DataFrame, x: str, metrics: dict[str, str]) -> None:
    """One line per run and metric; `metrics` maps a column to the statistic named in the legend."""
    colors = _colors(df)
    for run_label, g in df.groupby("run_label", sort=False):
        for m, stat in metrics.items():
            style = STAT_STYLE.get(stat, dict(marker="o"))
            _with_ci(ax, g, x, m, f"{run_label}, {stat}", colors[run_label], **style)
    ax.legend(title="Run, statistic (bars: 95% CI)", fontsize="small")


NO_LEVELS = {"concurrency": "No closed-loop (concurrency) levels in these runs.",
             "rate": "No open-loop (request-rate) levels in these runs."}


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """df with its run labels (read from run folders) as matplotlib shows text as it is (escape.plot_text)."""
    return df.assign(run_label=df["run_label"].map(plot_text)) if "run_label" in df else df


def _levels_of(df: pd.DataFrame, kind: str) -> pd.DataFrame | Markdown:
    """The rows of one level kind, or the message saying why there is nothing to chart."""
    if df.empty:
        return Markdown(NOTHING)
    rows = _plain(df[df["level_kind"] == kind])
    return rows if not rows.empty else Markdown(NO_LEVELS[kind])


def _closed_loop(output_dir: Path | str) -> pd.DataFrame | Markdown:
    return _levels_of(views.summary(output_dir), "concurrency")


def latency_vs_concurrency(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """TTFT and ITL p50/p99 per run against concurrency, with 95% CIs over repetitions."""
    closed = _closed_loop(output_dir)
    if isinstance(closed, Markdown):
        return closed
    fig, axes = _figure(2)
    for ax, q, name in zip(axes, ("ttft", "itl"), ("Time to first token", "Inter-token latency")):
        _by_run(ax, closed, "level_value", {f"{q}_p50_ms": "p50", f"{q}_p99_ms": "p99"})
        _levels_axis(ax, closed["level_value"])
        ax.set(title=f"{name} vs concurrency", xlabel=LABELS["concurrency"], ylabel=f"{q.upper()} (ms)")
    return fig


def ttft_distributions(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """ECDF of every measured request's TTFT, one curve per level, one panel per run. Each curve is drawn
    through its quantiles at every half percent (ECDF_POINTS of them) of all the level's measured requests:
    a level of thousands of requests draws as cheaply as a small one, with no visible difference."""
    req = views.measured_requests(output_dir)
    if req.empty:
        return Markdown(NOTHING)
    req = _plain(req[req["measured"] & req["error"].isna()])
    fig, axes = _figure(req["run_label"].nunique())
    share = np.linspace(0, 1, ECDF_POINTS)
    for ax, (run_label, g) in zip(axes, req.groupby("run_label", sort=False)):
        for level, lv in g.groupby("level", sort=False):
            ax.plot(np.quantile(lv["ttft_ms"].to_numpy(float), share), share, drawstyle="steps-post", label=level)
        ax.legend(title=LABELS["level"])
        if g["ttft_ms"].max() > 20 * g["ttft_ms"].min():
            ax.set_xscale("log")
        else:
            ax.ticklabel_format(axis="x", useOffset=False)  # ms as they are, not as an offset from one
        ax.set(title=f"TTFT distribution per level: {run_label}", xlabel=LABELS["ttft_ms"],
               ylabel="Share of measured requests")
    return fig


def throughput_vs_concurrency(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """Output tokens/s per run against concurrency, with 95% CIs over repetitions."""
    closed = _closed_loop(output_dir)
    if isinstance(closed, Markdown):
        return closed
    fig, (ax,) = _figure(1, width_in=7.0)
    _by_run(ax, closed, "level_value", {"output_tok_per_s": "median"})
    _levels_axis(ax, closed["level_value"])
    ax.set(title="Output throughput vs concurrency", xlabel=LABELS["concurrency"],
           ylabel=LABELS["output_tok_per_s"])
    return fig


def throughput_vs_rate(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """Open loop: output tokens/s against the offered rate, and achieved against offered request rate."""
    opened = _levels_of(views.summary(output_dir), "rate")
    if isinstance(opened, Markdown):
        return opened
    fig, (left, right) = _figure(2)
    _by_run(left, opened, "level_value", {"output_tok_per_s": "median"})
    _levels_axis(left, opened["level_value"])
    left.set(title="Output throughput vs offered request rate", xlabel=LABELS["rate_per_s"],
             ylabel=LABELS["output_tok_per_s"])
    colors = _colors(opened)
    for run_label, g in opened.groupby("run_label", sort=False):
        right.plot(g["offered_rate_per_s"], g["achieved_rate_per_s"], marker="o", color=colors[run_label],
                   label=run_label)
        sat = g[g["saturated"]]
        if not sat.empty:
            right.scatter(sat["offered_rate_per_s"], sat["achieved_rate_per_s"], s=160, facecolors="none",
                          edgecolors="red", linewidths=1.5, zorder=3, label=f"{run_label}: saturated")
    top = float(np.nanmax(opened[["offered_rate_per_s", "achieved_rate_per_s"]].to_numpy(float))) * 1.1
    right.plot([0, top], [0, top], color="grey", linestyle=":", label="achieved = offered")
    right.set(title="Achieved vs offered request rate", xlabel=LABELS["offered_rate_per_s"],
              ylabel=LABELS["achieved_rate_per_s"], xlim=(0, top), ylim=(0, top))
    right.legend(fontsize="small")
    return fig


def _log_ticks(axis) -> None:
    """Log scale with plain numbers at 1, 2 and 5 times each power of ten (not 2x10^2)."""
    if axis.axis_name == "x":
        axis.axes.set_xscale("log")
    else:
        axis.axes.set_yscale("log")
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: (f"{v:,.0f}" if v >= 1 else f"{v:g}")
                                           if f"{v:.0e}"[0] in "25" else ""))


def _short_level(kind: str, value: float) -> str:
    return f"c{value:g}" if kind == "concurrency" else f"{value:g}/s"


def pareto_frontier(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """Output tokens/s per user against per accelerator, every level of every run; each run's frontier
    (analysis.pareto.pareto_front) drawn as a line, its points filled and labelled, dominated points as crosses."""
    pf = pareto(output_dir)
    if pf.empty:
        return Markdown(NOTHING)
    pf = _plain(pf)
    colors = _colors(pf)
    run, point = LABELS["run_label"], LABELS["point"]
    pf = pf.assign(**{point: np.where(pf["on_frontier"], "on the frontier", "dominated"), run: pf["run_label"]})
    fig, (ax,) = _figure(1, width_in=9.0, height_in=5.5)
    front = pf[pf["on_frontier"]].sort_values("tok_per_s_per_accelerator")
    sns.lineplot(data=front, x="tok_per_s_per_accelerator", y="tok_per_s_per_user", hue=run, palette=colors,
                 estimator=None, sort=True, legend=False, ax=ax)
    sns.scatterplot(data=pf, x="tok_per_s_per_accelerator", y="tok_per_s_per_user", hue=run, style=point,
                    markers={"on the frontier": "o", "dominated": "X"}, palette=colors, s=70, ax=ax)
    for _, r in front.iterrows():
        ax.annotate(_short_level(r["level_kind"], r["level_value"]),
                    (r["tok_per_s_per_accelerator"], r["tok_per_s_per_user"]), textcoords="offset points",
                    xytext=(4, 4), fontsize="x-small", color=colors[r["run_label"]])
    _log_ticks(ax.xaxis)
    ax.legend(fontsize="small", title="Point labels: cN = concurrency N, N/s = rate")
    ax.set(title="Pareto frontier: per-user speed vs per-accelerator throughput",
           xlabel=LABELS["tok_per_s_per_accelerator"] + " (log scale)", ylabel=LABELS["tok_per_s_per_user"])
    return fig


def cost_vs_concurrency(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """USD per 1M output tokens per run against concurrency (COST_BASIS), with 95% CIs."""
    c = views.costs(output_dir)
    if c.empty:
        return Markdown(NOTHING)
    closed = _plain(c[(c["level_kind"] == "concurrency") & c["usd_per_m_output_tokens"].notna()])
    if closed.empty:
        return Markdown("No priced closed-loop (concurrency) level in these runs.")
    fig, (ax,) = _figure(1, width_in=8.0)
    _by_run(ax, closed, "level_value", {"usd_per_m_output_tokens": "median"})
    _levels_axis(ax, closed["level_value"])
    _log_ticks(ax.yaxis)
    ax.set(title=f"Cost per 1M output tokens vs concurrency ({COST_BASIS}, "
                 f"{PRICE_KIND.replace('_', '-')})",
           xlabel=LABELS["concurrency"], ylabel=LABELS["usd_per_m_output_tokens"] + " (USD, log scale)")
    return fig


def energy_vs_concurrency(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """Joules per output token per run against concurrency, for the runs whose backend measured power."""
    e = views.summary(output_dir)
    if e.empty:
        return Markdown(NOTHING)
    e = _plain(e)
    closed = e[(e["level_kind"] == "concurrency") & e["j_per_output_token"].notna()] \
        if "j_per_output_token" in e else e.iloc[0:0]
    if closed.empty:
        return Markdown(f"Energy was **{NOT_MEASURED}** for every closed-loop level: nothing to chart "
                              "(absent, not zero).")
    fig, (ax,) = _figure(1, width_in=8.0)
    _by_run(ax, closed, "level_value", {"j_per_output_token": "median"})
    _levels_axis(ax, closed["level_value"])
    _log_ticks(ax.yaxis)
    ax.legend(title="Run (no CI: telemetry is a median over repetitions)", fontsize="small")
    missing = sorted(set(e["run_label"]) - set(closed["run_label"]))
    title = "Energy per output token vs concurrency"
    ax.set(title=title + (f"\n(not measured on this backend: {', '.join(missing)})" if missing else ""),
           xlabel=LABELS["concurrency"], ylabel=LABELS["j_per_output_token"].replace("(J)", "(J, log scale)"))
    return fig


def roofline_vs_concurrency(output_dir: Path | str = paths.OUTPUTS_DIR) -> Chart | Markdown:
    """Left: measured ITL p50 against the decode lower bound; right: ITL and throughput efficiency (%)."""
    closed = _levels_of(views.rooflines(output_dir), "concurrency")
    if isinstance(closed, Markdown):
        return closed
    series = {"itl_p50_ms": "measured ITL p50", "decode_bound_ms": "decode lower bound"}
    left = closed.melt(id_vars=["run_label", "level_value"], value_vars=list(series), var_name="series",
                       value_name="ms").replace({"series": series})
    eff = {"itl_efficiency_pct": "ITL: bound / measured", "throughput_efficiency_pct": "throughput: measured / ceiling"}
    right = closed.melt(id_vars=["run_label", "level_value"], value_vars=list(eff), var_name="series",
                        value_name="pct").replace({"series": eff})
    fig, (a, b) = _figure(2, width_in=7.0)
    colors = _colors(closed)
    labels = {"run_label": LABELS["run_label"], "series": LABELS["series"]}
    sns.lineplot(data=left.rename(columns=labels), x="level_value", y="ms", hue=LABELS["run_label"],
                 style=LABELS["series"], markers=True, palette=colors, ax=a)
    sns.lineplot(data=right.rename(columns=labels), x="level_value", y="pct", hue=LABELS["run_label"],
                 style=LABELS["series"], markers=True, palette=colors, ax=b)
    for ax in (a, b):
        _levels_axis(ax, closed["level_value"])
        ax.legend(fontsize="x-small")
    a.set(title="ITL against the memory-bandwidth lower bound", xlabel=LABELS["concurrency"], ylabel="ITL (ms)")
    b.set(title="Roofline efficiency vs concurrency", xlabel=LABELS["concurrency"], ylabel="Efficiency (%)",
          ylim=(0, 105))
    return fig
