#!/usr/bin/env bash
# Build the libraries `quire bench not-found` is measured on (README, "Not found"):
# three Quire data directories of about 1k, 5k and 30k chunks, made of the corpus
# (../shared/corpus/pdfs) and real PDFs that Debian's documentation packages ship
# (TeX Live's LaTeX, science and humanities manuals; the PDFs under /usr/share/doc).
# The same packages give the same libraries: the PDFs are chosen in a fixed order (by
# the md5 of their path), files equal to a corpus PDF are left out, and each library
# takes files until its page budget is spent.
#
#   scripts/big-library.sh [OUT]      default OUT=/work/biglib
#
# OUT/1k, OUT/5k, OUT/30k are the data directories (pass one to
# `quire bench not-found --data-dir`); OUT/pdfs holds the unpacked .pdf.gz files;
# OUT/*.list the files of each library. A library already indexed is indexed again
# only for files it lacks (quire index skips what it has). Indexing runs under nice.
#
# Settings (environment): QUIRE (the binary, default target/debug/quire), CORPUS
# (default ../shared/corpus/pdfs), INSTALL=0 to skip apt-get (the packages must then
# be there), PAGES_5K / PAGES_30K (pages taken beyond the corpus, default 220 / 5600).
set -euo pipefail

OUT=${1:-/work/biglib}
QUIRE=${QUIRE:-target/debug/quire}
CORPUS=${CORPUS:-../shared/corpus/pdfs}
PAGES_5K=${PAGES_5K:-220}
PAGES_30K=${PAGES_30K:-5600}
PACKAGES="texlive-latex-recommended-doc texlive-science-doc texlive-humanities-doc"

if [ "${INSTALL:-1}" = 1 ]; then
    missing=$(for p in $PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
    if [ -n "$missing" ]; then
        apt-get update -qq
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
    fi
fi

mkdir -p "$OUT/pdfs"
CORPUS=$(cd "$CORPUS" && pwd)

# Debian's own manuals ship compressed: unpack them once.
find /usr/share/doc -name '*.pdf.gz' ! -path '*/texlive-doc/*' | sort | while read -r gz; do
    name=$(echo "$gz" | sed 's|^/usr/share/doc/||; s|/|_|g; s|\.gz$||')
    [ -s "$OUT/pdfs/$name" ] || zcat "$gz" >"$OUT/pdfs/$name" || rm -f "$OUT/pdfs/$name"
done

# Every candidate with its page count, in the fixed order; corpus copies left out.
corpus_sums=$(sha256sum "$CORPUS"/*.pdf | awk '{print $1}')
{
    find /usr/share/doc -name '*.pdf' ! -path '*/texlive-doc/*'
    find /usr/share/doc/texlive-doc -name '*.pdf'
    find "$OUT/pdfs" -name '*.pdf'
} | sort -u | while read -r f; do
    sum=$(sha256sum "$f" | awk '{print $1}')
    if echo "$corpus_sums" | grep -q "$sum"; then continue; fi
    pages=$(pdfinfo "$f" 2>/dev/null | awk '/^Pages:/{print $2}')
    [ -n "$pages" ] || continue
    printf '%s\t%s\t%s\n' "$(printf %s "$f" | md5sum | cut -c1-32)" "$pages" "$f"
done | sort >"$OUT/candidates.tsv"

# The 1k library: five of the smaller corpus PDFs (the questions on the others are
# left out there) and extra files up to 200 pages.
take() { # budget -> the first files of candidates.tsv whose pages fit in it
    awk -F'\t' -v b="$1" '{ if (s + $2 <= b) { s += $2; print $3 } }' "$OUT/candidates.tsv"
}
{
    for f in wasysym txfontsdoc chemformula-manual ctex-faq debian-faq.en; do
        echo "$CORPUS/$f.pdf"
    done
    take 120
} >"$OUT/1k.list"
{ ls "$CORPUS"/*.pdf; take "$PAGES_5K"; } >"$OUT/5k.list"
{ ls "$CORPUS"/*.pdf; take "$PAGES_30K"; } >"$OUT/30k.list"

for lib in 1k 5k 30k; do
    mkdir -p "$OUT/$lib"
    echo "indexing $lib: $(wc -l <"$OUT/$lib.list") files" >&2
    xargs -d '\n' nice -n 10 "$QUIRE" index --data-dir "$OUT/$lib" <"$OUT/$lib.list" |
        tail -n 1 >&2
    if command -v sqlite3 >/dev/null; then
        echo "$lib: $(sqlite3 "$OUT/$lib/index.sqlite" 'select count(*) from documents') documents, $(sqlite3 "$OUT/$lib/index.sqlite" 'select count(*) from chunks') chunks" >&2
    fi
done
