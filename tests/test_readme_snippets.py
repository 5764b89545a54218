"""The README's Python snippets run as written, and the drop-in model classes answer inside ordinary pipelines.

Each ```python block of README.md is executed as a reader would paste it: alone, in a fresh namespace, so a name it
uses but does not define fails here as it would for them.  A block that cannot run in the test says why on its first
line (``# needs: Elasticsearch at $ELASTICSEARCH_URL``) and the test prints that reason; top-level ``await`` runs as
a notebook would run it.  The fast tests compile every block and check that it defines what it uses; the slow ones
load SmolLM2 and run them (the snippets use the light preset, so all of them take a few minutes on two cores).
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import inspect
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
NOT_RUN = re.compile(r"#\s*needs:\s*(?P<reason>\S.*)$")
LOADS_A_MODEL = ("ChatSeaKR(", "SeaKRLLM(", "SeaKR(", "HFBackend(", "VLLMBackend(")


@dataclass(frozen=True)
class Snippet:
    """One ```python block: where it starts in its file and its text."""

    path: Path
    line: int
    code: str

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def not_run_reason(self) -> str | None:
        """Why the test does not run this block (its first line, ``# needs: ...``), or ``None``: it runs."""
        first = self.code.lstrip().splitlines()[0] if self.code.strip() else ""
        match = NOT_RUN.match(first.strip())
        return match["reason"].strip() if match else None

    def compile(self):  # noqa: ANN201 - a code object
        """Compiled as a notebook cell is: top-level ``await`` / ``async for`` allowed."""
        return compile(self.code, self.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)

    def run(self) -> dict:
        """Execute the block in a fresh namespace (a coroutine, from top-level ``await``, is run to its end)."""
        namespace: dict = {"__name__": "__main__"}
        result = eval(self.compile(), namespace)  # noqa: S307 - the README's own code, as a reader would run it
        if inspect.iscoroutine(result):
            asyncio.run(result)
        return namespace


def python_snippets(path: Path) -> list[Snippet]:
    text = path.read_text()
    snippets = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.M | re.S):
        line = text.count("\n", 0, match.start()) + 2  # the block's first code line, 1-based
        snippets.append(Snippet(path, line, match.group(1)))
    return snippets


def undefined_names(code: str) -> set[str]:
    """Names ``code`` reads that it never binds (import, assignment, def, argument...) and that are not builtins.

    Scope-blind on purpose: a snippet is short, and what this catches is a name it uses but never defines at all
    (a ``format_docs`` or ``questions`` taken from elsewhere).
    """
    tree = ast.parse(code)
    bound, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return loaded - bound - set(dir(builtins))


SNIPPETS = python_snippets(README)
RUN = [s for s in SNIPPETS if s.not_run_reason is None]


def test_the_readme_shows_langchain_and_llamaindex_in_python():
    code = "\n".join(s.code for s in SNIPPETS)
    for name in ("ChatSeaKR", "SeaKRChain", "SeaKRLLM", "SeaKRQueryEngine", "SeaKRWorkflow", "SeaKRConfig.light()"):
        assert name in code, f"no README snippet uses {name}"


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_every_snippet_compiles(snippet):
    snippet.compile()


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_every_snippet_defines_what_it_uses(snippet):
    missing = undefined_names(snippet.code)
    assert not missing, f"{snippet.name} uses {sorted(missing)} without defining them: a pasted copy would fail"


def test_each_snippet_runs_in_the_slow_test_or_says_why_not():
    for snippet in SNIPPETS:
        first = snippet.code.lstrip().splitlines()[0].strip() if snippet.code.strip() else ""
        if first.lower().startswith("# needs"):
            assert snippet.not_run_reason, f"{snippet.name}: '# needs:' must say what it needs"
        reason = snippet.not_run_reason
        print(f"{snippet.name}: " + (f"not run here, needs {reason}" if reason else "run by the slow test"))
    assert RUN, "no README snippet is run by the tests"


@pytest.mark.parametrize("snippet", RUN, ids=lambda s: s.name)
def test_snippets_that_load_a_model_use_the_light_preset(snippet):
    if any(call in snippet.code for call in LOADS_A_MODEL):
        assert "SeaKRConfig.light(" in snippet.code, (
            f"{snippet.name} loads a model: use SeaKRConfig.light() (and its k and max_tokens for the model "
            "classes) so that a reader on a CPU, and this test, wait minutes and not hours"
        )


@pytest.mark.slow
@pytest.mark.parametrize("snippet", RUN, ids=lambda s: s.name)
def test_snippet_runs_as_pasted_and_prints_real_answers(snippet, capsys):
    start = time.perf_counter()
    snippet.run()
    seconds = time.perf_counter() - start
    out = capsys.readouterr().out
    with capsys.disabled():
        print(f"\n{snippet.name}: {seconds:.1f} s\n{out}")
    lines = out.splitlines()
    assert lines, f"{snippet.name} printed nothing"
    assert all(line.strip() for line in lines), f"{snippet.name} printed an empty line (an empty answer?):\n{out}"
    assert "Empty Response" not in out, f"{snippet.name}: a LlamaIndex engine answered nothing:\n{out}"


# --------------------------------------------------- the drop-in model classes inside ordinary pipelines (slow)
CONTEXT_PROMPT = "Answer the question using the context.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
CAPITAL = "What is the capital of France?"


def _format_docs(docs) -> str:
    return "\n\n".join(d.page_content for d in docs)


@pytest.mark.slow
def test_completion_model_answers_inside_an_lcel_rag_chain():
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from langchain_seakr import PassageIndexRetriever, SeaKRLLM

    retriever = PassageIndexRetriever.demo(k=3)
    prompt = PromptTemplate.from_template(CONTEXT_PROMPT)
    llm = SeaKRLLM(model="smollm2", k=4, max_tokens=16)
    rag = {"context": retriever | _format_docs, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    answer = rag.invoke(CAPITAL)
    assert answer.strip(), "SeaKRLLM gave an empty answer inside an LCEL chain"
    # the cause it fixes: outside the chat template SmolLM2-Instruct closes its turn at once (greedy: deterministic)
    bare = prompt.format(context=_format_docs(retriever.invoke(CAPITAL)), question=CAPITAL)
    assert SeaKRLLM(model="smollm2", k=4, max_tokens=16, chat_template=False).invoke(bare) == ""


@pytest.mark.slow
def test_chat_model_answers_inside_an_lcel_rag_chain():
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from langchain_seakr import ChatSeaKR, PassageIndexRetriever

    prompt = ChatPromptTemplate.from_template(CONTEXT_PROMPT)
    llm = ChatSeaKR(model="smollm2", k=4, max_tokens=16)
    retriever = PassageIndexRetriever.demo(k=3)
    rag = {"context": retriever | _format_docs, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    assert rag.invoke(CAPITAL).strip(), "ChatSeaKR gave an empty answer inside an LCEL chain"


@pytest.mark.slow
def test_llamaindex_llm_answers_inside_a_retriever_query_engine():
    from llama_index.core.query_engine import RetrieverQueryEngine

    from llamaindex_seakr import PassageRetriever, SeaKRLLM
    from seakr_integrations.demo import demo_index

    llm = SeaKRLLM(backend="hf", model="smollm2", k=4, max_tokens=16)
    engine = RetrieverQueryEngine.from_args(PassageRetriever(demo_index(progress=False), top_k=3), llm=llm)
    response = engine.query(CAPITAL)
    assert response.response and response.response.strip() and response.response != "Empty Response", response
    assert response.source_nodes
