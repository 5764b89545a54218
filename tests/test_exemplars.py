"""The in-context exemplars: ten per style, the paper's format, clean steps, and no overlap with the dev questions."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from seakr_integrations.reasoning.exemplars import EXEMPLAR_SETS, Exemplar, exemplars

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("SEAKR_DATA_DIR", ROOT / "data"))
DEV_FILES = ("hotpotqa_dev.jsonl", "2wiki_dev.jsonl", "nq_open_dev.jsonl")
RENDERED = re.compile(r"^Question: .+\nAnswer: .*So the answer is .+\.$")

# The main entities of each exemplar (by question): none may occur in a dev question or answer.
ENTITIES: dict[str, tuple[str, ...]] = {
    "Where was the director of film Jaws born?": ("Jaws", "Steven Spielberg", "Cincinnati"),
    "Which film came out first, Casablanca or Citizen Kane?": ("Casablanca", "Citizen Kane"),
    "Who was born first, Albert Einstein or Niels Bohr?": ("Einstein", "Niels Bohr"),
    "Are Federico Fellini and Ingmar Bergman of the same nationality?": ("Fellini", "Ingmar Bergman"),
    "Who is the maternal grandfather of Charles Darwin?": ("Charles Darwin", "Wedgwood"),
    "Which film has the director who died later, Psycho or Lawrence of Arabia?": (
        "Psycho",
        "Lawrence of Arabia",
        "Hitchcock",
        "David Lean",
    ),
    "When did the director of film Metropolis die?": ("Metropolis", "Fritz Lang"),
    "Who is the father-in-law of Prince Philip?": ("Prince Philip", "Elizabeth II", "George VI"),
    "Who died first, Wolfgang Amadeus Mozart or Ludwig van Beethoven?": ("Mozart", "Beethoven"),
    "Are the directors of films Seven Samurai and Tokyo Story from the same country?": (
        "Seven Samurai",
        "Tokyo Story",
        "Kurosawa",
        "Ozu",
    ),
    "The stadium where the Green Bay Packers play is named after which man?": ("Green Bay Packers", "Lambeau"),
    "Which band is older, Pink Floyd or Led Zeppelin?": ("Pink Floyd", "Led Zeppelin"),
    "Are The New Yorker and Vogue both American magazines?": ("New Yorker", "Vogue"),
    "Are Le Monde and The Guardian both French newspapers?": ("Le Monde", "The Guardian"),
    "The author of the novel War and Peace was born on which estate?": ("War and Peace", "Tolstoy", "Yasnaya Polyana"),
    "What is the capital of the country where Angkor Wat is located?": ("Angkor Wat", "Cambodia", "Phnom Penh"),
    "Which company was founded first, Nintendo or Sony?": ("Nintendo", "Sony"),
    "The band whose lead singer is Bono was formed in which city?": ("Bono", "U2", "Dublin"),
    "Which river flows through the capital city of Portugal?": ("Portugal", "Lisbon", "Tagus"),
    "Were Pablo Picasso and Salvador Dali both Spanish painters?": ("Picasso", "Salvador Dali"),
    "who wrote the novel pride and prejudice": ("Pride and Prejudice", "Jane Austen"),
    "what is the capital city of new zealand": ("New Zealand", "Wellington"),
    "who painted the mona lisa": ("Mona Lisa", "Leonardo da Vinci"),
    "when did apollo 11 land on the moon": ("Apollo 11",),
    "who discovered penicillin": ("penicillin", "Alexander Fleming"),
    "what is the largest planet in the solar system": ("Jupiter", "solar system"),
    "how many players does a soccer team have on the field": ("soccer",),
    "who composed the music for the ballet the nutcracker": ("Nutcracker", "Tchaikovsky"),
    "what is the chemical symbol for sodium": ("sodium",),
    "who was the first person to reach the south pole": ("South Pole", "Amundsen"),
}
# Entities of the project's demo questions, kept out of the exemplars as well.
DEMO_ENTITIES = ("Jodorowsky", "Philip Saville")

ALL = [(style, ex) for style, exs in EXEMPLAR_SETS.items() for ex in exs]
IDS = [f"{style}-{i}" for style, exs in EXEMPLAR_SETS.items() for i in range(len(exs))]


def _contains(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text, re.IGNORECASE) is not None


def test_styles_and_sizes():
    assert set(EXEMPLAR_SETS) == {"2wiki", "hotpotqa", "simple"}
    assert all(len(exs) == 10 for exs in EXEMPLAR_SETS.values())


@pytest.mark.parametrize(("style", "ex"), ALL, ids=IDS)
def test_render_format(style: str, ex: Exemplar):
    text = ex.render()
    assert RENDERED.match(text), text
    assert text == f"Question: {ex.question}\nAnswer: {ex.rationale()} So the answer is {ex.answer}."
    assert ex.rationale() == " ".join(ex.steps)
    assert ex.steps, "every exemplar shows at least one reasoning step"
    assert len(ex.steps) == 1 if style == "simple" else 2 <= len(ex.steps) <= 4
    assert not ex.answer.endswith(".") and ex.answer == ex.answer.strip()


@pytest.mark.parametrize(("style", "ex"), ALL, ids=IDS)
def test_steps_are_sentences_without_inner_stops(style: str, ex: Exemplar):
    for step in ex.steps:
        assert step.endswith(".") and step[0].isupper(), step
        assert ". " not in step and step.count(".") == 1, f"inner period would stop the loop early: {step!r}"
    assert ". " not in ex.question and ". " not in ex.answer


def test_render_without_steps():
    assert Exemplar("q", (), "a").render() == "Question: q\nAnswer: So the answer is a."


def test_exemplars_selects_prefix():
    assert exemplars("2wiki") == EXEMPLAR_SETS["2wiki"]
    assert exemplars("hotpotqa", 3) == EXEMPLAR_SETS["hotpotqa"][:3]
    assert exemplars("simple", 0) == ()
    assert exemplars("simple", 10) == EXEMPLAR_SETS["simple"]


def test_unknown_style_lists_known_ones():
    with pytest.raises(ValueError, match="'2wiki'.*'hotpotqa'.*'simple'"):
        exemplars("iirc")


@pytest.mark.parametrize("n", [-1, 11])
def test_bad_count(n: int):
    with pytest.raises(ValueError, match="between 0 and 10"):
        exemplars("2wiki", n)


def test_every_exemplar_has_entities_listed():
    assert {ex.question for _, ex in ALL} == set(ENTITIES)
    for _, ex in ALL:
        text = ex.render()
        assert all(_contains(text, name) for name in ENTITIES[ex.question]), ex.question


def test_no_entity_leaks_from_dev_questions():
    missing = [name for name in DEV_FILES if not (DATA_DIR / name).is_file()]
    if missing:
        pytest.fail(
            f"dev files not found in {DATA_DIR}: {missing}; the repository ships them in data/ "
            "(git checkout data/, or fix SEAKR_DATA_DIR)"
        )
    dev = []
    for name in DEV_FILES:
        for line in (DATA_DIR / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                dev.append(" || ".join([record["question"], *record["answers"]]))
    assert len(dev) >= 900
    questions = {ex.question.lower() for _, ex in ALL}
    leaks = [d for d in dev if d.split(" || ")[0].strip().lower() in questions]
    for entities in ENTITIES.values():
        leaks += [f"{name}: {d}" for name in entities for d in dev if _contains(d, name)]
    assert not leaks, leaks


def test_no_demo_entities():
    for _, ex in ALL:
        assert not any(_contains(ex.render(), name) for name in DEMO_ENTITIES)
