//! Fonts as text extraction needs them: how a shown string splits into codes, what
//! text each code stands for, and how wide it is.
//!
//! Simple fonts (Type1, TrueType, Type3, the standard 14) use one byte per code, a
//! base encoding with `/Differences` (or the font program's built-in encoding), and
//! `/Widths`. Type0 fonts use the codes of their CMap (Identity-H: two bytes, code =
//! CID) and the descendant's `/W`. A ToUnicode CMap, when present, wins.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use lopdf::{Dictionary, Document, Object};

use super::cid;
use super::cmap::ToUnicode;
use super::encoding;

/// One glyph of a shown string.
#[derive(Debug, Clone)]
pub struct Glyph {
    /// Its text, possibly empty when unknown.
    pub text: Rc<str>,
    /// Advance width in text space units (1 = the font size).
    pub width: f64,
    /// The single-byte code 32, to which word spacing (`Tw`) applies.
    pub is_space_code: bool,
}

#[derive(Debug)]
enum Kind {
    Simple {
        /// Text per code, ToUnicode already applied; empty when unknown.
        text: Vec<Rc<str>>,
        widths: Vec<Option<f64>>,
    },
    Composite {
        /// Code length when the CMap gives no code space (2 for Identity).
        code_len: usize,
        /// A Uni*-UCS2/UTF16 CMap: codes are UTF-16BE.
        utf16: bool,
        /// CID to Unicode for a known character collection (Adobe-GB1, ...).
        collection: Option<&'static cid::Collection>,
        widths: HashMap<u32, f64>,
        default_width: f64,
    },
}

/// FNV-1a: the memo's keys are small integers from the file, a fast hash is enough.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type Memo = HashMap<(u8, u32), Rc<str>, BuildHasherDefault<Fnv>>;

/// A font ready to decode shown strings.
#[derive(Debug)]
pub struct Font {
    kind: Kind,
    to_unicode: Option<ToUnicode>,
    /// Text of the composite codes seen so far (CMap lookups are not free).
    memo: RefCell<Memo>,
    /// Width used when the font gives none, in text space units.
    missing_width: f64,
}

fn num(o: &Object) -> Option<f64> {
    match o {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

fn deref<'a>(doc: &'a Document, o: &'a Object) -> &'a Object {
    doc.dereference(o).map(|(_, o)| o).unwrap_or(o)
}

fn dict_get<'a>(doc: &'a Document, d: &'a Dictionary, key: &[u8]) -> Option<&'a Object> {
    d.get(key).ok().map(|o| deref(doc, o))
}

fn as_dict(o: &Object) -> Option<&Dictionary> {
    match o {
        Object::Dictionary(d) => Some(d),
        Object::Stream(s) => Some(&s.dict),
        _ => None,
    }
}

fn stream_bytes(o: &Object) -> Option<Vec<u8>> {
    match o {
        Object::Stream(s) => s.get_plain_content_with_limit(super::MAX_STREAM).ok(),
        _ => None,
    }
}

impl Font {
    /// Build a font from its dictionary; unknown or broken parts degrade to defaults.
    pub fn load(doc: &Document, dict: &Dictionary) -> Font {
        let subtype = dict_get(doc, dict, b"Subtype")
            .and_then(|o| o.as_name().ok())
            .unwrap_or(b"Type1");
        let to_unicode = dict_get(doc, dict, b"ToUnicode")
            .and_then(stream_bytes)
            .map(|b| ToUnicode::parse(&b));
        if subtype == b"Type0" {
            return Self::load_type0(doc, dict, to_unicode);
        }
        let base_font = dict_get(doc, dict, b"BaseFont")
            .and_then(|o| o.as_name().ok())
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        // "ABCDEF+Name" is a subset of "Name".
        let plain_name = base_font
            .split_once('+')
            .map(|(_, n)| n.to_string())
            .unwrap_or_else(|| base_font.clone());
        let descriptor = dict_get(doc, dict, b"FontDescriptor").and_then(as_dict);
        let flags = descriptor
            .and_then(|d| dict_get(doc, d, b"Flags"))
            .and_then(num)
            .unwrap_or(0.0) as i64;
        let symbolic_name =
            plain_name.starts_with("Symbol") || plain_name.starts_with("ZapfDingbats");

        let scale = if subtype == b"Type3" {
            dict_get(doc, dict, b"FontMatrix")
                .and_then(|o| o.as_array().ok())
                .and_then(|a| a.first().and_then(num))
                .map(f64::abs)
                .filter(|s| *s > 0.0)
                .unwrap_or(0.001)
        } else {
            0.001
        };

        // The base: /Encoding's name or /BaseEncoding, else the font's built-in one.
        let enc = dict_get(doc, dict, b"Encoding");
        let named = |n: &[u8]| encoding::base(n).map(encoding::table_map);
        let mut codes = match enc {
            Some(Object::Name(n)) => named(n),
            Some(Object::Dictionary(d)) => dict_get(doc, d, b"BaseEncoding")
                .and_then(|o| o.as_name().ok())
                .and_then(named),
            _ => None,
        }
        .unwrap_or_else(|| {
            let builtin = descriptor.and_then(|d| super::builtin::encoding(doc, d));
            match builtin {
                Some(map) => map,
                None if symbolic_name && plain_name.starts_with("Symbol") => {
                    encoding::table_map(&super::tables::SYMBOL_ENCODING)
                }
                None if subtype == b"TrueType" && flags & 4 == 0 => {
                    encoding::table_map(&super::tables::WIN_ANSI_ENCODING)
                }
                None => encoding::table_map(&super::tables::STANDARD_ENCODING),
            }
        });
        if let Some(Object::Dictionary(d)) = enc {
            if let Some(Object::Array(diffs)) = dict_get(doc, d, b"Differences") {
                encoding::apply_differences(&mut codes, diffs);
            }
        }

        let mut widths = vec![None; 256];
        let first = dict_get(doc, dict, b"FirstChar")
            .and_then(num)
            .unwrap_or(0.0) as i64;
        if let Some(Object::Array(ws)) = dict_get(doc, dict, b"Widths") {
            for (i, w) in ws.iter().enumerate() {
                let code = first + i as i64;
                if let (Ok(code), Some(w)) = (usize::try_from(code), num(deref(doc, w))) {
                    if let Some(slot) = widths.get_mut(code) {
                        *slot = Some(w * scale);
                    }
                }
            }
        }
        let missing_width = descriptor
            .and_then(|d| dict_get(doc, d, b"MissingWidth"))
            .and_then(num)
            .filter(|w| *w > 0.0)
            .map(|w| w * scale)
            .unwrap_or(if plain_name.starts_with("Courier") {
                0.6
            } else {
                0.5
            });
        let text = (0..=255u8)
            .map(|b| {
                to_unicode
                    .as_ref()
                    .and_then(|tu| tu.get(1, u32::from(b)))
                    .or_else(|| codes.get(b as usize).cloned().flatten())
                    .map(Rc::from)
                    .unwrap_or_else(|| Rc::from(""))
            })
            .collect();
        Font {
            kind: Kind::Simple { text, widths },
            to_unicode,
            memo: RefCell::default(),
            missing_width,
        }
    }

    fn load_type0(doc: &Document, dict: &Dictionary, to_unicode: Option<ToUnicode>) -> Font {
        let enc = dict_get(doc, dict, b"Encoding");
        let enc_name = enc.and_then(|o| o.as_name().ok()).unwrap_or(b"Identity-H");
        let utf16 = enc_name.starts_with(b"Uni")
            && (enc_name.windows(4).any(|w| w == b"UCS2")
                || enc_name.windows(5).any(|w| w == b"UTF16"));
        let descendant = dict_get(doc, dict, b"DescendantFonts")
            .and_then(|o| o.as_array().ok())
            .and_then(|a| a.first())
            .map(|o| deref(doc, o))
            .and_then(as_dict);
        let mut widths = HashMap::new();
        let mut default_width = 1.0;
        let mut collection = None;
        if let Some(d) = descendant {
            if let Some(dw) = dict_get(doc, d, b"DW").and_then(num) {
                default_width = dw / 1000.0;
            }
            if let Some(Object::Array(w)) = dict_get(doc, d, b"W") {
                parse_w(doc, w, &mut widths);
            }
            let ordering = dict_get(doc, d, b"CIDSystemInfo")
                .and_then(as_dict)
                .and_then(|si| dict_get(doc, si, b"Ordering"))
                .and_then(|o| o.as_str().ok());
            let identity = enc_name == b"Identity-H" || enc_name == b"Identity-V";
            if identity {
                collection = ordering.and_then(cid::collection);
            }
        }
        Font {
            kind: Kind::Composite {
                code_len: 2,
                utf16,
                collection,
                widths,
                default_width,
            },
            to_unicode,
            memo: RefCell::default(),
            missing_width: default_width,
        }
    }

    /// Split `bytes` into glyphs.
    pub fn decode(&self, bytes: &[u8], out: &mut Vec<Glyph>) {
        match &self.kind {
            Kind::Simple { text, widths } => {
                for &b in bytes {
                    let text = text
                        .get(b as usize)
                        .cloned()
                        .unwrap_or_else(|| Rc::from(""));
                    let width = widths
                        .get(b as usize)
                        .copied()
                        .flatten()
                        .unwrap_or(self.missing_width);
                    out.push(Glyph {
                        text,
                        width,
                        is_space_code: b == 32,
                    });
                }
            }
            Kind::Composite {
                code_len,
                utf16,
                collection,
                widths,
                default_width,
            } => {
                let mut i = 0;
                while i < bytes.len() {
                    let rest = bytes.get(i..).unwrap_or_default();
                    let n = self
                        .to_unicode
                        .as_ref()
                        .and_then(|tu| tu.code_len(rest))
                        .unwrap_or(*code_len)
                        .min(rest.len())
                        .max(1);
                    let code = rest
                        .iter()
                        .take(n)
                        .fold(0u32, |a, &b| a << 8 | u32::from(b));
                    i += n;
                    let key = (n as u8, code);
                    let known = self.memo.borrow().get(&key).cloned();
                    let text = known.unwrap_or_else(|| {
                        let t: Rc<str> = self
                            .to_unicode
                            .as_ref()
                            .and_then(|tu| tu.get(n as u8, code))
                            .or_else(|| {
                                if *utf16 {
                                    char::from_u32(code).map(String::from)
                                } else {
                                    collection.and_then(|c| c.text(code))
                                }
                            })
                            .map(Rc::from)
                            .unwrap_or_else(|| Rc::from(""));
                        let mut memo = self.memo.borrow_mut();
                        // Hostile files may use billions of distinct codes.
                        if memo.len() < 1 << 16 {
                            memo.insert(key, t.clone());
                        }
                        t
                    });
                    let width = widths.get(&code).copied().unwrap_or(*default_width);
                    out.push(Glyph {
                        text,
                        width,
                        is_space_code: n == 1 && code == 32,
                    });
                }
            }
        }
    }
}

/// `/W`: `c [w1 w2 ...]` or `c_first c_last w`.
fn parse_w(doc: &Document, w: &[Object], out: &mut HashMap<u32, f64>) {
    let mut i = 0;
    while i < w.len() {
        let Some(first) = w.get(i).map(|o| deref(doc, o)).and_then(num) else {
            break;
        };
        match w.get(i + 1).map(|o| deref(doc, o)) {
            Some(Object::Array(ws)) => {
                for (k, v) in ws.iter().enumerate() {
                    if let Some(v) = num(deref(doc, v)) {
                        out.insert(first as u32 + k as u32, v / 1000.0);
                    }
                }
                i += 2;
            }
            Some(o) => {
                let (Some(last), Some(v)) =
                    (num(o), w.get(i + 2).map(|o| deref(doc, o)).and_then(num))
                else {
                    break;
                };
                // Guard against absurd ranges in broken files.
                if last >= first && last - first <= 65_536.0 {
                    for c in first as u32..=last as u32 {
                        out.insert(c, v / 1000.0);
                    }
                }
                i += 3;
            }
            None => break,
        }
    }
}
