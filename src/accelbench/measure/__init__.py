"""Measuring a scenario: the study, the load runner, engines per backend, telemetry, provenance."""
