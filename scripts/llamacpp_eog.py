"""llama.cpp's end-of-generation tokens for each model file given: the ids for which
`llama_vocab_is_eog` is true, the set llama.cpp stops generation on.

    python scripts/llamacpp_eog.py MODEL.gguf... > tests/data/eog_llamacpp_here.jsonl

One JSON line per file: {"model": file name, "eog": [ids, ascending], "probe": PROBE,
"probe_ids": its tokens with special tokens parsed} (an end marker that is not a
control token in the file becomes one, which changes how such text tokenizes). Needs
llama-cpp-python.
"""
import json, pathlib, sys

import ctypes

import llama_cpp

PROBE = "a </s> b <|im_end|> c <end_of_turn> <reponame> <|endoftext|>"

llama_cpp.llama_backend_init()
for path in sys.argv[1:]:
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(path.encode(), params)
    if not model:
        sys.exit(f"cannot load {path}")
    vocab = llama_cpp.llama_model_get_vocab(model)
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    eog = [i for i in range(n) if llama_cpp.llama_vocab_is_eog(vocab, i)]
    text = PROBE.encode()
    buf = (llama_cpp.llama_token * 256)()
    k = llama_cpp.llama_tokenize(vocab, text, len(text), buf, 256, False, True)
    print(json.dumps({"model": pathlib.Path(path).name, "eog": eog, "probe": PROBE,
                      "probe_ids": list(buf[:k])}))
    llama_cpp.llama_model_free(model)
