#!/usr/bin/env bash
# Refresh ui/vendor/pdfjs/ from the npm registry: PDF.js (pdfjs-dist, Apache-2.0), the
# in-app PDF viewer's engine, shipped with the UI so that it works offline — nothing is
# fetched at run time. Only what the viewer uses is kept: the display library and its
# worker (modern builds, no source maps), the Adobe CMaps (text of CJK PDFs), the
# standard fonts, the JavaScript decoders for JPEG 2000 and JBIG2 images (the viewer
# runs without WebAssembly), and the licenses. Not kept: the scripting sandbox and
# QuickJS (Quire never runs a PDF's JavaScript), the viewer components, the types.
#   scripts/vendor-pdfjs.sh [version]
set -euo pipefail
version="${1:-6.5.438}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="$repo/ui/vendor/pdfjs"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "pdfjs-dist@$version" >/dev/null && tar xzf pdfjs-dist-*.tgz)
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
