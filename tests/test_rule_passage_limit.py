"""``PassageLimit``: the loop stops once it has kept its number of passages (below the paper's ``max_docs``)."""

from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from rule_support import QUESTION, SMALL, is_step, parse

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.rules import KeepFirstResult, PassageLimit


def never_sure(prompt, config):
    context, _ = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is France")
    return Reply(f"Guess {len(context)} about Germany", spread=5.0, low=("Germany",))


def kept(config):
    retriever = FakeRetriever(default=lambda q: [passage(f"p{len(retriever.queries)}")])
    return SeaKR(ScriptedBackend(never_sure), retriever, config).answer(QUESTION)


def test_the_loop_stops_at_the_rules_limit_and_at_max_docs_without_it():
    result = kept(SeaKRConfig(**SMALL, rules=(KeepFirstResult(), PassageLimit(2))))
    assert len(result.passages) == 2 and result.stop_reason == "passage limit"
    result = kept(SeaKRConfig(**SMALL, max_docs=3, rules=(KeepFirstResult(),)))
    assert len(result.passages) == 3 and result.stop_reason == "passage limit"
    result = kept(SeaKRConfig(**SMALL, max_docs=3, rules=(KeepFirstResult(), PassageLimit(5))))
    assert len(result.passages) == 3  # max_docs still holds
