//! A one-page PDF written around fuzzer bytes, so that a target reaches one stage of
//! the extractor (the content-stream interpreter, a CMap) without spending its time
//! on lopdf's parser first: objects numbered from 1, a correct cross-reference table.

/// A PDF whose objects are `objects` (object 1 the catalog), each given as its body.
pub fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A stream object's body holding `data` as is.
pub fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut body = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(b"\nendstream");
    body
}

/// One page drawing `content` with fonts F1 (Helvetica), F2 (a Type0 font with
/// Identity-H and `to_unicode` as its ToUnicode CMap) and a form X1 that shows text.
pub fn page(content: &[u8], to_unicode: &[u8]) -> Vec<u8> {
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
           /Resources << /Font << /F1 5 0 R /F2 6 0 R >> /XObject << /X1 9 0 R >> >> >>"
            .to_vec(),
        stream("", content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        b"<< /Type /Font /Subtype /Type0 /BaseFont /Fuzz /Encoding /Identity-H \
           /DescendantFonts [7 0 R] /ToUnicode 8 0 R >>"
            .to_vec(),
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Fuzz \
           /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> \
           /DW 500 >>"
            .to_vec(),
        stream("", to_unicode),
        stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792] \
             /Resources << /Font << /F1 5 0 R >> >>",
            b"BT /F1 10 Tf 10 10 Td (form) Tj ET",
        ),
    ])
}

#[allow(dead_code)] // the `cmap` target brings its own
/// A ToUnicode CMap mapping two-byte codes 0001..00FF to Latin letters.
pub const PLAIN_CMAP: &[u8] = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap \
/CMapName /Fuzz def 1 begincodespacerange <0000> <FFFF> endcodespacerange \
1 beginbfrange <0001> <00FF> <0041> endbfrange endcmap CMapName currentdict /CMap defineresource pop end end";

#[allow(dead_code)] // the `content` target brings its own
/// The `cmap` target's content stream: two-byte codes shown with the fuzzed CMap's
/// font, in `Tj` and `TJ`, then Helvetica and the form.
pub const CMAP_CONTENT: &[u8] = b"BT /F2 12 Tf 72 720 Td <0001002A0041FFFF00FF> Tj \
[<00410042> -200 <0043>] TJ /F1 12 Tf (plain) Tj ET /X1 Do";
