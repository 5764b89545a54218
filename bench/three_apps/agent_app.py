"""A LangChain v1 agent on one `seakr serve` server: `ChatOpenAI` answers, `SeaKRMiddleware` decides when to retrieve.

The agent's model is `ChatOpenAI` on the server's OpenAI routes, as any agent reaches a vLLM server; SeaKR judges
through `ChatSeaKR(base_url=...)` on the same server (its self-aware routes), with no torch in the app's venv.  Once
per turn the middleware measures the model's uncertainty about the question: unsure, it searches SeaKR's masked
query and hands the agent the passage after which the model is surest; sure, it retrieves nothing.  The decision
is in the agent's state (`seakr_decision`, `seakr_passages`) and reaches the callbacks as custom events.

Run: `python agent_app.py http://127.0.0.1:8000` (`SEAKR_API_KEY` for a server started with `--api-key`).
"""

from __future__ import annotations

import argparse
import json
import os

from apps_common import QUESTIONS, Decisions, judge
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from langchain_seakr import PassageIndexRetriever, SeaKRMiddleware
from seakr_integrations import SeaKRConfig

SYSTEM = "Answer the question in a few words."


def run(url: str, *, model: str = "smollm2", api_key: str | None = None, config: SeaKRConfig | None = None) -> dict:
    """Ask the agent each of ``QUESTIONS``; its answers, the middleware's decisions and the callback events.

    ``config`` sets SeaKR's sampling and gate (default ``SeaKRConfig.light()``, the CPU preset).
    """
    llm, config = judge(url, api_key, config)
    answering = ChatOpenAI(
        base_url=f"{url}/v1", api_key=api_key or "none", model=model, temperature=0, max_tokens=48, timeout=600
    )
    seakr = SeaKRMiddleware(llm=llm, config=config, retriever=PassageIndexRetriever.demo(k=3))
    agent = create_agent(answering, system_prompt=SYSTEM, middleware=[seakr])
    out = {}
    for kind, question in QUESTIONS.items():
        decisions = Decisions()
        state = agent.invoke({"messages": [("user", question)]}, config={"callbacks": [decisions]})
        decision = state["seakr_decision"]
        out[kind] = {
            "question": question,
            "answer": state["messages"][-1].content,
            "retrieve": decision["retrieve"],
            "explanation": decision["explanation"],
            "kept": [p["metadata"].get("title") for p in state.get("seakr_passages") or []],
            "events": [name for name, _ in decisions.events],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the seakr serve server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", default="smollm2", help="the model name the server serves")
    args = parser.parse_args()
    print(json.dumps(run(args.url, model=args.model, api_key=os.environ.get("SEAKR_API_KEY")), indent=1))


if __name__ == "__main__":
    main()
