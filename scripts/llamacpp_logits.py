"""llama.cpp's logits, as fingerprints, for the prompts of a greedy.jsonl, run here.

    python scripts/llamacpp_logits.py MODEL.gguf GREEDY.jsonl OUT.jsonl [STEPS]

For each prompt (its ids taken from the file, not re-tokenized): the logits after the
prompt, then after each of the first STEPS (default 8) of its greedy ids fed one at a
time; each as the SHA-256 of the little-endian f32 values, with the argmax. Run with
llama.cpp's plain CPU kernels (extra buffer types off, flash attention off, 2 threads,
prompt in one batch): the configuration whose greedy output the shared SmolLM2
references record. Needs llama-cpp-python (and numpy).
"""
import hashlib, json, sys

import numpy as np
from llamacpp_plain import plain_llama

model, ref, out = sys.argv[1], sys.argv[2], sys.argv[3]
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 8
llm = plain_llama(model, logits_all=True)


def fingerprint(row):
    v = np.asarray(row, dtype="<f4")
    return {"sha256": hashlib.sha256(v.tobytes()).hexdigest(), "argmax": int(v.argmax())}


lines = []
for line in open(ref):
    r = json.loads(line)
    ids, forced = r["prompt_ids"], r["greedy_ids"][:steps]
    llm.reset()
    llm.eval(ids)
    fps = [fingerprint(llm.scores[len(ids) - 1])]
    for t in forced:
        llm.eval([t])
        fps.append(fingerprint(llm.scores[llm.n_tokens - 1]))
    lines.append({"prompt": r["prompt"], "prompt_ids": ids, "forced_ids": forced, "logits": fps})
with open(out, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")
print(f"{len(lines)} prompts, {steps + 1} logit rows each")
