"""llama.cpp (llama-cpp-python) with its plain CPU kernels, as the parity scripts run it:
extra buffer types (AMX, repacking) off, flash attention off, 2 threads, prompts of up
to 512 tokens in one batch — the configuration whose greedy output the shared SmolLM2
references record."""
import llama_cpp.llama_cpp as C
from llama_cpp import Llama

_orig = C.llama_model_default_params


def _params():
    p = _orig()
    p.use_extra_bufts = False
    return p


C.llama_model_default_params = _params


def plain_llama(model, **kw):
    return Llama(model_path=model, n_ctx=2048, n_threads=2, n_threads_batch=2, n_batch=512,
                 flash_attn=False, verbose=False, **kw)


def greedy_ids(llm, ids, n=32):
    """The first `n` greedy ids after the prompt `ids` (stopping at the end token)."""
    llm.reset()
    got = []
    for tok in llm.generate(ids, top_k=1, temp=0.0, repeat_penalty=1.0, reset=True):
        got.append(tok)
        if tok == llm.token_eos() or len(got) >= n:
            break
    return got
