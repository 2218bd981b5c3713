"""Record LlamaIndex's SentenceEmbeddingOptimizer on fixed texts, for
tests/it/optimizer_parity.rs.

Run with llama-index-core from PyPI (python -m venv v && v/bin/pip install
llama-index-core), from the repository root:

    v/bin/python scripts/llamaindex_optimizer_fixtures.py tests/fixtures/llamaindex_optimizer

The embedding is a bag of hashed words (16 dimensions, a stable hash), so the test
can look each sentence's vector up in the fixture: it records every text the
optimizer embedded with its vector, the query's vector, and the nodes' texts after
the optimizer (or its error).
"""
import json
import pathlib
import sys
from typing import Any, List

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.postprocessor.optimizer import SentenceEmbeddingOptimizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

DIM = 16


def bag(text: str) -> List[float]:
    v = [0.0] * DIM
    word = ""
    for ch in text.lower() + " ":
        if ch.isalnum():
            word += ch
        elif word:
            h = 0
            for b in word.encode("utf-8"):
                h = (h * 31 + b) % 1000003
            v[h % DIM] += 1.0
            word = ""
    v[DIM - 1] += 0.5  # never the zero vector
    return v


class Bag(BaseEmbedding):
    seen: dict = {}

    def _get_query_embedding(self, query: str) -> List[float]:
        return bag(query)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return bag(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        self.seen[text] = bag(text)
        return bag(text)

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return [self._get_text_embedding(t) for t in texts]


TEXTS = [
    "The wasysym package provides many symbols. It was written by Axel Kielhorn. "
    "Astronomical symbols such as the sun and the moon are included. Mr. Smith uses "
    "the package for his thesis. Electrical symbols are in a table of their own. "
    "The fonts are by Roland Waldi. Version 2.0 of the fonts is needed.",
    "Debian is a free operating system. Its name comes from Debra and Ian Murdock. "
    "It is pronounced Deb-ee-en. Releases are named after Toy Story characters.",
    "A single sentence about integrals in Maxima.",
    "Use apt-mark hold to keep a package at its version (e.g. for a driver). "
    "Undo it with apt-mark unhold. The hold survives upgrades. See apt-mark(8) for "
    "more. Pinning is another way: see apt_preferences(5).",
]

CASES = [
    {"name": "percentile_half", "percentile_cutoff": 0.5},
    {"name": "percentile_low", "percentile_cutoff": 0.2},
    {"name": "threshold", "threshold_cutoff": 0.45},
    {"name": "both", "percentile_cutoff": 0.6, "threshold_cutoff": 0.3},
    {"name": "context_0", "percentile_cutoff": 0.5, "context_before": 0, "context_after": 0},
    {"name": "context_2", "percentile_cutoff": 0.3, "context_before": 2, "context_after": 2},
    {"name": "zero_kept", "threshold_cutoff": 0.999},
]

QUERIES = [
    "Who made the wasy fonts and which version is needed?",
    "How do I keep apt from upgrading one package?",
]


def run(case: dict, query: str) -> dict:
    emb = Bag()
    emb.seen = {}
    kw = {k: v for k, v in case.items() if k != "name"}
    opt = SentenceEmbeddingOptimizer(embed_model=emb, **kw)
    nodes = [NodeWithScore(node=TextNode(text=t, id_=str(i)), score=1.0) for i, t in enumerate(TEXTS)]
    out: Any
    try:
        got = opt.postprocess_nodes(nodes, QueryBundle(query_str=query))
        out = {"texts": [n.node.get_content() for n in got]}
    except ValueError as e:
        out = {"error": str(e)}
    return {"query": query, "query_embedding": bag(query), "embedded": emb.seen, **out}


def main(out_dir: str) -> None:
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        fx = {"case": case, "texts": TEXTS, "runs": [run(case, q) for q in QUERIES]}
        (out / f"{case['name']}.json").write_text(json.dumps(fx, ensure_ascii=False, indent=1))
        print(case["name"], [r.get("error") or len(r["texts"]) for r in fx["runs"]])


if __name__ == "__main__":
    main(sys.argv[1])
