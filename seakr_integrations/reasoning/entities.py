"""Which entities a question or a step names, and whether the kept passages cover them: the facts behind the
entity rules (``ClaimCheck``, ``CoverComparedEntities``, ``AnchorQueries``, ``AnswerWithOption``), since a small
model's confident claims about entities it has not read about are mostly wrong.

Finding names is the one language-specific part, so it is one swappable object (:class:`EntityFinder`); the
default, :class:`EnglishNames`, finds them without a tagger (capitalised runs and quoted titles, "X or Y"), which
suits English text.  Whether a passage covers a name is a word match and works in any language that separates
words with spaces (``docs/design/reasoning.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from seakr_integrations.reasoning.query import STOP_WORDS
from seakr_integrations.retrieval.passage import Passage

_TOKEN = re.compile(r"\(|\)|[\w][\w'’.\-]*|[:–;/&,\"“”]")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
# Lower-case words that sit inside names ("Manon by Massenet" aside): "First for Women", "José Echegaray y Eizaguirre".
_JOINERS = frozenset("of for the de del della di da du des la le y von van der den el al bin".split())
# Words that open a question or sentence with a capital without being part of a name.
_OPENERS = frozenset(
    """who whom whose what which when where why how are is was were did do does has have had can could will would
    the this that these those a an in on at of for from by to as with both either neither so he she it they his her
    its their there here after before during while since although though if because name yes no""".split()
)
_POSSESSIVE = re.compile(r"['’]s$")
_CONNECTORS = frozenset({"or", "and", ",", "nor"})
_WORD = re.compile(r"\w+(?:['’\-]\w+)*")


def _capitalised(token: str) -> bool:
    return token[:1].isupper() or token[:1].isdigit()


def _spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of every capitalised run in ``text``, in order."""
    tokens = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    spans: list[tuple[int, int, str]] = []
    i = 0
    while i < len(tokens):
        start, end, tok = tokens[i]
        if not (tok[:1].isupper() or (tok[:1].isdigit() and spans and spans[-1][1] == start)):
            i += 1
            continue
        j = i
        while True:  # extend over joiners, in-name punctuation and a parenthesised qualifier
            nxt = j + 1
            if nxt < len(tokens) and tokens[nxt][2] == "(":
                close = next((c for c in range(nxt + 1, min(nxt + 6, len(tokens))) if tokens[c][2] == ")"), None)
                if close is not None:
                    j = close
                    continue
            k = nxt
            while k < len(tokens) and (tokens[k][2].lower() in _JOINERS or tokens[k][2] in ":–;/&"):
                k += 1
            if k < len(tokens) and _capitalised(tokens[k][2]) and tokens[k][2] not in "()" and k - nxt <= 2:
                j = k
                continue
            break
        name_start, name_end = tokens[i][0], tokens[j][1]
        words = [t for _, _, t in tokens[i : j + 1]]
        while words and words[0].lower() in _OPENERS and (len(words) == 1 or not _capitalised(words[1])):
            words = words[1:]
        if words and words[0].lower() in _OPENERS and i == 0:
            words = words[1:]
        if words:
            first = next(t for t in tokens[i : j + 1] if t[2] == words[0])
            name_start = first[0]
            name = _POSSESSIVE.sub("", text[name_start:name_end].strip(' .,:;"“”'))
            spans.append((name_start, name_end, name))
        i = j + 1
    return [s for s in spans if s[2] and s[2].lower() not in _OPENERS]


def named_entities(text: str) -> list[str]:
    """The names ``text`` mentions (capitalised runs and quoted titles), in order, without repeats."""
    return list(dict.fromkeys(name for _, _, name in _with_quoted(text) if _content(name)))


def _with_quoted(text: str) -> list[tuple[int, int, str]]:
    """Quoted titles and the capitalised runs outside them, in text order."""
    quoted = [(m.start(), m.end(), m.group(1).strip()) for m in _QUOTED.finditer(text)]
    inside = [s for s in _spans(text) if not any(q[0] <= s[0] < q[1] for q in quoted)]
    return sorted(quoted + inside)


def compared_entities(question: str) -> list[str]:
    """The entities ``question`` compares or joins ("X or Y", "X and Y", "both X and Y"); empty when it names at
    most one side."""
    options = offered_options(question)
    if options:  # "Which film came out first, X or Y?": the two sides are the whole of what follows the comma
        return options
    text = question.strip().rstrip("?").strip()
    spans = _with_quoted(text)
    joined: list[str] = []
    for (_, end, left), (start, _, right) in zip(spans, spans[1:], strict=False):
        between = text[end:start].strip(' "“”').lower().replace(",", " , ").split()
        if between and set(between) <= _CONNECTORS and ({"or", "and"} & set(between)):
            joined += [left, right]
    return list(dict.fromkeys(joined))


def offered_options(question: str) -> list[str]:
    """The two options a question closes on ("Which film came out first, X or Y?"); empty for any other form."""
    tail = re.search(r",\s*([^,]+?)\s+or\s+([^,]+)$", question.strip().rstrip("?").strip())
    return [tail.group(1).strip(' "“”'), tail.group(2).strip(' "“”')] if tail else []


def option_answer(
    options: Sequence[str], answer: str, passages: Sequence[Passage], alternatives: Sequence[str] = ()
) -> str:
    """``answer`` as one of the ``options`` the question offers, when it names neither (``docs/design/reasoning.md``).

    The option whose kept passage names the answer is given; else the first of ``alternatives`` (the other final
    answer) that names one option; else ``answer`` as it is.  A yes/no answer, or a question that offers no options,
    is left alone."""
    if not options or not _content(answer) or answer.strip().lower() in {"yes", "no"}:
        return answer
    if any(_names(answer, o) for o in options):
        return answer
    linked = [o for o in options if any(titled(p, o) and covers(p, answer) for p in passages)]
    if len(linked) == 1:
        return linked[0]
    for alternative in alternatives:
        named = [o for o in options if _content(alternative) and _names(alternative, o)]
        if len(named) == 1:
            return named[0]
    return answer


def _names(answer: str, option: str) -> bool:
    """Whether ``answer`` and ``option`` name the same thing (one's content words within the other's)."""
    a, o = _content(answer), _content(option)
    return bool(a and o) and (a <= o or o <= a)


def _content(name: str) -> set[str]:
    """An entity's content words, lower case (what a covering passage must contain)."""
    words = {w.lower().replace("’", "'") for w in _WORD.findall(name)}
    return {w for w in words if w not in STOP_WORDS} or words


def covers(passage: Passage, entity: str) -> bool:
    """Whether every content word of ``entity`` occurs in ``passage``'s title or text."""
    have = {w.lower().replace("’", "'") for w in _WORD.findall(f"{passage.title} {passage.text}")}
    return _content(entity) <= have


def uncovered(entities: Iterable[str], passages: Sequence[Passage]) -> list[str]:
    """The ``entities`` that no passage covers, in order."""
    return [e for e in entities if not any(covers(p, e) for p in passages)]


def anchor_query(query: str, question: str, missing: Sequence[str]) -> str:
    """``query`` kept on the question: a question entity no passage covers yet, when the query names none of them;
    else the question's content words, when the query shares none with the question."""
    words = {w.lower() for w in _WORD.findall(query)}
    if missing and not any(_content(e) <= words for e in missing):
        return f"{missing[0]} {query}".strip()
    asked = [w for w in _WORD.findall(question) if w.lower() not in STOP_WORDS]
    if asked and not words & {w.lower() for w in asked}:
        return f"{' '.join(asked)} {query}".strip()
    return query


def entity_query(entity: str, question: str, question_names: Sequence[str]) -> str:
    """A search for ``entity`` in the sense the question asks about: the entity and the question's content words
    that are not part of its names (``question_names``): "Cast Up By The Sea film director died earlier"."""
    names = set().union(*map(_content, question_names))
    relation = [w for w in _WORD.findall(question) if w.lower() not in STOP_WORDS and w.lower() not in names]
    return " ".join([entity, *relation]).strip()


_DATE_WORDS = frozenset(
    """january february march april may june july august september october november december monday tuesday wednesday
    thursday friday saturday sunday""".split()
)


def is_date(name: str) -> bool:
    """Whether a name is a date or a number ("September 29", "1948"): it has no page of its own to search for."""
    words = _WORD.findall(name)
    return bool(words) and (words[0].lower() in _DATE_WORDS or all(w.isdigit() for w in words))


def titled(passage: Passage, entity: str) -> bool:
    """Whether ``passage`` is about ``entity``: its title (its opening words, when it has no title) names it, or
    the title is the entity's name without a qualifier ("Binnya U" for "King Binnya U")."""
    if not passage.title:
        return _content(entity) <= _content(" ".join(passage.text.split()[:8]))
    title, name = _content(passage.title), _content(entity)
    return name <= title or (len(title) >= 2 and title <= name)


@runtime_checkable
class EntityFinder(Protocol):
    """Where the entity rules find names: swap it for another language or domain (a tagger, a gazetteer, an
    NER model).  ``name`` identifies it in results files and traces."""

    name: str

    def names(self, text: str) -> list[str]:
        """The names ``text`` mentions, in order, without repeats."""
        ...

    def compared(self, question: str) -> list[str]:
        """The entities ``question`` compares or joins ("X or Y"); empty when it names at most one side."""
        ...

    def options(self, question: str) -> list[str]:
        """The two options a question closes on ("Which came first, X or Y?"); empty for any other form."""
        ...


@dataclass(frozen=True)
class EnglishNames:
    """Names as English writes them: capitalised runs ("Duel in the Jungle") and quoted titles; "X or Y" and
    "X and Y" for what a question compares; ", X or Y?" for the options it closes on.  For a language without
    capitals (Chinese, Japanese, Arabic...) or a domain whose entities are lower case (chemicals, genes), pass
    an ``EntityFinder`` of your own to the entity rules."""

    name: ClassVar[str] = "english"

    def names(self, text: str) -> list[str]:
        return named_entities(text)

    def compared(self, question: str) -> list[str]:
        return compared_entities(question)

    def options(self, question: str) -> list[str]:
        return offered_options(question)


ENGLISH_NAMES = EnglishNames()
"""The default entity finder of every entity rule."""

ENTITY_FINDERS: dict[str, EntityFinder] = {ENGLISH_NAMES.name: ENGLISH_NAMES}
"""The finders a results file can name, by name (``Rule.from_dict`` reads a rule's ``entities`` here): every finder
a rule is given registers itself here (:func:`register_finder`), a user's own included."""


def register_finder(finder: EntityFinder) -> EntityFinder:
    """Register ``finder`` under its ``name`` so that a results file that records it reads back; a ``ValueError``
    when another finder already has that name."""
    known = ENTITY_FINDERS.setdefault(finder.name, finder)
    if known is not finder and known != finder:
        raise ValueError(
            f"two entity finders are named {finder.name!r} ({known!r} and {finder!r}): give yours a name of its own"
        )
    return finder


def entity_finder(name: str) -> EntityFinder:
    """The registered finder named ``name``; a ``ValueError`` naming the registered ones otherwise."""
    finder = ENTITY_FINDERS.get(name)
    if finder is None:
        raise ValueError(
            f"no entity finder is named {name!r} (registered: {', '.join(ENTITY_FINDERS)}); a finder of your own "
            "registers when a rule is given it: build that rule before reading the file"
        )
    return finder
