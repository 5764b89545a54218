"""``NoKnowledgeWithoutPassages``: a loop that kept no passage answers from its rationales alone, one call fewer."""

from fakes import Reply
from rule_support import SMALL, is_step, parse, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import NoKnowledgeWithoutPassages


def certain(prompt, config):
    _, answer = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is France")
    return Reply("So the answer is France" if answer else "The tower is in Paris")  # certain: no retrieval


def test_no_passage_kept_answers_from_the_rationales_alone():
    new, backend = run(SeaKRConfig(**SMALL, rules=(NoKnowledgeWithoutPassages(),)), certain)
    assert new.passages == [] and list(new.finals) == ["rationales"] and new.strategy == "rationales"
    assert len(backend.batches[-1]) == 1 and any("rationales alone" in n for n in new.notes)
    paper, paper_backend = run(SeaKRConfig.paper(**SMALL), certain)
    assert sorted(paper.finals) == ["knowledge", "rationales"] and paper.lm_calls == new.lm_calls + 1
    assert len(paper_backend.batches[-1]) == 2


def test_it_applies_to_the_knowledge_strategy_and_leaves_kept_passages_alone():
    new, _ = run(SeaKRConfig(**SMALL, final_strategy="knowledge", rules=(NoKnowledgeWithoutPassages(),)), certain)
    assert list(new.finals) == ["rationales"]
    searched, _ = run(SeaKRConfig(**SMALL, rules=(NoKnowledgeWithoutPassages(),)))  # eiffel: keeps a passage
    assert sorted(searched.finals) == ["knowledge", "rationales"]
