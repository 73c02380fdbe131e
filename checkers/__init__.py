"""Pure functions from a history (pandas DataFrames) to a verdict."""
