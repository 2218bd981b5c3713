"""LlamaIndex's ingestion of a folder of PDFs: the peer `quire bench ingest --peer PYTHON`
runs beside Quire in the same run, on the same files. As a LlamaIndex user builds an
index: PyMuPDF's text of each page as a Document, SentenceSplitter at chunk size 512
(its default overlap), VectorStoreIndex over HuggingFaceEmbedding with the same
all-MiniLM-L6-v2 folder (sentence-transformers, 2 torch threads, LlamaIndex's default
batch), in memory.

    python scripts/llamaindex_ingest.py MODEL_DIR PDF_DIR OUT.json
    # needs llama-index-core, llama-index-embeddings-huggingface, pymupdf

QUIRE_PEER_CHUNKS=SIZE,OVERLAP (`quire bench ingest --same-chunks`): the same work as
Quire's: each file's pages are one Document without metadata, split by the embedding
model's own tokens at Quire's chunk size and overlap, so that all of the text is
embedded, in chunks of Quire's size.
"""
import json, os, pathlib, resource, sys, time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local folder: no network

import torch

torch.set_num_threads(2)
import fitz  # PyMuPDF
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.embeddings.huggingface import HuggingFaceEmbedding
from transformers import AutoTokenizer

model_dir, pdf_dir, out = sys.argv[1:4]
embed = HuggingFaceEmbedding(model_name=model_dir, device="cpu")
Settings.llm = None
t0 = time.perf_counter()
same = os.environ.get("QUIRE_PEER_CHUNKS")
docs, pages, failed = [], 0, 0
for p in sorted(pathlib.Path(pdf_dir).glob("*.pdf")):
    try:
        with fitz.open(p) as d:
            texts = []
            for i, page in enumerate(d):
                pages += 1
                text = page.get_text()
                if same:
                    texts.append(text)
                elif text.strip():
                    docs.append(Document(text=text, metadata={"file_name": p.name, "page_label": str(i + 1)}))
            # The same work as Quire: a file's pages are one text (Quire's chunks run
            # across pages), with nothing but that text embedded.
            if same and "".join(texts).strip():
                docs.append(Document(text="\n\n".join(texts)))
    except Exception:  # a broken file fails alone, as in Quire
        failed += 1
t_extract = time.perf_counter() - t0
tok = None
if same:
    size, overlap = (int(x) for x in same.split(","))
    tok = AutoTokenizer.from_pretrained(model_dir)
    splitter = SentenceSplitter(chunk_size=size, chunk_overlap=overlap,
                                tokenizer=lambda t: tok.encode(t, add_special_tokens=False))
    splitter_name = (f"SentenceSplitter(chunk_size={size}, chunk_overlap={overlap}) in the model's "
                     "tokens, a Document per file")
else:
    splitter = SentenceSplitter(chunk_size=512)
    splitter_name = "SentenceSplitter(chunk_size=512), its default overlap, a Document per page"
nodes = splitter.get_nodes_from_documents(docs)
t_split = time.perf_counter() - t0 - t_extract
VectorStoreIndex(nodes, embed_model=embed)
secs = time.perf_counter() - t0
# The tokens the model saw (special tokens included, each chunk truncated to the
# model's maximum), counted after the run: the work embedding did.
from llama_index.core.schema import MetadataMode

counter = tok or AutoTokenizer.from_pretrained(model_dir)
max_len = embed._model.max_seq_length
embedded_tokens = sum(min(len(counter.encode(n.get_content(metadata_mode=MetadataMode.EMBED))), max_len)
                      for n in nodes)
import llama_index.core, sentence_transformers
res = {
    "engine": f"LlamaIndex {llama_index.core.__version__} (PyMuPDF {fitz.VersionBind}, sentence-transformers "
              f"{sentence_transformers.__version__}, torch {torch.__version__}, 2 threads)",
    "splitter": splitter_name,
    "pages": pages, "failed_files": failed, "chunks": len(nodes),
    "embedded_tokens": embedded_tokens, "secs": round(secs, 2),
    "extract_secs": round(t_extract, 2), "split_secs": round(t_split, 2),
    "embed_secs": round(secs - t_extract - t_split, 2),
    "pages_per_sec": round(pages / secs, 3), "chunks_per_sec": round(len(nodes) / secs, 3),
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
}
pathlib.Path(out).write_text(json.dumps(res, indent=1))
print(res)
