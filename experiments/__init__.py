"""This project's lab: the report behind ``docs/results.md``, its confirmation section and the decision statistics
read from SeaKR's traces.

They know this project's method names (``seakr``, ``seakr-paper``, ``closed-book``, ``cot``...), its runs and its
targets, so they are kept out of the library: ``experiments`` imports ``seakr_integrations`` and is not part of the
wheel (``pyproject.toml`` packages only ``seakr_integrations``, ``langchain_seakr`` and ``llamaindex_seakr``).  Run
from the repository's root: ``python -m experiments.report RESULTS... --out docs/results.md``.  What any user's runs
need, the method table and paired differences, is the library's ``seakr report``
(``seakr_integrations.evaluation.summary``).
"""
