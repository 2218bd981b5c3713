//! ToUnicode CMaps: `begincodespacerange`, `beginbfchar` and `beginbfrange` (with a
//! base target or an array of targets).

use std::collections::HashMap;

/// A parsed ToUnicode CMap: character codes (with their byte length) to text.
#[derive(Debug, Default, Clone)]
pub struct ToUnicode {
    /// `(byte length, low, high)` of each code space range.
    codespace: Vec<(u8, u32, u32)>,
    chars: HashMap<(u8, u32), String>,
    ranges: Vec<Range>,
}

#[derive(Debug, Clone)]
struct Range {
    len: u8,
    lo: u32,
    hi: u32,
    target: Target,
}

#[derive(Debug, Clone)]
enum Target {
    /// The first code maps to these UTF-16 units; the next ones increment the last unit.
    Base(Vec<u16>),
    /// One text per code, in order.
    Each(Vec<String>),
}

#[derive(Debug, PartialEq)]
enum Tok {
    Hex(Vec<u8>),
    Int(u32),
    Word(Vec<u8>),
    Open,
    Close,
}

fn tokens(data: &[u8]) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&b) = data.get(i) {
        match b {
            b'%' => {
                while data.get(i).is_some_and(|&c| c != b'\n' && c != b'\r') {
                    i += 1;
                }
            }
            b'<' if data.get(i + 1) == Some(&b'<') => i += 2,
            b'>' if data.get(i + 1) == Some(&b'>') => i += 2,
            b'<' => {
                i += 1;
                let mut nibbles = Vec::new();
                while let Some(&c) = data.get(i) {
                    i += 1;
                    if c == b'>' {
                        break;
                    }
                    if let Some(v) = (c as char).to_digit(16) {
                        nibbles.push(v as u8);
                    }
                }
                if nibbles.len() % 2 == 1 {
                    nibbles.push(0);
                }
                out.push(Tok::Hex(
                    nibbles.chunks(2).map(|p| p[0] << 4 | p[1]).collect(),
                ));
            }
            b'[' => {
                out.push(Tok::Open);
                i += 1;
            }
            b']' => {
                out.push(Tok::Close);
                i += 1;
            }
            b'(' => {
                // Literal strings do not occur in the parts we read; skip them.
                let mut depth = 0;
                while let Some(&c) = data.get(i) {
                    i += 1;
                    match c {
                        b'\\' => i += 1,
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                let start = i;
                while data.get(i).is_some_and(|&c| {
                    !c.is_ascii_whitespace() && !b"<>[]()%".contains(&c)
                        || (i == start && c == b'/')
                }) {
                    i += 1;
                }
                if i == start {
                    i += 1;
                    continue;
                }
                let word = &data[start..i];
                match std::str::from_utf8(word).ok().and_then(|s| s.parse().ok()) {
                    Some(n) => out.push(Tok::Int(n)),
                    None => out.push(Tok::Word(word.to_vec())),
                }
            }
        }
    }
    out
}

fn code_of(bytes: &[u8]) -> Option<(u8, u32)> {
    if bytes.is_empty() || bytes.len() > 4 {
        return None;
    }
    let v = bytes.iter().fold(0u32, |a, &b| a << 8 | u32::from(b));
    Some((bytes.len() as u8, v))
}

fn utf16_units(bytes: &[u8]) -> Vec<u16> {
    bytes
        .chunks(2)
        .map(|p| match p {
            [a, b] => u16::from(*a) << 8 | u16::from(*b),
            [a] => u16::from(*a),
            _ => 0,
        })
        .collect()
}

fn utf16_text(units: &[u16]) -> String {
    char::decode_utf16(units.iter().copied())
        .map(|r| r.unwrap_or('\u{FFFD}'))
        .collect()
}

impl ToUnicode {
    /// Parse a CMap program. Unknown parts are skipped; nothing here fails.
    pub fn parse(data: &[u8]) -> ToUnicode {
        let toks = tokens(data);
        let mut cm = ToUnicode::default();
        let mut i = 0;
        while let Some(t) = toks.get(i) {
            i += 1;
            let Tok::Word(w) = t else { continue };
            match w.as_slice() {
                b"begincodespacerange" => {
                    while let (Some(Tok::Hex(lo)), Some(Tok::Hex(hi))) =
                        (toks.get(i), toks.get(i + 1))
                    {
                        if let (Some((len, lo)), Some((_, hi))) = (code_of(lo), code_of(hi)) {
                            cm.codespace.push((len, lo, hi));
                        }
                        i += 2;
                    }
                }
                b"beginbfchar" => {
                    while let (Some(Tok::Hex(src)), Some(dst)) = (toks.get(i), toks.get(i + 1)) {
                        if let Some(code) = code_of(src) {
                            let text = match dst {
                                Tok::Hex(d) => utf16_text(&utf16_units(d)),
                                Tok::Word(name) => {
                                    let name = String::from_utf8_lossy(name);
                                    super::encoding::glyph_text(name.trim_start_matches('/'))
                                        .unwrap_or_default()
                                }
                                _ => break,
                            };
                            cm.chars.insert(code, text);
                        }
                        i += 2;
                    }
                }
                b"beginbfrange" => {
                    while let (Some(Tok::Hex(lo)), Some(Tok::Hex(hi))) =
                        (toks.get(i), toks.get(i + 1))
                    {
                        i += 2;
                        let target = match toks.get(i) {
                            Some(Tok::Hex(d)) => {
                                i += 1;
                                Target::Base(utf16_units(d))
                            }
                            Some(Tok::Open) => {
                                i += 1;
                                let mut each = Vec::new();
                                while let Some(Tok::Hex(d)) = toks.get(i) {
                                    each.push(utf16_text(&utf16_units(d)));
                                    i += 1;
                                }
                                if toks.get(i) == Some(&Tok::Close) {
                                    i += 1;
                                }
                                Target::Each(each)
                            }
                            _ => break,
                        };
                        if let (Some((len, lo)), Some((_, hi))) = (code_of(lo), code_of(hi)) {
                            if lo <= hi {
                                cm.ranges.push(Range {
                                    len,
                                    lo,
                                    hi,
                                    target,
                                });
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        cm
    }

    /// The text of `code` (`len` bytes long), if the CMap maps it.
    pub fn get(&self, len: u8, code: u32) -> Option<String> {
        if let Some(s) = self.chars.get(&(len, code)) {
            return Some(s.clone());
        }
        // Later ranges win, as later definitions override earlier ones.
        for r in self.ranges.iter().rev() {
            if r.len != len || code < r.lo || code > r.hi {
                continue;
            }
            let off = code - r.lo;
            return match &r.target {
                Target::Base(units) => {
                    let mut units = units.clone();
                    if let Some(last) = units.last_mut() {
                        *last = last.wrapping_add(off as u16);
                    }
                    Some(utf16_text(&units))
                }
                Target::Each(v) => v.get(off as usize).cloned(),
            };
        }
        None
    }

    /// Length in bytes of the code starting at `bytes` according to the code space
    /// ranges, or `None` when the CMap has no code space.
    pub fn code_len(&self, bytes: &[u8]) -> Option<usize> {
        if self.codespace.is_empty() {
            return None;
        }
        for n in 1..=4u8 {
            let Some(prefix) = bytes.get(..n as usize) else {
                break;
            };
            let Some((_, v)) = code_of(prefix) else { break };
            if self
                .codespace
                .iter()
                .any(|&(l, lo, hi)| l == n && v >= lo && v <= hi)
            {
                return Some(n as usize);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfchar_and_bfrange() {
        let cm = ToUnicode::parse(
            b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap
            1 begincodespacerange <0000> <FFFF> endcodespacerange
            2 beginbfchar <0003> <0020> <0011> <00660069> endbfchar
            2 beginbfrange <0024> <0026> <0041> <0030> <0031> [<4E2D> <6587>] endbfrange
            endcmap",
        );
        assert_eq!(cm.get(2, 3).as_deref(), Some(" "));
        assert_eq!(cm.get(2, 0x11).as_deref(), Some("fi"));
        assert_eq!(cm.get(2, 0x25).as_deref(), Some("B"));
        assert_eq!(cm.get(2, 0x31).as_deref(), Some("文"));
        assert_eq!(cm.get(2, 0x40), None);
        assert_eq!(cm.code_len(&[0, 0x24]), Some(2));
    }
}
