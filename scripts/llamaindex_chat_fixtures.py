"""Record LlamaIndex's chat engines, citation query engine and LLM reranker as fixtures.

The same method as ../shared/fixtures/llamaindex/generate.py (llama-index-core 0.14.25,
a scripted completion LLM whose k-th call answers `answer k` unless the case gives its
replies, one token per code point), for what "A real conversation" adds:

- `condense_question`: CondenseQuestionChatEngine over a RetrieverQueryEngine with the
  given response mode and a fixed retriever returning the chunks;
- `condense_plus_context`: CondensePlusContextChatEngine (its CompactAndRefine over
  chat prompts, flattened by the completion LLM's messages_to_prompt), optionally with
  citation nodes and the citation instruction as its system prompt;
- `citation`: CitationQueryEngine (SentenceSplitter re-split into `Source N:` nodes,
  its QA and refine templates) with the given response mode;
- `rerank`: LLMRerank (choice-select prompt, batches, parsing).

Memory is a ChatMemoryBuffer with `token_limit = context_window - 256`, the limit the
engines' `from_defaults` give their memory. (0.14's default `Memory` archives every
message but the newest once the history passes 70% of the limit: its flush loop never
counts what it flushed. ChatMemoryBuffer keeps the newest messages that fit.)

    python scripts/llamaindex_chat_fixtures.py ../shared/fixtures/llamaindex tests/fixtures/llamaindex_chat
"""
import json
import pathlib
import sys
from typing import Any, List

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
)
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.postprocessor import LLMRerank
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import CitationQueryEngine, RetrieverQueryEngine
from llama_index.core.query_engine.citation_query_engine import (
    CITATION_QA_TEMPLATE,
    CITATION_REFINE_TEMPLATE,
)
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

Settings.tokenizer = list  # one token per code point

# Quire's instruction for citing in a condense_plus_context answer, passed as the
# engine's system_prompt (LlamaIndex appends it to the context prompt).
CITE_SYSTEM_PROMPT = (
    "The documents are numbered sources (Source 1, Source 2, ...). When referencing "
    "information from a source, cite the appropriate source(s) using their "
    "corresponding numbers in square brackets, e.g. [1] or [2][3]. Every answer should "
    "include at least one source citation. Only cite a source when you are explicitly "
    "referencing it."
)


class ScriptedLLM(CustomLLM):
    context_window: int = 1000
    num_output: int = 64
    calls: list = []
    replies: list = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output,
                           is_chat_model=False, model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self.calls.append(prompt)
        k = len(self.calls)
        text = self.replies[k - 1] if k <= len(self.replies) else f"answer {k}"
        return CompletionResponse(text=text)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):
        raise NotImplementedError


class FixedRetriever(BaseRetriever):
    def __init__(self, nodes):
        self._nodes = nodes
        self.queries = []
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        self.queries.append(query_bundle.query_str)
        return list(self._nodes)


class CitationNodes(BaseNodePostprocessor):
    """CitationQueryEngine's re-split into `Source N:` nodes, as a postprocessor."""

    chunk_size: int = 512
    chunk_overlap: int = 20

    def _postprocess_nodes(self, nodes, query_bundle=None):
        engine = CitationQueryEngine(retriever=FixedRetriever([]), llm=Settings.llm,
                                     citation_chunk_size=self.chunk_size,
                                     citation_chunk_overlap=self.chunk_overlap)
        return engine._create_citation_nodes(nodes)


def nodes_of(chunks):
    return [NodeWithScore(node=TextNode(text=c, id_=f"n{i}"), score=1.0 - i * 0.1)
            for i, c in enumerate(chunks)]


def history_of(turns):
    return [ChatMessage(role=MessageRole(t["role"]), content=t["content"]) for t in turns]


def run(out, case):
    cw, no = case["context_window"], case["num_output"]
    llm = ScriptedLLM(context_window=cw, num_output=no, calls=[],
                      replies=case.get("replies") or [])
    Settings.llm = llm
    kind = case["kind"]
    retriever = FixedRetriever(nodes_of(case["chunks"]))
    fx = dict(case)
    fx.setdefault("replies", None)
    fx["tokenizer"] = "chars"
    if kind in ("condense_question", "condense_plus_context"):
        memory = ChatMemoryBuffer.from_defaults(chat_history=history_of(case["history"]),
                                                token_limit=cw - 256, llm=llm)
        fx["token_limit"] = cw - 256
        if kind == "condense_question":
            qe = RetrieverQueryEngine.from_args(retriever, llm=llm,
                                                response_mode=case["mode"])
            engine = CondenseQuestionChatEngine.from_defaults(query_engine=qe, memory=memory,
                                                              llm=llm)
        else:
            post = []
            if case.get("cite"):
                post = [CitationNodes(chunk_size=case["citation_chunk_size"],
                                      chunk_overlap=case["citation_chunk_overlap"])]
            engine = CondensePlusContextChatEngine.from_defaults(
                retriever=retriever, llm=llm, memory=memory, node_postprocessors=post,
                system_prompt=CITE_SYSTEM_PROMPT if case.get("cite") else None)
        resp = engine.chat(case["query"])
        fx["expected_prompts"] = list(llm.calls)
        fx["expected_response"] = str(resp.response)
        fx["expected_condensed"] = retriever.queries[0]
        fx["expected_source_texts"] = [n.node.get_content() for n in resp.source_nodes]
    elif kind == "citation":
        synth = get_response_synthesizer(llm=llm, text_qa_template=CITATION_QA_TEMPLATE,
                                         refine_template=CITATION_REFINE_TEMPLATE,
                                         response_mode=case["mode"])
        engine = CitationQueryEngine(retriever=retriever, llm=llm, response_synthesizer=synth,
                                     citation_chunk_size=case["citation_chunk_size"],
                                     citation_chunk_overlap=case["citation_chunk_overlap"])
        resp = engine.query(case["query"])
        fx["expected_prompts"] = list(llm.calls)
        fx["expected_response"] = str(resp.response) if resp.response is not None else ""
        fx["expected_source_texts"] = [n.node.get_content() for n in resp.source_nodes]
    elif kind == "rerank":
        rr = LLMRerank(llm=llm, choice_batch_size=case["choice_batch_size"],
                       top_n=case["top_n"])
        ranked = rr.postprocess_nodes(nodes_of(case["chunks"]), query_str=case["query"])
        fx["expected_prompts"] = list(llm.calls)
        fx["expected_ranked"] = [[n.node.node_id, n.score] for n in ranked]
    else:
        raise ValueError(kind)
    (out / f"{case['name']}.json").write_text(json.dumps(fx, ensure_ascii=False, indent=1))


def main(shared, out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = pathlib.Path(shared)
    en = json.loads((src / "dev_01_compact.json").read_text())["chunks"]
    zh = json.loads((src / "dev_zh_01_compact.json").read_text())["chunks"]

    en_hist = [
        {"role": "user", "content": "Can I charge a fee for conveying copies of the program?"},
        {"role": "assistant", "content": "Yes. You may charge any price or no price for each "
                                         "copy that you convey, and you may offer support or "
                                         "warranty protection for a fee."},
    ]
    en_hist3 = en_hist + [
        {"role": "user", "content": "And what about the source code?"},
        {"role": "assistant", "content": "You must also convey the Corresponding Source, "
                                         "under the terms of the license."},
    ]
    zh_hist = [
        {"role": "user", "content": "响应合成器是做什么的？"},
        {"role": "assistant", "content": "响应合成器用用户的查询和检索到的文本块，让大型语言模型生成回答，输出一个 Response 对象。"},
    ]
    cases = []
    for lang, chunks, hist, hist3, q_first, q_follow in (
        ("en", en, en_hist, en_hist3, "Can I charge a fee for conveying copies of the program?",
         "Does that also hold for the second one?"),
        ("zh", zh, zh_hist, zh_hist + [
            {"role": "user", "content": "它有哪些模式？"},
            {"role": "assistant", "content": "有 refine、compact、tree_summarize 等模式。"}],
         "响应合成器是做什么的？", "那第二种模式是怎么工作的？"),
    ):
        for mode in ("compact", "refine", "tree_summarize"):
            cases.append(dict(name=f"chat_{lang}_cq_{mode}", kind="condense_question", mode=mode,
                              query=q_follow, history=hist, chunks=chunks[:3],
                              context_window=1400, num_output=64))
        cases.append(dict(name=f"chat_{lang}_cq_first", kind="condense_question", mode="compact",
                          query=q_first, history=[], chunks=chunks[:2],
                          context_window=1400, num_output=64))
        cases.append(dict(name=f"chat_{lang}_cq_three_turns", kind="condense_question",
                          mode="compact", query=q_follow, history=hist3, chunks=chunks[:2],
                          context_window=1400, num_output=64))
        # A short memory: the oldest turn no longer fits.
        long_hist = [{"role": "user", "content": q_first},
                     {"role": "assistant", "content": chunks[-1][:600]}] + hist3
        cases.append(dict(name=f"chat_{lang}_cq_memory_limit", kind="condense_question",
                          mode="compact", query=q_follow, history=long_hist, chunks=chunks[:1],
                          context_window=1000, num_output=32))
        for cw, name in ((3200, "window"), (1900, "refines")):
            cases.append(dict(name=f"chat_{lang}_cpc_{name}", kind="condense_plus_context",
                              mode="compact", query=q_follow, history=hist3,
                              chunks=chunks[:4], context_window=cw, num_output=64))
        cases.append(dict(name=f"chat_{lang}_cpc_first", kind="condense_plus_context",
                          mode="compact", query=q_first, history=[], chunks=chunks[:2],
                          context_window=2400, num_output=64))
        cases.append(dict(name=f"chat_{lang}_cpc_cite", kind="condense_plus_context",
                          mode="compact", query=q_follow, history=hist, chunks=chunks[:3],
                          context_window=3200, num_output=64, cite=True,
                          citation_chunk_size=256, citation_chunk_overlap=20))
        for mode in ("compact", "refine", "tree_summarize", "simple_summarize"):
            cases.append(dict(name=f"cite_{lang}_{mode}", kind="citation", mode=mode,
                              query=q_first, chunks=chunks[:4], context_window=2000,
                              num_output=64, citation_chunk_size=256,
                              citation_chunk_overlap=20))
        cases.append(dict(name=f"cite_{lang}_default_size", kind="citation", mode="compact",
                          query=q_first, chunks=chunks[:3], context_window=2400,
                          num_output=64, citation_chunk_size=512, citation_chunk_overlap=20))
        cases.append(dict(name=f"rerank_{lang}_one_batch", kind="rerank", query=q_first,
                          chunks=chunks[:4], context_window=4000, num_output=64,
                          choice_batch_size=10, top_n=3,
                          replies=["Doc: 3, Relevance: 8\nDoc: 1, Relevance: 5\nDoc: 4, Relevance: 2"]))
        cases.append(dict(name=f"rerank_{lang}_batches", kind="rerank", query=q_first,
                          chunks=chunks[:5], context_window=4000, num_output=64,
                          choice_batch_size=2, top_n=4,
                          replies=["Doc: 2, Relevance: 6\nDoc: 1, Relevance: 6",
                                   "Doc: 2, Relevance: 9",
                                   "Doc: 1, Relevance: 7 (the most relevant)\nnoise line\nDoc: 5, Relevance: 10"]))
        cases.append(dict(name=f"rerank_{lang}_off_format", kind="rerank", query=q_first,
                          chunks=chunks[:3], context_window=4000, num_output=64,
                          choice_batch_size=10, top_n=3,
                          replies=["The most relevant document is the first one."]))
    for c in cases:
        run(out, c)
    print(f"wrote {len(cases)} fixtures to {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
