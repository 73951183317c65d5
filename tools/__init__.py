"""Build tools for the repository (not installed with the package): generators of the
shell completions, the man page and the CLI reference. Run ``python tools/generate.py``."""
