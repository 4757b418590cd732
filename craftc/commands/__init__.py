"""The subcommands of ``craftc``: one module each, with ``run(args) -> int``.

``craftc.cli`` builds the argument parser and imports a subcommand's module only when
that subcommand runs (its ``COMMANDS`` table is the one place that names them), so
``craftc compile`` never loads what ``diff``, ``import`` or ``run`` need. The package
itself imports nothing.
"""
