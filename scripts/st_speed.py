"""sentence-transformers throughput for all-MiniLM-L6-v2 on CPU: chunks of ~200 words.
(The shared reference's st_speed.py; `quire bench embed --peer PYTHON` runs it beside
Quire, under the same load.)

    python scripts/st_speed.py MODEL_DIR OUT.json   # needs sentence-transformers
"""
import json, sys, time, statistics, pathlib, torch
from sentence_transformers import SentenceTransformer
torch.set_num_threads(2)
m = SentenceTransformer(sys.argv[1], device="cpu")
words = pathlib.Path("/usr/share/common-licenses/GPL-3").read_text().split()
words = (words * (200 * 256 // len(words) + 1))  # repeat the text: 256 full chunks
chunks = [" ".join(words[i:i + 200]) for i in range(0, 200 * 256, 200)]
assert len(chunks) == 256 and all(len(c.split()) == 200 for c in chunks)
rates = []
for _ in range(3):
    t = time.perf_counter(); m.encode(chunks, batch_size=32, normalize_embeddings=True); rates.append(len(chunks) / (time.perf_counter() - t))
res = {"model": "all-MiniLM-L6-v2", "engine": "sentence-transformers " + __import__("sentence_transformers").__version__ + ", torch " + torch.__version__,
       "threads": 2, "chunks": len(chunks), "words_per_chunk": 200, "batch_size": 32,
       "chunks_per_s_median": round(statistics.median(rates), 1), "runs": [round(r, 1) for r in rates]}
pathlib.Path(sys.argv[2]).write_text(json.dumps(res, indent=1)); print(res)
