"""The summary report: what notebooks/summary.ipynb and the CLI call. The numbers come from
accelbench.analysis (views, pareto, runs); here they are labelled (labels), tabled from declarative specs
(tables), charted (plots), explained (methods, notes) and rendered to one HTML file (render); every string
read from a run folder enters it as text (escape)."""

from accelbench.report.methods import cost_basis, methods, roofline_formulas
from accelbench.report.notes import overview, price_caveats, validation_notes
from accelbench.report.render import render_report
from accelbench.report.tables import TABLES, table

__all__ = ["TABLES", "cost_basis", "methods", "overview", "price_caveats", "render_report", "roofline_formulas",
           "table", "validation_notes"]
