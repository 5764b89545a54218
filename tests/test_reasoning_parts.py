"""The pieces of the loop on their own: answer extraction, query building, prompt text, stops, config."""

import math

import pytest
from fakes import CharTokenizer

from seakr_integrations.outputs import Continuation, token_offsets
from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.answer import extract_answer, has_answer, is_unknown
from seakr_integrations.reasoning.calls import check_search_settings
from seakr_integrations.reasoning.exemplars import exemplars
from seakr_integrations.reasoning.prompts import PromptBuilder
from seakr_integrations.reasoning.query import build_query
from seakr_integrations.reasoning.rules import SpacyQueryWords, StepLimit


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("He was born on August 25, 1963. So the answer is August 25, 1963.", "August 25, 1963"),
        ("So the answer is 25 August 1963.", "25 August 1963"),
        ("So the answer is Paris, France.", "Paris"),  # the authors' comma rule, outside dates
        ("So the answer is: yes", "yes"),
        ("The answer is 3.5 million.", "3.5 million"),
        ('Thus the answer is "The Wall".\nQuestion: next', "The Wall"),
        ("It was built by Gustave Eiffel. Gustave Eiffel is the answer.", "Gustave Eiffel"),
        ("I do not know.", None),
        ("So the answer is .", None),
    ],
)
def test_extract_answer_keeps_dates_whole(text, answer):
    assert extract_answer(text) == answer


def test_has_answer_and_unknown():
    assert has_answer("So THE ANSWER IS x") and not has_answer("the answer to it is x")
    assert is_unknown(None) and is_unknown(" ") and is_unknown("Unknown") and not is_unknown("Paris")


def _step(text: str, low: tuple[str, ...] = ()) -> Continuation:
    logprobs = [0.0] * len(text)
    for word in low:
        at = text.index(word)
        logprobs[at : at + len(word)] = [math.log(0.5)] * len(word)
    return Continuation(text, [ord(c) for c in text], logprobs, "stop")


def _query(step, question="Who directed Jaws?", previous=None, **kw):
    tok = CharTokenizer()
    return build_query(step, question, previous, tok.decode, lambda t: tok(t).input_ids, **kw)


def test_query_masks_low_confidence_words_unless_known():
    q = _query(_step("Jaws was directed by Martin Scorsese", low=("Martin", "Scorsese", "Jaws")))
    assert q.text == "Jaws directed" and q.masked == ("Martin", "Scorsese") and not q.fallback
    # a low-confidence word seen in the previous accepted step is kept
    q = _query(_step("He was born in Cincinnati", low=("Cincinnati",)), previous="Spielberg lived in Cincinnati")
    assert q.text == "born Cincinnati"


def test_query_uses_the_last_sentence_and_falls_back_to_the_question():
    q = _query(_step("Jaws is a film. It was directed by someone", low=("someone",)))
    assert q.text == "directed" and "film" not in q.text
    q = _query(_step("It is the", low=("It",)))
    assert q.fallback and q.text == "directed Jaws"
    q = _query(_step(""))
    assert q.fallback and q.text == "directed Jaws"


def test_query_masking_reads_the_offsets_a_server_sent_without_decoding():
    step = _step("Jaws was directed by Martin Scorsese", low=("Martin", "Scorsese", "Jaws"))
    step.offsets = token_offsets(step, CharTokenizer().decode)

    def no_decode(ids):
        raise AssertionError("the offsets were sent: nothing needs decoding")

    q = build_query(step, "Who directed Jaws?", None, no_decode, lambda t: CharTokenizer()(t).input_ids)
    assert q.text == "Jaws directed" and q.masked == ("Martin", "Scorsese")
    assert token_offsets(Continuation("né", [1, 2, 3], [0.0] * 3, "stop"), lambda ids: "né"[: len(ids)]) == [1, 2, 2]


def test_query_is_cut_to_its_last_tokens():
    q = _query(_step("Alpha Beta Gamma Delta"), max_tokens=10)  # char tokens: the last 10 characters
    assert q.text == "amma Delta"


def test_spacy_filter_without_spacy_is_a_clear_error():
    try:
        import spacy  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="the spacy-query-words rule needs spaCy"):
            _query(_step("Jaws was directed by him"), keep_words=SpacyQueryWords().content_words)
    else:
        pytest.skip("spaCy is installed here; the missing-spaCy message cannot be triggered")


def test_prompt_follows_the_paper_format():
    demos = exemplars("hotpotqa", 2)
    build = PromptBuilder(demos)
    prompt = build("Who is Dr. Who?", ["Step one is U.S. based", "Step two"], ["Doc A text", "Doc B"])
    expected = (
        demos[0].render() + "\n\n" + demos[1].render() + "\n\n"
        "Context: [1] Doc A text\n[2] Doc B\n"
        "Answer in the same format as before. \nQuestion: Who is Dr Who?\nAnswer: Step one is US based. Step two."
    )
    assert prompt == expected
    assert PromptBuilder([])("Q?") == "Answer in the same format as before. \nQuestion: Q?\nAnswer: "
    # In a chat template "Answer:" opens the assistant turn, so the model continues its answer.
    chat = PromptBuilder([], chat=lambda user: f"<user>{user}</user>")
    assert chat("Q?") == "<user>Answer in the same format as before. \nQuestion: Q?</user>Answer:"
    assert chat("Q?", ["A step"]) == "<user>Answer in the same format as before. \nQuestion: Q?</user>Answer: A step."


def test_stops_and_config_validation():
    config = SeaKRConfig()
    assert config.stops(has_steps=False, one_sentence=False) == ("\n\n", "\nQuestion:", "\nContext")
    assert config.stops(has_steps=True, one_sentence=True) == ("\n\n", "\nQuestion:", "\nContext", "\n", ". ")
    assert (config.k, config.n_candidates, config.max_steps, config.max_docs, config.delta) == (20, 3, 7, 5, None)
    assert StepLimit(max_steps=2) in config.rules  # the default rules stop after two steps, the paper after seven
    assert config.style == "hotpotqa" and config.with_(mode="single_hop").style == "simple"
    sampling = config.call_sampling(("\n",))
    assert (sampling.k, sampling.top_k, sampling.top_p, sampling.temperature, sampling.stop) == (
        20,
        50,
        0.9,
        1.0,
        ("\n",),
    )
    for bad, message in [
        ({"mode": "loop"}, "multi_hop"),
        ({"estimator": "vibes"}, "eigenscore"),
        ({"n_candidates": 0}, "n_candidates"),
        ({"k": 1}, "at least 2"),
        ({"exemplar_style": "trivia"}, "2wiki"),
        ({"mask_threshold": 2.0}, "probability"),
    ]:
        with pytest.raises(ValueError, match=message):
            SeaKRConfig(**bad)
    with pytest.raises(ValueError, match="answer_without"):  # a constructor argument of SeaKR and the adapters
        check_search_settings(120.0, "ignore")
    with pytest.raises(TypeError, match="on_retrieval_error"):  # no longer a setting of the config
        SeaKRConfig(on_retrieval_error="answer_without")
    with pytest.raises(TypeError, match="chat_answer_prefix"):  # removed: "Answer:" always opens the assistant turn
        SeaKRConfig(chat_answer_prefix=True)


def test_text_pieces_replay_a_generation_token_by_token_and_join_to_its_text():
    from seakr_integrations.outputs import Continuation, text_pieces

    vocab = {1: "Pa", 2: "ris", 4: " is", 5: "\u00e9"}

    def decode(ids):  # like a byte-level tokenizer: an odd run of token 5 is an unfinished character, not shown yet
        text = "".join(vocab[i] for i in ids)
        return text[:-1] if ids.count(5) % 2 else text.replace("\u00e9\u00e9", "\u00e9")

    cont = Continuation("Paris is", [1, 2, 4], [-0.1] * 3, "stop")
    assert text_pieces(cont, decode) == ["Pa", "ris", " is"]
    cut = Continuation("Par", [1, 2], [-0.1] * 2, "stop", stop_reason="is")  # text ends inside a token
    assert "".join(text_pieces(cut, decode)) == "Par" and text_pieces(cut, decode) == ["Pa", "r"]
    assert text_pieces(Continuation("", [], [], "stop"), decode) == [""]
    split = Continuation("Pa\u00e9", [1, 5, 5], [-0.1] * 3, "stop")  # one character over two tokens
    assert text_pieces(split, decode) == ["Pa", "\u00e9"]


def test_text_pieces_cut_at_the_offsets_a_server_sent_without_decoding():
    from seakr_integrations.backends.openai_plain import ServerTokenizer
    from seakr_integrations.outputs import Continuation, text_pieces, token_offsets

    vocab = {1: "Pa", 2: "ris", 4: " is", 5: "\u00e9"}

    def decode(ids):
        text = "".join(vocab[i] for i in ids)
        return text[:-1] if ids.count(5) % 2 else text.replace("\u00e9\u00e9", "\u00e9")

    def unreachable(ids):
        raise AssertionError(f"decode({ids}) called: the offsets were there")

    for text, ids in [("Paris is", [1, 2, 4]), ("Par", [1, 2]), ("Pa\u00e9", [1, 5, 5]), ("", [])]:
        local = Continuation(text, ids, [-0.1] * len(ids), "stop")
        served = Continuation(text, ids, [-0.1] * len(ids), "stop", offsets=token_offsets(local, decode))
        assert text_pieces(served, unreachable) == text_pieces(local, decode)

    class CountingTokenizer(ServerTokenizer):  # a server's tokenizer: each new prefix is one /detokenize request
        asked = 0

        def _ask_text(self, ids, skip_special_tokens):
            CountingTokenizer.asked += 1
            return decode(list(ids))

    tokenizer = CountingTokenizer()
    served = Continuation("Paris is", [1, 2, 4], [-0.1] * 3, "stop", offsets=[2, 5, 8])
    assert text_pieces(served, lambda ids: tokenizer.decode(ids)) == ["Pa", "ris", " is"]
    assert CountingTokenizer.asked == 0
    text_pieces(Continuation("Paris is", [1, 2, 4], [-0.1] * 3, "stop"), lambda ids: tokenizer.decode(ids))
    assert CountingTokenizer.asked == 3
