"""Small GGUF files with random weights, one per architecture the tests check against
llama.cpp where no small real file exists (as llama.cpp tests architectures): the
graph and the kernels are what is tested, and random weights run them as well as
trained ones.

    python scripts/random_gguf.py DIR            every fixture below, into DIR
    python scripts/random_gguf.py DIR NAME...    only those

Each file is a deterministic function of its spec (numpy's Generator from the seed;
pinned gguf and numpy, see scripts/setup.sh): the tests check its SHA-256 against the
one committed in tests/data/random_gguf.sha256 before comparing logits. The tokenizer
metadata (`tokenizer.*`) is copied from a model file in models/, so the vocabulary,
its special tokens and its chat template are a real model's; `pre` overrides
`tokenizer.ggml.pre`, and `drop` removes keys (a Llama 3 file without
`add_bos_token`, whose BOS llama.cpp then adds by default for `llama-bpe`).

Weights use real quantized types: Q8_0, Q4_0 and Q4_1 through the gguf package's
quantizers (llama.cpp's reference ones), Q4_K, Q5_K and Q6_K as random blocks (valid data of
the type, drawn directly: the package has no quantizer for them), norms and rope
factors in F32. Shapes are tiny (hidden 256, two blocks, grouped-query attention),
widths multiples of 256 so that every type fits every matrix.
"""
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFReader, GGUFValueType, GGUFWriter

ROOT = Path(__file__).resolve().parent.parent

# name -> spec. `types`: per block, the type of each matrix.
FIXTURES = {
    # Qwen3: per-head q/k norms, NeoX rope, head width (key_length 128) unlike
    # hidden / heads (64); output tied to the embeddings; Qwen2.5's vocabulary.
    "random-qwen3.gguf": dict(
        arch="qwen3", tokenizer="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", seed=3,
        hidden=256, blocks=2, heads=4, kv_heads=2, head_dim=128, ff=512,
        rope_base=1_000_000.0, eps=1e-6, ctx=4096, embd=Q.Q8_0, output=None,
        types=[dict(q=Q.Q4_K, k=Q.Q8_0, v=Q.Q6_K, o=Q.Q4_0, gate=Q.Q4_K, up=Q.Q4_1, down=Q.Q6_K),
               dict(q=Q.Q8_0, k=Q.Q4_K, v=Q.Q4_0, o=Q.Q4_K, gate=Q.Q8_0, up=Q.Q4_K, down=Q.Q8_0)],
    ),
    # Qwen3 again, its weights mostly Q5_K (the type of Q5_K_M files), an untied Q5_K
    # output (the widest product, 151,936 rows).
    "random-qwen3-q5k.gguf": dict(
        arch="qwen3", tokenizer="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", seed=5,
        hidden=256, blocks=2, heads=4, kv_heads=2, head_dim=128, ff=768,
        rope_base=1_000_000.0, eps=1e-6, ctx=4096, embd=Q.Q8_0, output=Q.Q5_K,
        types=[dict(q=Q.Q5_K, k=Q.Q5_K, v=Q.Q6_K, o=Q.Q5_K, gate=Q.Q5_K, up=Q.Q4_K, down=Q.Q5_K),
               dict(q=Q.Q4_K, k=Q.Q8_0, v=Q.Q5_K, o=Q.Q4_0, gate=Q.Q5_K, up=Q.Q5_K, down=Q.Q6_K)],
    ),
    # Llama 3.x: the llama-bpe pre-tokenizer over SmolLM2's byte-level BPE vocabulary,
    # no add_bos_token (llama.cpp adds BOS by default for llama-bpe), Llama 3's rope
    # frequency factors (rope_freqs.weight), an untied output.
    "random-llama3.gguf": dict(
        arch="llama", tokenizer="SmolLM2-135M-Instruct.Q4_1.gguf", seed=1,
        pre="llama-bpe", drop=["tokenizer.ggml.add_bos_token"],
        hidden=256, blocks=2, heads=4, kv_heads=2, head_dim=64, ff=512,
        rope_base=500_000.0, eps=1e-5, ctx=4096, embd=Q.Q4_1, output=Q.Q6_K,
        rope_freqs=True,
        types=[dict(q=Q.Q4_K, k=Q.Q4_K, v=Q.Q6_K, o=Q.Q4_K, gate=Q.Q4_K, up=Q.Q4_K, down=Q.Q6_K),
               dict(q=Q.Q8_0, k=Q.Q8_0, v=Q.Q8_0, o=Q.Q4_0, gate=Q.Q4_1, up=Q.Q4_1, down=Q.Q8_0)],
    ),
    # Phi-3.5 / Phi-4-mini: fused q/k/v (attn_qkv) and gate+up (ffn_up, 2·ff rows),
    # partial rotary (rope.dimension_count 48 of 64, as Phi-4-mini's 96 of 128), long
    # and short rope factors (the context, 2048, is past the original 1024: llama.cpp
    # and Quire take the long ones) with their attention factor, queries scaled before
    # attention; output tied; SmolLM2's vocabulary.
    "random-phi3.gguf": dict(
        arch="phi3", tokenizer="SmolLM2-135M-Instruct.Q4_1.gguf", seed=4,
        hidden=256, blocks=2, heads=4, kv_heads=2, head_dim=64, ff=512, rope_dim=48,
        rope_base=10_000.0, eps=1e-5, ctx=2048, orig_ctx=1024, attn_factor=1.1902380714,
        embd=Q.Q8_0, output=None, rope_long_short=True, fused=True,
        types=[dict(qkv=Q.Q4_K, o=Q.Q8_0, up=Q.Q4_K, down=Q.Q6_K),
               dict(qkv=Q.Q8_0, o=Q.Q4_K, up=Q.Q4_0, down=Q.Q8_0)],
    ),
}

# Bytes per 256-value block of the K-quants drawn directly.
KBLOCK = {Q.Q4_K: 144, Q.Q5_K: 176, Q.Q6_K: 210}


def k_blocks(rng, qtype, rows, cols, std):
    """`rows × cols` values of `qtype` as random blocks whose values have about `std`."""
    nb = rows * cols // 256
    raw = rng.integers(0, 256, size=(nb, KBLOCK[qtype]), dtype=np.uint8)
    if qtype == Q.Q4_K:
        # d, dmin (f16), 12 bytes of 6-bit scales and mins, 128 bytes of 4-bit values:
        # x = d·sc·q − dmin·m, q in 0..15, sc and m in 0..63; dmin ≈ 7.5·d centres it.
        d = (std / (31.5 * 4.6) * rng.uniform(0.5, 1.5, nb)).astype(np.float16)
        dmin = (d.astype(np.float32) * 7.5).astype(np.float16)
        raw[:, 0:2] = d.view(np.uint8).reshape(nb, 2)
        raw[:, 2:4] = dmin.view(np.uint8).reshape(nb, 2)
    elif qtype == Q.Q5_K:
        # Q4_K's fields with 32 bytes of fifth bits before the nibbles: q in 0..31
        # (standard deviation 9.2); dmin ≈ 15.5·d centres it.
        d = (std / (31.5 * 9.2) * rng.uniform(0.5, 1.5, nb)).astype(np.float16)
        dmin = (d.astype(np.float32) * 15.5).astype(np.float16)
        raw[:, 0:2] = d.view(np.uint8).reshape(nb, 2)
        raw[:, 2:4] = dmin.view(np.uint8).reshape(nb, 2)
    else:
        # 128 + 64 bytes of 6-bit values, 16 int8 scales, d (f16) last:
        # x = d·scale·(q − 32).
        d = (std / (64 * 18.5) * rng.uniform(0.5, 1.5, nb)).astype(np.float16)
        raw[:, 208:210] = d.view(np.uint8).reshape(nb, 2)
    return raw.reshape(rows, cols // 256 * KBLOCK[qtype])


def matrix(rng, qtype, rows, cols, std):
    """(array, raw_dtype) for a `rows × cols` weight of `qtype`."""
    if qtype in KBLOCK:
        return k_blocks(rng, qtype, rows, cols, std), qtype
    w = (rng.standard_normal((rows, cols)) * std).astype(np.float32)
    if qtype == Q.F32:
        return w, None
    return gguf.quants.quantize(w, qtype), qtype


def copy_tokenizer(w, source, pre, drop):
    r = GGUFReader(source)
    for key, f in r.fields.items():
        if not key.startswith("tokenizer.") or key in drop:
            continue
        vtype = f.types[0]
        if key == "tokenizer.ggml.pre" and pre:
            w.add_string(key, pre)
        elif vtype == GGUFValueType.ARRAY:
            w.add_key_value(key, f.contents(), vtype, sub_type=f.types[-1])
        else:
            w.add_key_value(key, f.contents(), vtype)
    if pre and "tokenizer.ggml.pre" not in r.fields:
        w.add_string("tokenizer.ggml.pre", pre)
    return len(r.fields["tokenizer.ggml.tokens"].contents())


def write(name, spec, out_dir):
    s = dict(spec)
    rng = np.random.Generator(np.random.PCG64(s["seed"]))
    arch, hidden, hd, ff = s["arch"], s["hidden"], s["head_dim"], s["ff"]
    nh, nkv = s["heads"], s["kv_heads"]
    path = Path(out_dir) / name
    w = GGUFWriter(str(path), arch)
    # No architecture in the name: llama.cpp sets token attributes by the model's name
    # ("phi3": Phi-3's own special tokens, which another vocabulary lacks).
    w.add_string("general.name", f"Quire test fixture (random weights, seed {s['seed']})")
    w.add_uint32(f"{arch}.context_length", s["ctx"])
    w.add_uint32(f"{arch}.embedding_length", hidden)
    w.add_uint32(f"{arch}.block_count", s["blocks"])
    w.add_uint32(f"{arch}.feed_forward_length", ff)
    w.add_uint32(f"{arch}.attention.head_count", nh)
    w.add_uint32(f"{arch}.attention.head_count_kv", nkv)
    w.add_uint32(f"{arch}.attention.key_length", hd)
    w.add_uint32(f"{arch}.attention.value_length", hd)
    w.add_uint32(f"{arch}.rope.dimension_count", s.get("rope_dim", hd))
    w.add_float32(f"{arch}.rope.freq_base", s["rope_base"])
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", s["eps"])
    if "orig_ctx" in s:
        w.add_uint32(f"{arch}.rope.scaling.original_context_length", s["orig_ctx"])
    if "attn_factor" in s:
        w.add_float32(f"{arch}.rope.scaling.attn_factor", s["attn_factor"])
    vocab = copy_tokenizer(w, ROOT / "models" / s["tokenizer"], s.get("pre"), s.get("drop", []))

    def norm(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    def add(tname, arr_raw):
        arr, raw = arr_raw
        w.add_tensor(tname, arr, raw_dtype=raw)

    add("token_embd.weight", matrix(rng, s["embd"], vocab, hidden, 1.0))
    add("output_norm.weight", (norm(hidden), None))
    if s["output"] is not None:
        add("output.weight", matrix(rng, s["output"], vocab, hidden, 1.0 / np.sqrt(hidden)))
    if s.get("rope_freqs"):
        # Llama 3's shape: 1 for the fast pairs, up to 8 for the slow ones.
        n = s.get("rope_dim", hd) // 2
        f = np.sort(rng.uniform(1.0, 8.0, n)).astype(np.float32)
        f[: n // 4] = 1.0
        f[-n // 4:] = 8.0
        add("rope_freqs.weight", (f, None))
    if s.get("rope_long_short"):
        # Phi-3's shape: short factors near 1, long ones growing to ~40 for slow pairs.
        n = s.get("rope_dim", hd) // 2
        add("rope_factors_long.weight", (np.sort(rng.uniform(1.0, 40.0, n)).astype(np.float32), None))
        add("rope_factors_short.weight", (rng.uniform(1.0, 1.2, n).astype(np.float32), None))
    for i, t in enumerate(s["types"]):
        b = f"blk.{i}."
        a_std, f_std = 1.0 / np.sqrt(hidden), 1.0 / np.sqrt(ff)
        add(b + "attn_norm.weight", (norm(hidden), None))
        if s.get("fused"):
            add(b + "attn_qkv.weight", matrix(rng, t["qkv"], (nh + 2 * nkv) * hd, hidden, a_std))
        else:
            add(b + "attn_q.weight", matrix(rng, t["q"], nh * hd, hidden, a_std))
            add(b + "attn_k.weight", matrix(rng, t["k"], nkv * hd, hidden, a_std))
            add(b + "attn_v.weight", matrix(rng, t["v"], nkv * hd, hidden, a_std))
        add(b + "attn_output.weight", matrix(rng, t["o"], hidden, nh * hd, 1.0 / np.sqrt(nh * hd)))
        if arch == "qwen3":
            add(b + "attn_q_norm.weight", (norm(hd), None))
            add(b + "attn_k_norm.weight", (norm(hd), None))
        add(b + "ffn_norm.weight", (norm(hidden), None))
        if s.get("fused"):
            # The gate's rows, then the up's.
            add(b + "ffn_up.weight", matrix(rng, t["up"], 2 * ff, hidden, a_std))
        else:
            add(b + "ffn_gate.weight", matrix(rng, t["gate"], ff, hidden, a_std))
            add(b + "ffn_up.weight", matrix(rng, t["up"], ff, hidden, a_std))
        add(b + "ffn_down.weight", matrix(rng, t["down"], hidden, ff, f_std))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", path)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir, names = sys.argv[1], sys.argv[2:] or list(FIXTURES)
    for n in names:
        if n not in FIXTURES:
            sys.exit(f"unknown fixture {n!r} (known: {', '.join(FIXTURES)})")
        write(n, FIXTURES[n], out_dir)


if __name__ == "__main__":
    main()
