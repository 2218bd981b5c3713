"""llama.cpp's greedy tokens for the prompts of a shared greedy.jsonl, run here.

    python scripts/llamacpp_greedy.py MODEL.gguf REFERENCE_greedy.jsonl OUT.jsonl

Each output line has the prompt, its ids (taken from the reference, not re-tokenized)
and the first 32 greedy ids llama.cpp gives on this machine with its plain CPU kernels
(extra buffer types off, flash attention off, 2 threads, one sequence, prompt in one
batch). Needs llama-cpp-python.
"""
import json, sys

from llamacpp_plain import greedy_ids, plain_llama

model, ref, out = sys.argv[1], sys.argv[2], sys.argv[3]
llm = plain_llama(model)
lines = []
for line in open(ref):
    r = json.loads(line)
    ids = r["prompt_ids"]
    got = greedy_ids(llm, ids)
    lines.append({"prompt": r["prompt"], "prompt_ids": ids, "greedy_ids": got})
    same = 0
    for a, b in zip(got, r["greedy_ids"]):
        if a != b:
            break
        same += 1
    print(f"{same}/{len(r['greedy_ids'])} of the reference for {r['prompt'][:50]!r}")
with open(out, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")
