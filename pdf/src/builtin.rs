//! A font program's built-in encoding, for simple fonts without `/Encoding`: the
//! `dup <code> /<name> put` lines of a Type 1 program's clear-text part.

use lopdf::{Dictionary, Document, Object};

use super::encoding::{glyph_text, CodeMap};

/// The built-in encoding of the font program in `descriptor`, if it can be read.
pub fn encoding(doc: &Document, descriptor: &Dictionary) -> Option<CodeMap> {
    let file = descriptor.get(b"FontFile").ok()?;
    let Object::Stream(s) = doc.dereference(file).ok()?.1 else {
        return None;
    };
    let data = s.get_plain_content_with_limit(super::MAX_STREAM).ok()?;
    let clear_len = s
        .dict
        .get(b"Length1")
        .ok()
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_i64().ok())
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(data.len())
        .min(data.len());
    type1_encoding(data.get(..clear_len)?)
}

/// Parse `/Encoding ... dup 65 /A put ... readonly def` from Type 1 clear text.
fn type1_encoding(clear: &[u8]) -> Option<CodeMap> {
    let start = clear.windows(9).position(|w| w == b"/Encoding")?;
    let rest = clear.get(start + 9..)?;
    let head = rest.get(..rest.len().min(40))?;
    if head.windows(16).any(|w| w == b"StandardEncoding") {
        return None;
    }
    let mut map: CodeMap = vec![None; 256];
    let text = String::from_utf8_lossy(rest);
    let mut words = text.split_ascii_whitespace().peekable();
    let mut found = false;
    while let Some(w) = words.next() {
        if w == "def" || w == "readonly" {
            break;
        }
        if w != "dup" {
            continue;
        }
        let (Some(code), Some(name)) = (words.next(), words.next()) else {
            break;
        };
        let (Ok(code), Some(name)) = (code.parse::<usize>(), name.strip_prefix('/')) else {
            continue;
        };
        if let Some(slot) = map.get_mut(code) {
            *slot = glyph_text(name);
            found = true;
        }
    }
    found.then_some(map)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_dup_put_lines() {
        let map = type1_encoding(
            b"/FontName /CMR10 def\n/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\n\
              dup 12 /fi put\ndup 65 /A put\nreadonly def\ncurrentdict end",
        )
        .unwrap();
        assert_eq!(map[12].as_deref(), Some("\u{FB01}"));
        assert_eq!(map[65].as_deref(), Some("A"));
        assert_eq!(map[66], None);
    }
}
