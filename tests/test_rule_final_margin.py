"""``FinalMargin``: the rationales' answer wins only when it is surer by more than the margin."""

from fakes import Reply
from rule_support import SMALL, eiffel, is_step, parse, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import FinalMargin


def respond(prompt, config):
    context, _ = parse(prompt)
    if is_step(config):
        return eiffel(prompt, config)
    from_steps = bool(context) and context[0].startswith("It is")
    return Reply("So the answer is France" if from_steps else "So the answer is Italy", 0.2 if from_steps else 0.3)


def test_final_margin_keeps_the_knowledge_answer_unless_rationales_are_clearly_less_uncertain():
    paper, _ = run(SeaKRConfig.paper(**SMALL), respond)
    r, k = (paper.finals[s].uncertainty.value for s in ("rationales", "knowledge"))
    assert r < k and paper.strategy == "rationales" and paper.answer == "France"
    wide, _ = run(SeaKRConfig(**SMALL, rules=(FinalMargin((k - r) * 2),)), respond)
    assert wide.strategy == "knowledge" and wide.answer == "Italy"
    narrow, _ = run(SeaKRConfig(**SMALL, rules=(FinalMargin((k - r) / 2),)), respond)
    assert narrow.strategy == "rationales" and narrow.answer == "France"
