//! Retrieval: vector and BM25 retrievers, query generation, rank fusion.
