"""The only modules that use another library's private names, one per library.

Each module says what it uses, the public API that would replace it and why that costs
too much, and the library versions it was written for; its test
(tests/test_quarantine.py) fails when the installed version leaves that range, and
tests/test_architecture.py fails when a module outside this package (and
cli/typer_compat.py, Typer's) uses a private name of another library. Each has a
public-API fallback, taken when the private names are missing.
"""
