"""Configuration: params/ schemas and loading, reference figures, project paths."""
