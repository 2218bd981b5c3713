"""llama.cpp's greedy tokens after a long prompt (~740 tokens: two prompt batches,
then generation past 256 keys and, for Gemma 3, past its 512-key sliding window), run
here with its plain CPU kernels (see llamacpp_plain.py).

    python scripts/llamacpp_long_greedy.py MODEL.gguf OUT.jsonl

Wrote tests/data/{smollm2,gemma3}_long_greedy_llamacpp_here.jsonl (llama-cpp-python
0.3.36). Needs llama-cpp-python.
"""
import json, pathlib, sys

from llamacpp_plain import greedy_ids, plain_llama

model, out = sys.argv[1], sys.argv[2]
llm = plain_llama(model)
text = pathlib.Path("/usr/share/common-licenses/GPL-3").read_text()[:3200]
prompt = ("Context information is below.\n---------------------\n" + text
          + "\n---------------------\nGiven the context information and not prior knowledge, "
          "answer the query.\nQuery: What may recipients of the software do?\nAnswer: ")
ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
got = greedy_ids(llm, ids)
print(len(ids), got, llm.detokenize(got))
pathlib.Path(out).write_text(json.dumps({"prompt": prompt, "prompt_ids": ids, "greedy_ids": got}) + "\n")
