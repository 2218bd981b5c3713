"""llama.cpp's logits, as fingerprints, for the prompts of a greedy.jsonl, run here.

    python scripts/llamacpp_logits.py MODEL.gguf GREEDY.jsonl OUT.jsonl [STEPS]

For each prompt (its ids taken from the file, not re-tokenized): the logits after the
prompt, then after each of the first STEPS (default 8) of its greedy ids fed one at a
time; each as the SHA-256 of the little-endian f32 values, with the argmax. Run with
llama.cpp's plain CPU kernels (extra buffer types off, flash attention off, 2 threads,
prompt in one batch, logits of the last row only): the configuration whose greedy
output the shared SmolLM2 references record. Needs llama-cpp-python (and numpy).
"""
import hashlib, json, sys

import numpy as np
from llamacpp_plain import plain_llama

model, ref, out = sys.argv[1], sys.argv[2], sys.argv[3]
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 8
# Logits of the rows asked for only (llama.cpp's default, as an app runs it): past the
# last layer's attention only the prompt's last row goes on (`inp_out_ids`), so the last
# feed-forward and the output layer compute it as a product of its own. (With
# `logits_all` every row goes on, and K-quant products of 8 or more rows take the tiled
# arithmetic instead.)
llm = plain_llama(model)


def last_logits():
    """The logits of the last evaluation's one output row (llama.cpp's own buffer:
    llama-cpp-python keeps `scores` only with `logits_all`)."""
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()


def fingerprint(row):
    v = np.asarray(row, dtype="<f4")
    return {"sha256": hashlib.sha256(v.tobytes()).hexdigest(), "argmax": int(v.argmax())}


lines = []
for line in open(ref):
    r = json.loads(line)
    # A greedy file's ids, or (recording again) a logits file's own forced ids.
    ids, forced = r["prompt_ids"], r.get("greedy_ids", r.get("forced_ids"))[:steps]
    llm.reset()
    llm.eval(ids)
    fps = [fingerprint(last_logits())]
    for t in forced:
        llm.eval([t])
        fps.append(fingerprint(last_logits()))
    lines.append({"prompt": r["prompt"], "prompt_ids": ids, "forced_ids": forced, "logits": fps})
with open(out, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")
print(f"{len(lines)} prompts, {steps + 1} logit rows each")
