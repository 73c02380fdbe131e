"""The control plane: cluster backends, the link proxy mesh, the run loop and the `splitbrain` CLI."""
