//! Simple-font encodings: the PDF base encodings, `/Differences`, and glyph names
//! (the Adobe Glyph List plus the `uniXXXX`, `uXXXX[XX]` and ligature conventions).

use super::tables;

/// Code (0..=255) to text for a simple font; `None` for an unmapped code.
pub type CodeMap = Vec<Option<String>>;

/// A named base encoding (`/BaseEncoding` or `/Encoding /Name`).
pub fn base(name: &[u8]) -> Option<&'static [u16; 256]> {
    Some(match name {
        b"StandardEncoding" => &tables::STANDARD_ENCODING,
        b"WinAnsiEncoding" => &tables::WIN_ANSI_ENCODING,
        b"MacRomanEncoding" => &tables::MAC_ROMAN_ENCODING,
        b"MacExpertEncoding" => &tables::MAC_EXPERT_ENCODING,
        b"PDFDocEncoding" => &tables::PDF_DOC_ENCODING,
        b"SymbolEncoding" => &tables::SYMBOL_ENCODING,
        _ => return None,
    })
}

/// The standard encoding table as a code map, or the symbol one.
pub fn table_map(table: &[u16; 256]) -> CodeMap {
    table
        .iter()
        .map(|&u| {
            (u != 0)
                .then(|| char::from_u32(u32::from(u)).map(String::from))
                .flatten()
        })
        .collect()
}

/// The text a glyph name stands for, if it can be known from the name alone.
pub fn glyph_text(name: &str) -> Option<String> {
    if let Ok(i) = tables::GLYPHS.binary_search_by(|(n, _)| (*n).cmp(name)) {
        let u = tables::GLYPHS.get(i)?.1;
        return char::from_u32(u32::from(u)).map(String::from);
    }
    // "a.sc", "one.oldstyle", "f_i.alt": the part before the first dot names the glyph.
    if let Some((stem, _)) = name.split_once('.') {
        if !stem.is_empty() {
            return glyph_text(stem);
        }
        return None;
    }
    // "f_f_i": a ligature of its components.
    if name.contains('_') {
        let parts: Option<String> = name.split('_').map(glyph_text).collect();
        return parts;
    }
    if let Some(hex) = name.strip_prefix("uni") {
        // One or more 4-digit UTF-16 code units (AGL specification).
        if hex.len() >= 4 && hex.len() % 4 == 0 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            let units: Option<Vec<u16>> = (0..hex.len() / 4)
                .map(|i| u16::from_str_radix(hex.get(i * 4..i * 4 + 4)?, 16).ok())
                .collect();
            return String::from_utf16(&units?).ok();
        }
    }
    if let Some(hex) = name.strip_prefix('u') {
        if (4..=6).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return u32::from_str_radix(hex, 16)
                .ok()
                .and_then(char::from_u32)
                .map(String::from);
        }
    }
    // TeX fonts' "Gxx"/"gXX"/"cidNN" names carry no meaning we can recover.
    None
}

/// Apply a `/Differences` array (`[code /name /name code /name ...]`) to `map`.
pub fn apply_differences(map: &mut CodeMap, diffs: &[lopdf::Object]) {
    let mut code: i64 = 0;
    for obj in diffs {
        match obj {
            lopdf::Object::Integer(n) => code = *n,
            lopdf::Object::Real(n) => code = *n as i64,
            lopdf::Object::Name(name) => {
                if let Ok(idx) = usize::try_from(code) {
                    if let Some(slot) = map.get_mut(idx) {
                        let name = String::from_utf8_lossy(name);
                        *slot = glyph_text(&name).or_else(|| tex_glyph_text(&name));
                    }
                }
                code += 1;
            }
            _ => {}
        }
    }
}

/// Names used by TeX fonts that are not in the AGL.
fn tex_glyph_text(name: &str) -> Option<String> {
    let s = match name {
        "visiblespace" => "␣",
        "dotlessj" => "ȷ",
        "ff" => "ff",
        "ffi" => "ffi",
        "ffl" => "ffl",
        "suppress" | "compwordmark" => "",
        "perthousandzero" => "‰",
        "Ifractur" => "ℑ",
        "Rfractur" => "ℜ",
        _ => return None,
    };
    Some(s.to_string())
}

/// Replace typographic ligatures with their letters (ﬁ → fi) and drop the
/// characters that only exist for layout (soft hyphen, zero-width space).
pub fn normalize_ligatures(s: &str) -> std::borrow::Cow<'_, str> {
    let needs = s.chars().any(|c| {
        matches!(
            c,
            '\u{FB00}'..='\u{FB06}' | '\u{00AD}' | '\u{200B}' | '\u{FEFF}' | '\u{0000}'
        )
    });
    if !needs {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            '\u{00AD}' | '\u{200B}' | '\u{FEFF}' | '\u{0000}' => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn glyph_names() {
        assert_eq!(glyph_text("A").as_deref(), Some("A"));
        assert_eq!(glyph_text("fi").as_deref(), Some("\u{FB01}"));
        assert_eq!(glyph_text("uni4E2D").as_deref(), Some("中"));
        assert_eq!(glyph_text("u1F600").as_deref(), Some("😀"));
        assert_eq!(normalize_ligatures(&glyph_text("f_f_i").unwrap()), "ffi");
        assert_eq!(glyph_text("f_t").as_deref(), Some("ft"));
        assert_eq!(glyph_text("a.sc").as_deref(), Some("a"));
        assert_eq!(glyph_text("quotedblright").as_deref(), Some("\u{201D}"));
        assert_eq!(glyph_text("G12"), None);
    }

    #[test]
    fn differences_override_the_base() {
        let mut map = table_map(base(b"WinAnsiEncoding").unwrap());
        apply_differences(
            &mut map,
            &[
                lopdf::Object::Integer(65),
                lopdf::Object::Name(b"fi".to_vec()),
                lopdf::Object::Name(b"eacute".to_vec()),
            ],
        );
        assert_eq!(map[65].as_deref(), Some("\u{FB01}"));
        assert_eq!(map[66].as_deref(), Some("é"));
        assert_eq!(map[67].as_deref(), Some("C"));
        assert_eq!(normalize_ligatures("\u{FB01}nd \u{FB03}x"), "find ffix");
    }
}
