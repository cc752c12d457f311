"""Analyses over stored runs: summaries across repetitions, cost, roofline, audit, recommendations."""
