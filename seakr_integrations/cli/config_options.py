"""The options that set SeaKR's settings, and the ``SeaKRConfig`` they build.

An option that sets one setting as it is (``--delta``, ``--max-docs``...) is made from the setting itself
(:data:`SETTING_OPTIONS`): its type, default and description in ``SeaKRConfig``'s or ``SamplingConfig``'s docstring.
The others are written out, each function named for what sets it apart from a plain setting.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from seakr_integrations.cli.model_options import check_server_options
from seakr_integrations.cli.questions import dataset_style
from seakr_integrations.cli.setting_fields import attribute_docs, option_keywords

__all__ = ["SETTING_OPTIONS", "SettingOption", "add_settings_arguments", "calibrated", "seakr_config"]


@dataclass(frozen=True)
class SettingOption:
    """An option made from one ``SeaKRConfig`` setting, which it sets as given."""

    setting: str
    """The setting's name as ``SeaKRConfig`` takes it (the sampling settings flat: ``k``, ``max_tokens``)."""
    flag: str = ""
    """The option's name; default ``--`` and the setting's name with dashes."""
    preset_tuned: bool = False
    """``--preset`` changes the setting: the option's default is ``None``, the chosen preset's value."""

    @property
    def option(self) -> str:
        return self.flag or "--" + self.setting.replace("_", "-")

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments, as argparse names it after the option."""
        return self.option.lstrip("-").replace("-", "_")


SETTING_OPTIONS = (
    SettingOption("mode"),
    SettingOption("k", "-k", preset_tuned=True),
    SettingOption("delta"),
    SettingOption("retrieve"),
    SettingOption("final_strategy"),
    SettingOption("n_candidates", "--candidates"),
    SettingOption("max_steps", preset_tuned=True),
    SettingOption("max_docs"),
    SettingOption("max_tokens", preset_tuned=True),
    SettingOption("min_tokens"),
    SettingOption("layer"),
    SettingOption("source"),
    SettingOption("estimator"),
    SettingOption("seed"),
    SettingOption("num_exemplars", "--exemplars", preset_tuned=True),
)
"""The settings whose option is made from the setting, in the order ``--help`` lists them."""


def add_settings_arguments(p: argparse.ArgumentParser) -> None:
    """Every option that sets SeaKR's settings, and those that read a calibrated delta."""
    add_preset_argument(p)
    add_rule_text_arguments(p)
    add_setting_arguments(p)
    add_style_following_dataset_argument(p)
    add_no_chat_template_flag(p)
    add_calibration_arguments(p)


def add_setting_arguments(p: argparse.ArgumentParser) -> None:
    """The options of :data:`SETTING_OPTIONS`, each made from its setting's type, default and description."""
    from seakr_integrations.reasoning import SeaKRConfig

    default, light = SeaKRConfig(), SeaKRConfig.light()
    hints, docs = setting_types(), setting_docs()
    registry = registry_choices()
    for o in SETTING_OPTIONS:
        value, doc = getattr(default, o.setting), docs[o.setting].rstrip(".")
        if o.preset_tuned:
            described, value = f"{doc} (default {value}; light {getattr(light, o.setting)})", None
        else:
            described = doc + ("" if value is None else f" (default {value})")
        keywords = option_keywords(hints[o.setting], value, described.strip(), registry.get(o.setting))
        p.add_argument(o.option, **keywords)


def setting_types() -> dict[str, Any]:
    """The type of every setting of ``SeaKRConfig``, by the name ``SeaKRConfig`` takes (the sampling ones flat)."""
    from typing import get_type_hints

    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.reasoning import SeaKRConfig

    return {**get_type_hints(SamplingConfig), **get_type_hints(SeaKRConfig)}


def setting_docs() -> dict[str, str]:
    """The description of every setting of ``SeaKRConfig`` (the sampling ones from ``SamplingConfig``'s docstring);
    an empty one for each when docstrings are stripped (``python -OO``)."""
    from collections import defaultdict

    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.reasoning import SeaKRConfig

    return defaultdict(str, {**attribute_docs(SamplingConfig), **attribute_docs(SeaKRConfig)})


def registry_choices() -> dict[str, Sequence[str]]:
    """The choices of the settings typed ``str`` whose values a registry holds instead of a ``Literal``."""
    from seakr_integrations.uncertainty.registry import estimator_names

    return {"estimator": estimator_names()}


def add_preset_argument(p: argparse.ArgumentParser) -> None:
    """``--preset``: which of ``SeaKRConfig``'s constructors the other settings change."""
    from seakr_integrations.reasoning import SeaKRConfig

    d, light = SeaKRConfig(), SeaKRConfig.light()
    p.add_argument(
        "--preset",
        choices=("default", "light"),
        default="default",
        help=f"the sampling preset: default (SeaKRConfig(): k {d.k}, {d.max_tokens} tokens, {d.num_exemplars} "
        f"exemplars) or light (SeaKRConfig.light(): k {light.k}, {light.max_tokens} tokens, {light.num_exemplars} "
        "exemplars); each has its shipped profiles, and both stop after two steps (the step-limit rule). -k, "
        "--max-tokens, --exemplars and --max-steps change one setting of it",
    )


def add_rule_text_arguments(p: argparse.ArgumentParser) -> None:
    """``--rules``, the rules as text (``parse_rules``), and ``--cascade-band``, a parameter of one of them."""
    from seakr_integrations.reasoning.rules import PRESETS, RULES

    p.add_argument(
        "--cascade-band",
        type=float,
        nargs=2,
        metavar=("SURE_AT_OR_BELOW", "UNSURE_ABOVE"),
        default=None,
        help="the token-cascade rule's band on the greedy step's least token probability (1 - min p): outside it "
        "the gate decides without samples (default: the band calibrated with delta; none: every step is sampled)",
    )
    p.add_argument(
        "--rules",
        default=None,
        metavar="RULES",
        help=f"the decision rules, comma-separated: presets ({', '.join(PRESETS)}: none, the authors' SeaKR), rule "
        f"names to add, -NAME to remove (e.g. default,-claim-check). Rules: {', '.join(RULES)} (default: the preset's)",
    )


def add_style_following_dataset_argument(p: argparse.ArgumentParser) -> None:
    """``--style``, whose default, unlike ``exemplar_style``'s, follows ``--dataset`` (:func:`dataset_style`)."""
    from seakr_integrations.params import choices
    from seakr_integrations.reasoning import SeaKRConfig
    from seakr_integrations.reasoning.config import ExemplarStyle

    p.add_argument(
        "--style",
        choices=choices(ExemplarStyle),
        default=SeaKRConfig().exemplar_style,
        help="in-context exemplars (default: the question file's own for HotpotQA and 2Wiki, else hotpotqa; simple "
        "in single-hop mode)",
    )


def add_no_chat_template_flag(p: argparse.ArgumentParser) -> None:
    """``--no-chat-template``: a flag that sets ``chat_template=False`` (left out: ``None``, the tokenizer's)."""
    p.add_argument("--no-chat-template", action="store_true", help="send plain prompts to chat models")


def add_calibration_arguments(p: argparse.ArgumentParser) -> None:
    """``--calibrated`` and ``--profile-dir``: where delta comes from, read when the model is known."""
    p.add_argument(
        "--calibrated",
        action="store_true",
        help="require the delta seakr calibrate saved for this model and settings (in --profile-dir); fail if none",
    )
    p.add_argument("--profile-dir", type=Path, default=None, help="calibration profiles (default <cache>/calibration)")


def seakr_config(args: argparse.Namespace):  # noqa: ANN202 - returns a SeaKRConfig
    """The ``SeaKRConfig`` the options of :func:`add_settings_arguments` describe (validated there).  Without
    ``--style``, a HotpotQA or 2Wiki question file (``--dataset hotpotqa``, ``data/2wiki_dev.jsonl``...) picks its
    own exemplars."""
    from seakr_integrations.reasoning import SeaKRConfig

    check_server_options(args)
    check_profile_dir(args)
    preset = SeaKRConfig.light() if getattr(args, "preset", "default") == "light" else SeaKRConfig()
    rules = chosen_rules(args, preset)
    settings = {o.setting: given_or_preset(args, o, preset) for o in SETTING_OPTIONS}
    return SeaKRConfig(
        **settings,
        exemplar_style=args.style or dataset_style(args),
        chat_template=False if args.no_chat_template else None,
        rules=rules,
    )


def given_or_preset(args: argparse.Namespace, option: SettingOption, preset: Any) -> Any:
    """The value ``option`` was given, or, for a setting the preset tunes and the option left out, the preset's."""
    value = getattr(args, option.dest)
    return getattr(preset, option.setting) if value is None and option.preset_tuned else value


def check_profile_dir(args: argparse.Namespace) -> None:
    """Refuse ``--profile-dir`` without ``--calibrated`` (but for ``seakr calibrate``, which writes there)."""
    if getattr(args, "command", None) != "calibrate" and args.profile_dir is not None and not args.calibrated:
        raise ValueError(
            f"--profile-dir {args.profile_dir} is read with --calibrated: add --calibrated to run on the profile "
            "there (the run then fails if there is none for this model and these settings); without --profile-dir "
            "a run reads <cache>/calibration and the profiles the package ships"
        )


def chosen_rules(args: argparse.Namespace, preset: Any) -> tuple[Any, ...]:
    """The rules ``--rules`` names (default: the preset's), with the ``--cascade-band`` given to the token cascade."""
    from seakr_integrations.reasoning.rules import TokenCascade, parse_rules

    rules = preset.rules if args.rules is None else parse_rules(args.rules)
    if not args.cascade_band:
        return rules
    if not any(isinstance(r, TokenCascade) for r in rules):
        given = (
            f"--rules {args.rules!r}" if args.rules is not None else f"the {getattr(args, 'preset', 'default')} preset"
        )
        raise ValueError(
            f"--cascade-band needs the token-cascade rule, which {given} leaves out: add it "
            "(--rules default,token-cascade), or drop --cascade-band"
        )
    band = tuple(args.cascade_band)
    return tuple(replace(r, band=band) if isinstance(r, TokenCascade) else r for r in rules)


def calibrated(args: argparse.Namespace, backend, config):  # noqa: ANN001, ANN202 - SeaKRConfig in and out
    """``config`` with the saved calibrated delta when ``--calibrated`` was given."""
    if not getattr(args, "calibrated", False):
        return config
    from seakr_integrations.config_resolution import calibrated_config

    return calibrated_config(backend, config, args.profile_dir)
