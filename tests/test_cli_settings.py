"""The command line's SeaKR settings: ``--rules``, ``--preset``, the dataset's own exemplars, and the options that
build the config, read as ``SeaKRConfig`` reads them (no model is loaded)."""

import pytest

from seakr_integrations.cli import build_parser
from seakr_integrations.cli.config_options import seakr_config
from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import DEFAULT_RULES, TokenCascade


def config_of(*argv: str) -> SeaKRConfig:
    return seakr_config(build_parser().parse_args(["eval", *argv]))


def test_nothing_given_is_the_shipped_default():
    assert config_of() == SeaKRConfig()
    assert config_of("--dataset", "data/whatever.jsonl") == SeaKRConfig()


@pytest.mark.parametrize(
    ("dataset", "style"),
    [
        ("hotpotqa", "hotpotqa"),
        ("2wiki", "2wiki"),
        ("data/2wiki_dev.jsonl", "2wiki"),
        ("/tmp/2wiki_dev_fold1.jsonl", "2wiki"),
        ("data/HotpotQA_dev.jsonl", "hotpotqa"),
        ("nq_open", None),
        ("mine.jsonl", None),
    ],
)
def test_a_hotpotqa_or_2wiki_file_brings_its_own_exemplars(dataset, style):
    assert config_of("--dataset", dataset).exemplar_style == style
    assert config_of("--dataset", dataset, "--style", "simple").exemplar_style == "simple"  # --style wins


def test_the_rules_and_the_papers_ablations_are_settings():
    assert config_of("--rules", "paper") == SeaKRConfig.paper()
    without = config_of("--rules", "default,-claim-check")
    assert [r.name for r in without.rules] == [r.name for r in DEFAULT_RULES if r.name != "claim-check"]
    assert config_of("--retrieve", "always", "--rules", "paper").retrieve == "always"
    assert config_of("--final-strategy", "knowledge").final_strategy == "knowledge"
    assert config_of("--max-docs", "3").max_docs == 3
    with pytest.raises(ValueError, match="did you mean 'claim-check'"):
        config_of("--rules", "default,-claim-chek")


def test_the_cascade_band_goes_to_the_token_cascade_rule():
    banded = config_of("--rules", "default,token-cascade", "--cascade-band", "0.2", "0.9")
    assert TokenCascade(band=(0.2, 0.9)) in banded.rules
    with pytest.raises(ValueError, match="needs the token-cascade rule, which the default preset leaves out"):
        config_of("--cascade-band", "0.2", "0.9")  # the default preset has no cascade
    with pytest.raises(ValueError, match="needs the token-cascade rule, which --rules 'paper' leaves out"):
        config_of("--rules", "paper", "--cascade-band", "0.2", "0.9")


def test_the_light_preset_and_a_setting_changed_on_top():
    assert config_of("--preset", "light") == SeaKRConfig.light()
    assert config_of("--preset", "light", "-k", "6") == SeaKRConfig.light(k=6)
    assert config_of("-k", "6", "--max-tokens", "50") == SeaKRConfig(k=6, max_tokens=50)


def test_a_rules_value_that_starts_with_a_dash_reaches_the_rules(capsys):
    """``--rules -claim-check``, as the help's "-NAME to remove" invites, is a value, not an unknown option: the
    command line reads it and the rules say what to write instead."""
    from seakr_integrations.cli import attach_dash_values, main

    assert attach_dash_values(["ask", "Q?", "--rules", "-claim-check", "-q"]) == [
        "ask",
        "Q?",
        "--rules=-claim-check",
        "-q",
    ]
    assert attach_dash_values(["ask", "Q?", "--rules", "--", "-x"]) == ["ask", "Q?", "--rules", "--", "-x"]
    assert attach_dash_values(["ask", "Q?", "--rules", "--calibrated"]) == ["ask", "Q?", "--rules", "--calibrated"]
    assert main(["ask", "Who?", "--rules", "-claim-check"]) == 2
    err = capsys.readouterr().err
    assert "expected one argument" not in err
    assert "-claim-check removes a rule not given before it; start from the rules it is removed from, e.g." in err
    assert "default,-claim-check" in err


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--model", "smollm2", "--backend", "hf"], "--backend and --model choose a model to load here"),
        (["--dtype", "bfloat16"], "--dtype chooses a model"),
        (["--model=smollm2"], "--model chooses a model"),
    ],
)
def test_an_in_process_models_options_beside_server_are_refused(flags, named, capsys, monkeypatch):
    """With ``--server`` the server's model answers: ``--model``, ``--backend`` or ``--dtype`` given too would be
    dropped without a word, so the command refuses before it sends anything."""
    from seakr_integrations import cli
    from seakr_integrations.backends import remote

    monkeypatch.setattr(remote, "RemoteBackend", lambda *a, **k: pytest.fail("a request was about to be sent"))
    assert cli.main(["ask", "Who?", "--server", "http://127.0.0.1:9", *flags, "-q"]) == 2
    err = capsys.readouterr().err
    assert named in err and "answers with the model it serves" in err


@pytest.mark.parametrize("command", [["ask", "Who?"], ["eval", "--dataset", "hotpotqa", "--limit", "1"]])
def test_a_profile_dir_without_calibrated_is_refused_before_the_model_loads(command, tmp_path, capsys, monkeypatch):
    """``--profile-dir`` is read with ``--calibrated``; without it the run would read other profiles and warn that
    it found none, so the command says to add ``--calibrated`` before any model loads."""
    from seakr_integrations import cli

    monkeypatch.setattr(
        "seakr_integrations.cli.backend.build_backend", lambda args: pytest.fail("the model was about to load")
    )
    assert cli.main([*command, "--profile-dir", str(tmp_path), "-q"]) == 2
    assert f"--profile-dir {tmp_path} is read with --calibrated: add --calibrated" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_search_timeout_that_is_no_number_of_seconds_is_refused_in_the_options_words(value, capsys, monkeypatch):
    from seakr_integrations import cli

    monkeypatch.setattr(
        "seakr_integrations.cli.backend.build_backend", lambda args: pytest.fail("the model was about to load")
    )
    assert cli.main(["ask", "Who?", "--search-timeout", value, "-q"]) == 2
    assert f"--search-timeout {value}: give seconds > 0, or 0 to wait for ever" in capsys.readouterr().err


def test_each_setting_option_is_made_from_its_setting():
    """An option made from a setting takes its default from ``SeaKRConfig()`` (``None`` where ``--preset`` fills
    it in) and its help from the setting's description in the docstring, so neither can drift from the setting."""
    from seakr_integrations.cli.config_options import SETTING_OPTIONS, setting_docs

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["eval"]
    actions = {a.dest: a for a in sub._actions}
    default, docs = SeaKRConfig(), setting_docs()
    for option in SETTING_OPTIONS:
        action = actions[option.dest]
        assert action.option_strings == [option.option]
        assert action.default == (None if option.preset_tuned else getattr(default, option.setting)), option
        assert docs[option.setting] and action.help.startswith(docs[option.setting].rstrip(".")), option


def test_attribute_docs_read_the_attributes_section_on_one_line():
    from seakr_integrations.cli.setting_fields import attribute_docs, option_keywords

    class Settings:
        """Settings.

        Attributes:
            depth: How deep, ``None`` for the
                model's own.
            name: A name.

        Note:
            not an attribute: a later section.
        """

    assert attribute_docs(Settings) == {"depth": "How deep, None for the model's own.", "name": "A name."}
    assert option_keywords(int | None, None, "100%")["help"] == "100%%"  # argparse formats the help with %
    with pytest.raises(TypeError, match="write its option by hand"):
        option_keywords(bool, False, "a flag")
