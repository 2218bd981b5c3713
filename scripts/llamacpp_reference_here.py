"""llama.cpp's tokenization and greedy output for a model the shared references do not
cover, recorded here (then `llamacpp_logits.py` adds the logits behind the greedy ids).

    python scripts/llamacpp_reference_here.py MODEL.gguf NAME [SYSTEM]

writes tests/data/NAME_tokenize_llamacpp_here.jsonl (the shared reference strings,
`../shared/reference/gen_reference.py`'s STRINGS, tokenized without and with special
tokens) and tests/data/NAME_greedy_llamacpp_here.jsonl (four prompts: two ChatML chat
turns, the first with SYSTEM as its system message, and two raw completions; the first
32 greedy ids of each). Run with llama.cpp's plain CPU kernels (`llamacpp_plain.py`:
extra buffer types off, flash attention off, 2 threads, prompt in one batch). Needs
llama-cpp-python.
"""
import importlib.util, json, pathlib, sys

from llamacpp_plain import greedy_ids, plain_llama

model, name = sys.argv[1], sys.argv[2]
system = sys.argv[3] if len(sys.argv) > 3 else "You are a helpful assistant."
root = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location(
    "gen_reference", root.parent / "shared/reference/gen_reference.py")
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

CONTEXT = ("Context information is below.\n---------------------\nThe GNU General Public "
           "License is a free, copyleft license for software and other kinds of works.\n"
           "---------------------\nGiven the context information and not prior knowledge, "
           "answer the query.\nQuery: What kind of license is the GPL?\nAnswer: ")
PROMPTS = [
    f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\nWhat is the capital of "
    "France?<|im_end|>\n<|im_start|>assistant\n",
    f"<|im_start|>user\n{CONTEXT}<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time",
    "The three primary colors are",
]

llm = plain_llama(model)
toks = [{"text": s,
         "ids_plain": llm.tokenize(s.encode(), add_bos=False, special=False),
         "ids_special": llm.tokenize(s.encode(), add_bos=False, special=True)}
        for s in gen.STRINGS]
greedy = []
for p in PROMPTS:
    ids = llm.tokenize(p.encode(), add_bos=True, special=True)  # BOS only where the model asks
    out = greedy_ids(llm, ids)
    greedy.append({"prompt": p, "prompt_ids": ids, "greedy_ids": out,
                   "greedy_text": llm.detokenize(out).decode("utf-8", "replace")})
    print(repr(p[-40:]), "->", repr(greedy[-1]["greedy_text"][:60]))
data = root / "tests/data"
(data / f"{name}_tokenize_llamacpp_here.jsonl").write_text(
    "\n".join(json.dumps(t, ensure_ascii=False) for t in toks) + "\n")
(data / f"{name}_greedy_llamacpp_here.jsonl").write_text(
    "\n".join(json.dumps(g, ensure_ascii=False) for g in greedy) + "\n")
print("wrote", data / f"{name}_{{tokenize,greedy}}_llamacpp_here.jsonl")
