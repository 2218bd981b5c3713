"""Record LlamaIndex's SentenceSplitter as fixtures for src/synth/sentence_splitter.rs.

llama-index-core 0.14.25, `SentenceSplitter(chunk_size, chunk_overlap).split_text(text)`
with `Settings.tokenizer = list` (one token per code point), as CitationQueryEngine
uses it. Texts: pages of the corpus PDFs (`pdftotext -f P -l P`), English and Chinese,
plus hand-written strings. Each line: {source, text, chunk_size, chunk_overlap,
chunks}; the first line of each text also has `sentences` (LlamaIndex's
split_by_sentence_tokenizer, i.e. an untrained nltk Punkt) and `english_spans`
(nltk's PunktTokenizer("english").span_tokenize, code-point offsets).

    /work/venv-li/bin/python scripts/llamaindex_sentence_splitter.py \
        /work/shared/corpus/pdfs tests/data/sentence_splitter_llamaindex.jsonl
"""
import json
import pathlib
import subprocess
import sys

from llama_index.core import Settings
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer
from llama_index.core.utils import globals_helper

Settings.tokenizer = list  # one token per code point

PAGES = {
    "debian-faq.en.pdf": [5, 13, 20, 33, 50],
    "developers-reference.pdf": [11, 25, 40, 60, 90],
    "maximabook-19-Sept-2004.pdf": [8, 30, 70, 118],
    "chemformula-manual.pdf": [3, 10, 25],
    "nicematrix.pdf": [5, 50, 150],
    "txfontsdoc.pdf": [2, 10, 20],
    "wasysym.pdf": [1, 3],
    "ctex-faq.pdf": [3, 10, 20, 35],
    "lshort-zh-cn.pdf": [10, 32, 60, 100, 130],
}
# Two-page extracts (longer texts for the larger chunk sizes).
RANGES = {
    "debian-faq.en.pdf": [(14, 15)],
    "developers-reference.pdf": [(30, 31)],
    "lshort-zh-cn.pdf": [(40, 41)],
}

HAND = [
    "",
    " ",
    "   \n\n\n   ",
    "Hello world.",
    "See e.g. Fig. 3 for Mr. Smith. He said so.  Then U.S. goes. Dr. J. R. R. Tolkien wrote it.",
    "The value is 3.5 and the rate was 12.7% in 2004. Visit https://www.debian.org/doc/ for more, "
    "i.e. the FAQ, etc. The end... Or is it? \"Yes!\" she said. (Really.) [Sure.] 'Quoted.' Next one.",
    "Wait... what?! No -- never. A. Lincoln was born in Ky. in 1809. The U.S.A. is big. "
    "Items: a. first; b. second; c. third. See sec. 4.2.1. Call 555-1234. He left at 5 p.m. sharp.",
    "First paragraph sentence one. Sentence two is here.\n\n\nSecond paragraph, with a comma; "
    "and a semicolon. Third sentence!\n\n\n\n\nThird paragraph after five newlines.",
    "Line one without period\nLine two. Line three\n\nnew para. lower case start. "
    "\u201cCurly quotes.\u201d Then \u2018single.\u2019 \u00abGuillemets.\u00bb Done.",
    "supercalifragilisticexpialidocious" * 6 + " short words after a very long one. " * 3,
    "中文句子。这是第二句！第三句？还有，逗号；分号。" * 12,
    "Mixed 中文 and English. 这是一个测试。This is a test... 另一个句子！Another one? "
    "Numbers 1.2.3 and v2.0.1-rc1. E-mail: someone@example.com. OK.",
    "Ellipsis . . . spaced out. And .. two dots. And.... four. Hyphens -- and --- three. "
    "Odd spacing:  double  spaces.   Tabs\there.\tTab after period. Form\x0cfeed. End.",
    "No sentence punctuation at all just a long run of words that goes on and on "
    "without stopping for any reason whatsoever until it reaches the chunk limit and beyond "
    "so that the splitter has to fall back to words and characters to make pieces",
    "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z. A.B.C. x. Y. 1. 2. 3. Item 4. "
    "Ch. 5. Vol. II. No. 7. pp. 12-15. Jan. 5, 2004. Inc. Ltd. Co. vs. etc. Mr. Mrs. Ms.",
    "He said \"Stop.\" Then \"Go!\"  'Why?' (Because.) [End.] {Brace.} \u201cCurly!\u201d -- next. "
    "Parens (like this.) and (that!) too.\" Trailing quote.\"",
    "x" * 300,
    "word " * 80,
    ".,;。？！" * 20,
    "The sentence ends here.\n  \n  Next starts after blank line. 3.14159 is pi. "
    "Section 2. Results are in Table 1. and Figure 2.\nEnd of text   \n\n",
]

SIZES = [64, 128, 256, 512]
OVERLAPS = [0, 10, 20]
ALL = [(s, o) for s in SIZES for o in OVERLAPS]
HAND_CONFIGS = ALL + [(16, 0), (16, 5), (32, 10), (8, 3)]


def pdf_text(path: pathlib.Path, first: int, last: int) -> str:
    out = subprocess.run(
        ["pdftotext", "-f", str(first), "-l", str(last), str(path), "-"],
        check=True,
        capture_output=True,
    )
    return out.stdout.decode("utf-8")


def main() -> None:
    pdfs = pathlib.Path(sys.argv[1])
    out_path = pathlib.Path(sys.argv[2])
    texts = []
    for name, pages in PAGES.items():
        for p in pages:
            texts.append((f"{name} p{p}", pdf_text(pdfs / name, p, p)))
        for a, b in RANGES.get(name, []):
            texts.append((f"{name} p{a}-{b}", pdf_text(pdfs / name, a, b)))

    from nltk.tokenize.punkt import PunktTokenizer

    sentences = split_by_sentence_tokenizer()
    globals_helper.punkt_tokenizer  # sets nltk's data path to the bundled cache
    english = PunktTokenizer("english")

    n = 0
    with out_path.open("w", encoding="utf-8") as f:
        for i, (source, text) in enumerate(texts + [(f"hand {k}", t) for k, t in enumerate(HAND)]):
            if source.startswith("hand"):
                configs = HAND_CONFIGS
            else:
                configs = [ALL[(i * 5 + j * 4) % len(ALL)] for j in range(3)]
            for j, (size, overlap) in enumerate(configs):
                splitter = SentenceSplitter(chunk_size=size, chunk_overlap=overlap)
                rec = {
                    "source": source,
                    "text": text,
                    "chunk_size": size,
                    "chunk_overlap": overlap,
                    "chunks": splitter.split_text(text),
                }
                if j == 0:
                    rec["sentences"] = sentences(text)
                    rec["english_spans"] = list(english.span_tokenize(text))
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                n += 1
    print(f"{n} cases from {len(texts) + len(HAND)} texts -> {out_path}")


if __name__ == "__main__":
    main()
