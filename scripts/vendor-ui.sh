#!/usr/bin/env bash
# Refresh ui/vendor/ from the npm registry: the UI's two libraries, shipped with it so
# that it works offline — nothing is fetched at run time.
#
# PDF.js (pdfjs-dist, Apache-2.0), the in-app PDF viewer's engine, in ui/vendor/pdfjs/. Only what the viewer uses is kept: the display library and its
# worker (modern builds, no source maps), the Adobe CMaps (text of CJK PDFs), the
# standard fonts, the JavaScript decoders for JPEG 2000 and JBIG2 images (the viewer
# runs without WebAssembly), and the licenses. Not kept: the scripting sandbox and
# QuickJS (Quire never runs a PDF's JavaScript), the viewer components, the types.
#
# markdown-it (MIT), the Markdown parser of answers (its tokens only: ui/js/markdown.js
# builds the elements), in ui/vendor/markdown-it/: its self-contained browser module.
#   scripts/vendor-ui.sh
set -euo pipefail
version="6.5.438"
mdit="15.0.3"
repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="$repo/ui/vendor/pdfjs"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "pdfjs-dist@$version" >/dev/null && tar xzf "pdfjs-dist-$version.tgz")
src="$tmp/package"
rm -rf "$dest"
mkdir -p "$dest/wasm"
cp "$src/build/pdf.min.mjs" "$src/build/pdf.worker.min.mjs" "$src/LICENSE" "$dest/"
cp -r "$src/cmaps" "$src/standard_fonts" "$dest/"
cp "$src/wasm/openjpeg_nowasm_fallback.js" "$src/wasm/jbig2_nowasm_fallback.js" \
   "$src/wasm/LICENSE_OPENJPEG" "$src/wasm/LICENSE_PDFJS_OPENJPEG" \
   "$src/wasm/LICENSE_JBIG2" "$src/wasm/LICENSE_PDFJS_JBIG2" "$dest/wasm/"
# The map comments point at files not shipped.
sed -i 's|//# sourceMappingURL=.*$||' "$dest/pdf.min.mjs" "$dest/pdf.worker.min.mjs"
echo "pdfjs-dist $version" > "$dest/VERSION"
du -sh "$dest"

md="$repo/ui/vendor/markdown-it"
(cd "$tmp" && rm -rf package && npm pack --silent "markdown-it@$mdit" >/dev/null && tar xzf "markdown-it-$mdit.tgz")
rm -rf "$md"
mkdir -p "$md"
cp "$tmp/package/dist/browser/markdown-it.esm.min.mjs" "$md/markdown-it.min.mjs"
cp "$tmp/package/LICENSE" "$md/"
sed -i 's|//# sourceMappingURL=.*$||' "$md/markdown-it.min.mjs"
echo "markdown-it $mdit" > "$md/VERSION"
du -sh "$md"
