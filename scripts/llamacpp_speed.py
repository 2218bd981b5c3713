"""llama.cpp's speed on a GGUF, side by side with `quire bench llm`: the shared
reference's llamacpp_speed.py (prompt of 512 tokens, 128 generated, 2 threads, median
of 3), with llama.cpp's extra buffer types (AMX/repack kernels) off unless EXTRA=1.

With EXTRA=1 on an AMX CPU, llama.cpp's AMX backend needs a build whose tile
configuration survives the compiler: GCC 12 (Debian 12) drops the stores that fill it
in `ggml_tile_config_init` (ggml-cpu/amx/mmq.cpp), and the first `tilezero` dies with
SIGILL. An `asm volatile("" : : "r"(&tc) : "memory");` before `_tile_loadconfig(&tc)`
fixes it. The script also asks Linux for the tile state (arch_prctl), as ggml does.

    python scripts/llamacpp_speed.py MODEL.gguf OUT.json [--load N]   # needs llama-cpp-python

PROMPT_TOKENS=N (default 512) sets the prompt's length (the window grows to fit it);
GEN_DEPTH=N (default 16) the prompt tokens before the 128 generated ones;
`quire bench llm --prompt-tokens N --gen-depth N --peer PYTHON` passes its own.

--load N measures beside N busy processes (`yes > /dev/null`), stopped at the end, as
`quire bench llm --load N` does (which, given --peer, runs this script under its own
load instead).
"""
import atexit, json, os, pathlib, statistics, subprocess, sys, time

import llama_cpp.llama_cpp as C
from llama_cpp import Llama

if os.environ.get("EXTRA") == "1":
    import ctypes

    # SYS_arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
    ctypes.CDLL(None, use_errno=True).syscall(158, 0x1023, 18)

_orig = C.llama_model_default_params


def _params():
    p = _orig()
    p.use_extra_bufts = os.environ.get("EXTRA") == "1"
    return p


C.llama_model_default_params = _params

args = sys.argv[1:]
load = 0
if "--load" in args:
    i = args.index("--load")
    load = int(args[i + 1])
    del args[i:i + 2]
    if not 0 <= load <= 64:
        sys.exit("--load: 0 to 64 busy processes")
path, out = args[0], args[1]
busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(load)]


def _stop_busy():
    for p in busy:
        p.kill()
        p.wait()


atexit.register(_stop_busy)
prompt_tokens = int(os.environ.get("PROMPT_TOKENS", "512"))
if not 16 <= prompt_tokens <= 32768:
    sys.exit("PROMPT_TOKENS: 16 to 32768")
gen_depth = int(os.environ.get("GEN_DEPTH", "16"))
if not 1 <= gen_depth <= 32768:
    sys.exit("GEN_DEPTH: 1 to 32768")
llm = Llama(model_path=path, n_ctx=max(2048, prompt_tokens + 256, gen_depth + 256), n_threads=2, n_threads_batch=2,
            n_batch=512, verbose=False)
text = pathlib.Path("/usr/share/common-licenses/GPL-3").read_text()
ids = llm.tokenize(text.encode(), add_bos=False)
while len(ids) < max(prompt_tokens, gen_depth):
    ids = ids + ids
gen_ids = ids[:gen_depth]
ids = ids[:prompt_tokens]
pp, tg = [], []
for _ in range(3):
    llm.reset()
    t = time.perf_counter(); llm.eval(ids); pp.append(len(ids) / (time.perf_counter() - t))
    llm.reset()
    # The prompt but its last token, then generation from that token: 128 passes, each
    # attending to everything before it.
    llm.eval(gen_ids[:-1])
    t = time.perf_counter(); n = 0
    for tok in llm.generate(gen_ids[-1:], top_k=1, temp=0.0, repeat_penalty=1.0, reset=False):
        n += 1
        if n >= 128:
            break
    tg.append(n / (time.perf_counter() - t))
res = {"model_file": pathlib.Path(path).name, "threads": 2, "prompt_tokens": len(ids), "busy": load,
       "extra_bufts": os.environ.get("EXTRA") == "1",
       "prompt_tokens_per_s_median": round(statistics.median(pp), 1),
       "gen_tokens": 128, "gen_depth": len(gen_ids), "gen_tokens_per_s_median": round(statistics.median(tg), 1),
       "runs": {"pp": [round(x, 1) for x in pp], "tg": [round(x, 1) for x in tg]},
       "engine": "llama.cpp via llama-cpp-python " + __import__("llama_cpp").__version__}
pathlib.Path(out).write_text(json.dumps(res, indent=1)); print(json.dumps(res))
