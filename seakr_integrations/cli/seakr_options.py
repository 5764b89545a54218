"""Every option of a command that runs SeaKR (``ask``, ``eval``, ``calibrate``): what it searches, the model it
runs on, and SeaKR's settings, in the order ``--help`` lists them."""

from __future__ import annotations

import argparse

from seakr_integrations.cli.config_options import add_settings_arguments
from seakr_integrations.cli.model_options import add_model_arguments, add_server_arguments
from seakr_integrations.cli.retriever_options import add_retriever_arguments, add_search_timeout_argument

__all__ = ["add_seakr_arguments"]


def add_seakr_arguments(p: argparse.ArgumentParser) -> None:
    """The options of every command that runs SeaKR: index, model, back-end and SeaKRConfig settings."""
    add_retriever_arguments(p)
    add_search_timeout_argument(p)
    add_model_arguments(p)
    add_server_arguments(p)
    add_settings_arguments(p)
