"""Emission: a checked recipe -> the plan dir the runtime executes (docs/plan-dir.md).

The package imports none of its modules, so that a check needing one renderer (the
budget check renders the stuffed prompt with ``craftc.emit.prompts``) does not pull in
all of emission, whose verl stage files read the checks' verl arithmetic. Import from
the module that defines a name: ``craftc.emit.plan`` (render, write), ``craftc.emit.errors``
(``EmitError``), ``craftc.emit.compile`` (recipe file -> plan files).
"""
