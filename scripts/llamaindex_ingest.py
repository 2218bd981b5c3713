"""LlamaIndex's ingestion of a folder of PDFs: the peer `quire bench ingest --peer PYTHON`
runs beside Quire in the same run, on the same files. As a LlamaIndex user builds an
index: PyMuPDF's text of each page as a Document, SentenceSplitter at chunk size 512
(its default overlap), VectorStoreIndex over HuggingFaceEmbedding with the same
all-MiniLM-L6-v2 folder (sentence-transformers, 2 torch threads, LlamaIndex's default
batch), in memory.

    python scripts/llamaindex_ingest.py MODEL_DIR PDF_DIR OUT.json
    # needs llama-index-core, llama-index-embeddings-huggingface, pymupdf
"""
import json, os, pathlib, resource, sys, time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local folder: no network

import torch

torch.set_num_threads(2)
import fitz  # PyMuPDF
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.embeddings.huggingface import HuggingFaceEmbedding

model_dir, pdf_dir, out = sys.argv[1:4]
embed = HuggingFaceEmbedding(model_name=model_dir, device="cpu")
Settings.llm = None
t0 = time.perf_counter()
docs, pages, failed = [], 0, 0
for p in sorted(pathlib.Path(pdf_dir).glob("*.pdf")):
    try:
        with fitz.open(p) as d:
            for i, page in enumerate(d):
                pages += 1
                text = page.get_text()
                if text.strip():
                    docs.append(Document(text=text, metadata={"file_name": p.name, "page_label": str(i + 1)}))
    except Exception:  # a broken file fails alone, as in Quire
        failed += 1
t_extract = time.perf_counter() - t0
nodes = SentenceSplitter(chunk_size=512).get_nodes_from_documents(docs)
t_split = time.perf_counter() - t0 - t_extract
VectorStoreIndex(nodes, embed_model=embed)
secs = time.perf_counter() - t0
import llama_index.core, sentence_transformers
res = {
    "engine": f"LlamaIndex {llama_index.core.__version__} (PyMuPDF {fitz.VersionBind}, sentence-transformers "
              f"{sentence_transformers.__version__}, torch {torch.__version__}, 2 threads)",
    "pages": pages, "failed_files": failed, "chunks": len(nodes), "secs": round(secs, 2),
    "extract_secs": round(t_extract, 2), "split_secs": round(t_split, 2),
    "embed_secs": round(secs - t_extract - t_split, 2),
    "pages_per_sec": round(pages / secs, 3), "chunks_per_sec": round(len(nodes) / secs, 3),
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
}
pathlib.Path(out).write_text(json.dumps(res, indent=1))
print(res)
