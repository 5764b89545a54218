"""This project's lab (``experiments/README.md`` indexes it): a report of any runs with its confirmation section, the
decision statistics read from SeaKR's traces, each default rule's evidence, and the first-step gate's signal table.

They know this project's method names (``seakr``, ``seakr-paper``, ``closed-book``, ``cot``...), its runs and its
targets, so they are kept out of the library: ``experiments`` imports ``seakr_integrations`` and is not part of the
wheel (``pyproject.toml`` packages only ``seakr_integrations``, ``langchain_seakr`` and ``llamaindex_seakr``).  Run
from the repository's root: ``python -m experiments.report RESULTS... --out REPORT.md``.  What any user's runs
need, the method table and paired differences, is the library's ``seakr report``
(``seakr_integrations.evaluation.summary``).
"""
