"""Run folders: the typed run manifest, write-once saving, and reading every run back."""
