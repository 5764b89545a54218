"""In-context exemplars for SeaKR's chain-of-thought prompts.

SeaKR prepends ten worked examples to every reasoning prompt, one set per question style (paper Appendix B.4,
SPEC section 7). The authors reuse IRCoT's lists; these are our own, written in the same format::

    Question: {question}
    Answer: {step 1} {step 2} ... So the answer is {answer}.

Style keys:

* ``"2wiki"``: 2WikiMultihopQA-style questions (compositional, comparison, inference and bridge comparison).
* ``"hotpotqa"``: HotpotQA-style questions (bridge and comparison, some answered yes or no).
* ``"simple"``: single-hop factoid questions in the lower-case NaturalQuestions-open style, one step each.

The facts are about famous people, films, places and bands and were checked by hand, so that a small model is not
taught falsehoods. None of the entities occurs in a question or answer of the bundled dev subsets
(``tests/test_exemplars.py`` re-checks this). Each step is one full sentence ending with a period and has no other
period inside, because the reasoning loop stops generation at ``". "``; dates are written whole ("July 20, 1969").
Each multi-hop set renders to about 560 SmolLM2 tokens (the simple set to about 380), so it fits a small context.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EXEMPLAR_SETS", "Exemplar", "exemplars"]


@dataclass(frozen=True)
class Exemplar:
    """One worked question for the in-context prompt.

    Attributes:
        question: The question, as a benchmark of this style would ask it.
        steps: Reasoning sentences, each a full sentence ending with a period; empty for a direct answer.
        answer: The short answer, without a final period (``render`` adds it).
    """

    question: str
    steps: tuple[str, ...]
    answer: str

    def rationale(self) -> str:
        """The reasoning steps joined by single spaces (empty when there are none)."""
        return " ".join(self.steps)

    def render(self) -> str:
        """The exemplar as prompt text: ``"Question: ...\\nAnswer: step1 step2 So the answer is X."``."""
        rationale = self.rationale()
        prefix = f"{rationale} " if rationale else ""
        return f"Question: {self.question}\nAnswer: {prefix}So the answer is {self.answer}."


_TWOWIKI: tuple[Exemplar, ...] = (
    Exemplar(
        "Where was the director of film Jaws born?",
        ("The film Jaws was directed by Steven Spielberg.", "Steven Spielberg was born in Cincinnati, Ohio."),
        "Cincinnati",
    ),
    Exemplar(
        "Which film came out first, Casablanca or Citizen Kane?",
        ("Casablanca was released in 1942.", "Citizen Kane was released in 1941."),
        "Citizen Kane",
    ),
    Exemplar(
        "Who was born first, Albert Einstein or Niels Bohr?",
        ("Albert Einstein was born on March 14, 1879.", "Niels Bohr was born on October 7, 1885."),
        "Albert Einstein",
    ),
    Exemplar(
        "Are Federico Fellini and Ingmar Bergman of the same nationality?",
        ("Federico Fellini was Italian.", "Ingmar Bergman was Swedish."),
        "no",
    ),
    Exemplar(
        "Who is the maternal grandfather of Charles Darwin?",
        (
            "The mother of Charles Darwin was Susannah Wedgwood.",
            "The father of Susannah Wedgwood was the potter Josiah Wedgwood.",
        ),
        "Josiah Wedgwood",
    ),
    Exemplar(
        "Which film has the director who died later, Psycho or Lawrence of Arabia?",
        (
            "Psycho was directed by Alfred Hitchcock, who died on April 29, 1980.",
            "Lawrence of Arabia was directed by David Lean, who died on April 16, 1991.",
        ),
        "Lawrence of Arabia",
    ),
    Exemplar(
        "When did the director of film Metropolis die?",
        ("The film Metropolis was directed by Fritz Lang.", "Fritz Lang died on August 2, 1976."),
        "August 2, 1976",
    ),
    Exemplar(
        "Who is the father-in-law of Prince Philip?",
        (
            "Prince Philip was the husband of Queen Elizabeth II.",
            "The father of Queen Elizabeth II was King George VI.",
        ),
        "George VI",
    ),
    Exemplar(
        "Who died first, Wolfgang Amadeus Mozart or Ludwig van Beethoven?",
        ("Wolfgang Amadeus Mozart died on December 5, 1791.", "Ludwig van Beethoven died on March 26, 1827."),
        "Wolfgang Amadeus Mozart",
    ),
    Exemplar(
        "Are the directors of films Seven Samurai and Tokyo Story from the same country?",
        (
            "Seven Samurai was directed by Akira Kurosawa, who was from Japan.",
            "Tokyo Story was directed by Yasujiro Ozu, who was also from Japan.",
        ),
        "yes",
    ),
)

_HOTPOTQA: tuple[Exemplar, ...] = (
    Exemplar(
        "The stadium where the Green Bay Packers play is named after which man?",
        (
            "The Green Bay Packers play their home games at Lambeau Field.",
            "Lambeau Field is named after Curly Lambeau, a founder and the first coach of the team.",
        ),
        "Curly Lambeau",
    ),
    Exemplar(
        "Which band is older, Pink Floyd or Led Zeppelin?",
        ("Pink Floyd was formed in 1965.", "Led Zeppelin was formed in 1968."),
        "Pink Floyd",
    ),
    Exemplar(
        "Are The New Yorker and Vogue both American magazines?",
        ("The New Yorker is an American magazine founded in 1925.", "Vogue is an American magazine founded in 1892."),
        "yes",
    ),
    Exemplar(
        "Are Le Monde and The Guardian both French newspapers?",
        ("Le Monde is a French newspaper.", "The Guardian is a British newspaper."),
        "no",
    ),
    Exemplar(
        "The author of the novel War and Peace was born on which estate?",
        (
            "The novel War and Peace was written by Leo Tolstoy.",
            "Leo Tolstoy was born at Yasnaya Polyana, his family estate in Russia.",
        ),
        "Yasnaya Polyana",
    ),
    Exemplar(
        "What is the capital of the country where Angkor Wat is located?",
        ("Angkor Wat is a temple complex in Cambodia.", "The capital of Cambodia is Phnom Penh."),
        "Phnom Penh",
    ),
    Exemplar(
        "Which company was founded first, Nintendo or Sony?",
        ("Nintendo was founded in 1889.", "Sony was founded in 1946."),
        "Nintendo",
    ),
    Exemplar(
        "The band whose lead singer is Bono was formed in which city?",
        ("Bono is the lead singer of the rock band U2.", "U2 was formed in Dublin in 1976."),
        "Dublin",
    ),
    Exemplar(
        "Which river flows through the capital city of Portugal?",
        ("The capital city of Portugal is Lisbon.", "Lisbon lies on the estuary of the Tagus River."),
        "the Tagus",
    ),
    Exemplar(
        "Were Pablo Picasso and Salvador Dali both Spanish painters?",
        ("Pablo Picasso was a Spanish painter.", "Salvador Dali was also a Spanish painter."),
        "yes",
    ),
)

_SIMPLE: tuple[Exemplar, ...] = (
    Exemplar(
        "who wrote the novel pride and prejudice",
        ("The novel Pride and Prejudice was written by Jane Austen.",),
        "Jane Austen",
    ),
    Exemplar(
        "what is the capital city of new zealand", ("The capital city of New Zealand is Wellington.",), "Wellington"
    ),
    Exemplar("who painted the mona lisa", ("The Mona Lisa was painted by Leonardo da Vinci.",), "Leonardo da Vinci"),
    Exemplar(
        "when did apollo 11 land on the moon", ("Apollo 11 landed on the Moon on July 20, 1969.",), "July 20, 1969"
    ),
    Exemplar(
        "who discovered penicillin", ("Penicillin was discovered by Alexander Fleming in 1928.",), "Alexander Fleming"
    ),
    Exemplar(
        "what is the largest planet in the solar system",
        ("The largest planet in the solar system is Jupiter.",),
        "Jupiter",
    ),
    Exemplar(
        "how many players does a soccer team have on the field", ("A soccer team has 11 players on the field.",), "11"
    ),
    Exemplar(
        "who composed the music for the ballet the nutcracker",
        ("The music for The Nutcracker was composed by Pyotr Ilyich Tchaikovsky.",),
        "Pyotr Ilyich Tchaikovsky",
    ),
    Exemplar("what is the chemical symbol for sodium", ("The chemical symbol for sodium is Na.",), "Na"),
    Exemplar(
        "who was the first person to reach the south pole",
        ("Roald Amundsen led the first expedition to reach the South Pole, in December 1911.",),
        "Roald Amundsen",
    ),
)

EXEMPLAR_SETS: dict[str, tuple[Exemplar, ...]] = {"2wiki": _TWOWIKI, "hotpotqa": _HOTPOTQA, "simple": _SIMPLE}
"""Exemplar sets by question style; each holds 10 exemplars, the paper's number."""


def exemplars(style: str, n: int | None = None) -> tuple[Exemplar, ...]:
    """The exemplars for one question style.

    Args:
        style: One of the keys of ``EXEMPLAR_SETS`` (``"2wiki"``, ``"hotpotqa"``, ``"simple"``).
        n: How many to return, from the start of the set; ``None`` for all of them.

    Returns:
        The first ``n`` exemplars of the set, in their fixed order.

    Raises:
        ValueError: An unknown style (the message lists the known ones), or ``n`` below 0 or above the set size.
    """
    try:
        chosen = EXEMPLAR_SETS[style]
    except KeyError:
        known = ", ".join(repr(name) for name in EXEMPLAR_SETS)
        raise ValueError(f"unknown exemplar style {style!r}: use one of {known}") from None
    if n is None:
        return chosen
    if not 0 <= n <= len(chosen):
        raise ValueError(f"n must be between 0 and {len(chosen)} for style {style!r}, got {n}")
    return chosen[:n]
