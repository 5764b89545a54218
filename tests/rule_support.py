"""What the rule tests share: a small config, a question, a scripted model that searches once and a way to run it.

The scripted back-end's uncertainty grows with the spread a reply sets (spread 0: the most certain); its greedy
step's token probabilities are 1 except for the words a reply marks ``low`` (0.5).
"""

from __future__ import annotations

import re

from fakes import FakeRetriever, Reply, ScriptedBackend, passage

from seakr_integrations.reasoning import SeaKR, SeaKRConfig

SMALL = {"k": 4, "num_exemplars": 0, "max_tokens": 10, "delta": -6.5}
QUESTION = "Which country is the Eiffel Tower in?"
TOWER = passage("p1", "The Eiffel Tower is in Paris, France.", "Eiffel Tower")
SPREADS = {"text of p1": 0.6, "text of p2": 0.5, "text of p3": 0.9}


def parse(prompt: str) -> tuple[list[str], str]:
    """(context passages, answer so far) of a prompt built without exemplars or chat template."""
    head, _, answer = prompt.rpartition("\nAnswer:")
    return re.findall(r"\[\d+\] (.*)\n", head), answer.strip()


def is_step(config) -> bool:
    return ". " in config.stop


def sampled(backend: ScriptedBackend) -> list[str]:
    """Prompts that were generated with samples."""
    return [p for batch in backend.batches for p, c in batch if c.k > 0]


def final_calls(backend: ScriptedBackend) -> list:
    return [(p, c) for batch in backend.batches for p, c in batch if not is_step(c)]


def eiffel(prompt, config):
    """One uncertain step, then a step per passage (p2 a little more certain than p1), then the answer."""
    context, answer = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is France")
    if not context:
        return Reply("The Eiffel Tower stands in Germany", spread=1.0, low=("Germany",))
    if not answer:
        return Reply(f"It is in France, says {context[-1][-2:]}", spread=SPREADS.get(context[-1], 0.7))
    return Reply("So the answer is France", spread=1.0)


def run(config: SeaKRConfig, respond=eiffel, docs=("p1", "p2", "p3"), question: str = QUESTION):
    backend = ScriptedBackend(respond)
    result = SeaKR(backend, FakeRetriever(default=[passage(d) for d in docs]), config).answer(question)
    return result, backend


def rules_without(name: str) -> str:
    """The ``--rules`` form of the default rules without one."""
    return f"default,-{name}"
