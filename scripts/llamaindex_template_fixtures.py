"""Record LlamaIndex's response synthesizers with custom refine and simple templates.

The same method as ../shared/fixtures/llamaindex/generate.py (llama-index-core 0.14.25,
a scripted completion LLM whose k-th call answers `answer k`, one token per code point),
over the chunks, queries and windows of its dev_00..dev_02 fixtures, for what the
"every knob of the synthesizer" work adds:

- a custom `refine_template` (with an extra variable) in refine and compact, alone and
  with a custom `text_qa_template`;
- a custom template for simple_summarize: LlamaIndex's SimpleSummarize takes it as its
  `text_qa_template` (get_response_synthesizer passes the QA template to it); Quire
  calls it `simple_template`, so the fixture records it under that name.

Each fixture has the fields of the shared ones plus `refine_template`,
`summary_template` and `simple_template` (null for the default).

    python scripts/llamaindex_template_fixtures.py ../shared/fixtures/llamaindex tests/fixtures/llamaindex_templates
"""
import json
import pathlib
import sys
from typing import Any

from llama_index.core import PromptTemplate, Settings
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.schema import NodeWithScore, TextNode

Settings.tokenizer = list  # one token per code point


class ScriptedLLM(CustomLLM):
    context_window: int = 1000
    num_output: int = 64
    calls: list = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output,
                           is_chat_model=False, model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self.calls.append(prompt)
        return CompletionResponse(text=f"answer {len(self.calls)}")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):
        raise NotImplementedError


REFINE = ("The original query is as follows: {query_str}\n"
          "We have provided an existing answer: {existing_answer}\n"
          "We have the opportunity to refine the existing answer (only if needed) with some "
          "more context below, in the voice of {tone_name}.\n"
          "------------\n{context_msg}\n------------\n"
          "Given the new context, refine the original answer to better answer the query. "
          "If the context isn't useful, return the original answer.\nRefined Answer: ")
QA = ("Passages:\n{context_str}\n\nAnswer the question from the passages above only, "
      "in the voice of {tone_name}.\nQuestion: {query_str}\nAnswer: ")
SIMPLE = ("Here is everything that was found, truncated to fit:\n{context_str}\n"
          "Answer in one short paragraph for {audience}.\nQuestion: {query_str}\n")


def run_case(out, name, mode, base, qa=None, refine=None, simple=None, extra=None):
    cw, no = base["context_window"], base["num_output"]
    llm = ScriptedLLM(context_window=cw, num_output=no, calls=[])
    Settings.llm = llm
    kwargs = {}
    if qa:
        kwargs["text_qa_template"] = PromptTemplate(qa)
    if refine:
        kwargs["refine_template"] = PromptTemplate(refine)
    if simple:
        # SimpleSummarize reads its template as the QA template.
        kwargs["text_qa_template"] = PromptTemplate(simple)
    synth = get_response_synthesizer(llm=llm, response_mode=mode, **kwargs)
    nodes = [NodeWithScore(node=TextNode(text=c, id_=f"n{i}"), score=1.0 - i * 0.1)
             for i, c in enumerate(base["chunks"])]
    resp = synth.synthesize(base["query"], nodes=nodes, **(extra or {}))
    fx = {
        "name": name, "mode": mode, "query": base["query"], "chunks": base["chunks"],
        "context_window": cw, "num_output": no, "tokenizer": "chars",
        "llm": "call k answers 'answer k'",
        "text_qa_template": qa, "refine_template": refine, "summary_template": None,
        "simple_template": simple, "extra_vars": extra or {},
        "expected_prompts": list(llm.calls),
        "expected_response": str(resp.response) if resp.response is not None else "",
        "expected_source_ids": [n.node.node_id for n in resp.source_nodes],
    }
    (out / f"{name}.json").write_text(json.dumps(fx, ensure_ascii=False, indent=1))


def main(shared, out_dir):
    shared, out = pathlib.Path(shared), pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for k in ("00", "01", "02"):
        base = json.loads((shared / f"dev_{k}_compact.json").read_text())
        tone = {"tone_name": "a ship's captain"}
        for mode in ("refine", "compact"):
            run_case(out, f"tpl_{k}_refine_{mode}", mode, base, refine=REFINE, extra=tone)
            run_case(out, f"tpl_{k}_qa_refine_{mode}", mode, base, qa=QA, refine=REFINE,
                     extra=tone)
            n += 2
        run_case(out, f"tpl_{k}_simple_simple_summarize", "simple_summarize", base,
                 simple=SIMPLE, extra={"audience": "a busy reader"})
        n += 1
    print(f"wrote {n} fixtures to {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
