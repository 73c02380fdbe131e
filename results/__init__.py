"""The run directory format, the archive, the release gate, reports and plots."""
