//! The content-stream interpreter: follows the graphics and text state (`cm`, `q`/`Q`,
//! `BT`, `Tf`, `Td`/`TD`/`Tm`/`T*`, `Tc`/`Tw`/`Tz`/`TL`/`Ts`, `Tj`/`TJ`/`'`/`"`) and
//! Form XObjects (`Do`), and hands every glyph with its position to the [`Layout`].

use std::collections::HashMap;
use std::rc::Rc;

use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId};

use super::font::{Font, Glyph};
use super::layout::Layout;

/// A 2D affine matrix `[a b c d e f]` (PDF's row-vector convention).
#[derive(Debug, Clone, Copy)]
struct M([f64; 6]);

impl M {
    const ID: M = M([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    /// `self` then `o`.
    fn then(&self, o: &M) -> M {
        let [a, b, c, d, e, f] = self.0;
        let [a2, b2, c2, d2, e2, f2] = o.0;
        M([
            a * a2 + b * c2,
            a * b2 + b * d2,
            c * a2 + d * c2,
            c * b2 + d * d2,
            e * a2 + f * c2 + e2,
            e * b2 + f * d2 + f2,
        ])
    }

    fn point(&self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.0;
        (a * x + c * y + e, b * x + d * y + f)
    }

    fn vector(&self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, _, _] = self.0;
        (a * x + c * y, b * x + d * y)
    }

    fn translate(tx: f64, ty: f64) -> M {
        M([1.0, 0.0, 0.0, 1.0, tx, ty])
    }
}

#[derive(Debug, Clone)]
struct State {
    ctm: M,
    font: Option<Rc<Font>>,
    size: f64,
    char_spacing: f64,
    word_spacing: f64,
    hscale: f64,
    leading: f64,
    rise: f64,
}

/// Fonts already loaded, by object id, shared by all pages of a document.
pub type FontCache = HashMap<ObjectId, Rc<Font>>;

/// How deep Form XObjects may nest (also stops reference cycles).
const MAX_DEPTH: usize = 12;

pub struct Interpreter<'a> {
    doc: &'a Document,
    fonts: &'a mut FontCache,
    pub layout: Layout,
    glyphs: Vec<Glyph>,
    /// Form XObjects being run, to stop cycles.
    forms: Vec<ObjectId>,
    /// Operators seen, to bound hostile pages.
    ops: usize,
    /// The page draws an image (an image XObject or an inline image): a scan's text
    /// may be in it.
    pub images: bool,
}

/// Per page, at most this many operators are interpreted.
const MAX_OPS: usize = 20_000_000;

fn f(o: Option<&Object>) -> f64 {
    match o {
        Some(Object::Integer(i)) => *i as f64,
        Some(Object::Real(r)) => f64::from(*r),
        _ => 0.0,
    }
}

impl<'a> Interpreter<'a> {
    pub fn new(doc: &'a Document, fonts: &'a mut FontCache) -> Self {
        Interpreter {
            doc,
            fonts,
            layout: Layout::default(),
            glyphs: Vec::new(),
            forms: Vec::new(),
            ops: 0,
            images: false,
        }
    }

    fn resolve<'o>(&'o self, o: &'o Object) -> &'o Object {
        self.doc.dereference(o).map(|(_, o)| o).unwrap_or(o)
    }

    /// Sub-dictionary `cat` (`Font`, `XObject`) of the resource dictionaries, in order.
    fn lookup(
        &self,
        resources: &[&'a Dictionary],
        cat: &[u8],
        name: &[u8],
    ) -> Option<(Option<ObjectId>, &'a Object)> {
        for res in resources {
            let Ok(sub) = res.get(cat) else { continue };
            let sub = self.doc.dereference(sub).map(|(_, o)| o).unwrap_or(sub);
            let Object::Dictionary(sub) = sub else {
                continue;
            };
            if let Ok(o) = sub.get(name) {
                let id = o.as_reference().ok();
                let o = self.doc.dereference(o).map(|(_, o)| o).unwrap_or(o);
                return Some((id, o));
            }
        }
        None
    }

    fn font(&mut self, resources: &[&'a Dictionary], name: &[u8]) -> Option<Rc<Font>> {
        let (id, obj) = self.lookup(resources, b"Font", name)?;
        if let Some(id) = id {
            if let Some(f) = self.fonts.get(&id) {
                return Some(f.clone());
            }
        }
        let dict = match obj {
            Object::Dictionary(d) => d,
            Object::Stream(s) => &s.dict,
            _ => return None,
        };
        let font = Rc::new(Font::load(self.doc, dict));
        if let Some(id) = id {
            self.fonts.insert(id, font.clone());
        }
        Some(font)
    }

    /// Run a content stream with `resources` (innermost first) from graphics state `ctm`.
    pub fn run(&mut self, data: &[u8], resources: &[&'a Dictionary], ctm: M0) -> lopdf::Result<()> {
        let mut st = State {
            ctm: M(ctm),
            font: None,
            size: 0.0,
            char_spacing: 0.0,
            word_spacing: 0.0,
            hscale: 1.0,
            leading: 0.0,
            rise: 0.0,
        };
        let mut stack: Vec<State> = Vec::new();
        let mut tm = M::ID;
        let mut tlm = M::ID;
        for op in Content::decode_iter(data) {
            let op = op?;
            self.ops += 1;
            if self.ops > MAX_OPS {
                break;
            }
            let a = &op.operands;
            match op.operator.as_str() {
                // Deeper nesting than this is hostile; its saves are dropped.
                "q" if stack.len() < 1024 => stack.push(st.clone()),
                "Q" => {
                    if let Some(s) = stack.pop() {
                        st = s;
                    }
                }
                "cm" if a.len() >= 6 => {
                    let m = M([
                        f(a.first()),
                        f(a.get(1)),
                        f(a.get(2)),
                        f(a.get(3)),
                        f(a.get(4)),
                        f(a.get(5)),
                    ]);
                    st.ctm = m.then(&st.ctm);
                }
                "BT" => {
                    tm = M::ID;
                    tlm = M::ID;
                }
                "Tf" => {
                    st.size = f(a.get(1));
                    st.font = a
                        .first()
                        .and_then(|o| o.as_name().ok())
                        .and_then(|n| self.font(resources, n));
                }
                "Tc" => st.char_spacing = f(a.first()),
                "Tw" => st.word_spacing = f(a.first()),
                "Tz" => st.hscale = f(a.first()) / 100.0,
                "TL" => st.leading = f(a.first()),
                "Ts" => st.rise = f(a.first()),
                "Td" | "TD" => {
                    let (tx, ty) = (f(a.first()), f(a.get(1)));
                    if op.operator == "TD" {
                        st.leading = -ty;
                    }
                    tlm = M::translate(tx, ty).then(&tlm);
                    tm = tlm;
                }
                "Tm" if a.len() >= 6 => {
                    tlm = M([
                        f(a.first()),
                        f(a.get(1)),
                        f(a.get(2)),
                        f(a.get(3)),
                        f(a.get(4)),
                        f(a.get(5)),
                    ]);
                    tm = tlm;
                }
                "T*" => {
                    tlm = M::translate(0.0, -st.leading).then(&tlm);
                    tm = tlm;
                }
                "Tj" => {
                    if let Some(Object::String(s, _)) = a.first() {
                        self.show(&st, &mut tm, s);
                    }
                }
                "'" | "\"" => {
                    if op.operator == "\"" {
                        st.word_spacing = f(a.first());
                        st.char_spacing = f(a.get(1));
                    }
                    tlm = M::translate(0.0, -st.leading).then(&tlm);
                    tm = tlm;
                    if let Some(Object::String(s, _)) = a.last() {
                        self.show(&st, &mut tm, s);
                    }
                }
                "TJ" => {
                    if let Some(Object::Array(items)) = a.first() {
                        for item in items {
                            match item {
                                Object::String(s, _) => self.show(&st, &mut tm, s),
                                Object::Integer(_) | Object::Real(_) => {
                                    let tx = -f(Some(item)) / 1000.0 * st.size * st.hscale;
                                    tm = M::translate(tx, 0.0).then(&tm);
                                }
                                _ => {}
                            }
                        }
                    }
                }
                "Do" => {
                    if let Some(name) = a.first().and_then(|o| o.as_name().ok()) {
                        self.form(resources, name, &st);
                    }
                }
                "BI" | "ID" | "EI" => self.images = true,
                _ => {}
            }
        }
        Ok(())
    }

    fn form(&mut self, resources: &[&'a Dictionary], name: &[u8], st: &State) {
        let Some((id, Object::Stream(stream))) = self.lookup(resources, b"XObject", name) else {
            return;
        };
        match stream.dict.get(b"Subtype").and_then(|o| o.as_name()).ok() {
            Some(b"Form") => {}
            Some(b"Image") => {
                self.images = true;
                return;
            }
            _ => return,
        }
        if self.forms.len() >= MAX_DEPTH || id.is_some_and(|id| self.forms.contains(&id)) {
            return;
        }
        let Ok(data) = stream.get_plain_content_with_limit(super::MAX_STREAM) else {
            return;
        };
        let matrix = match stream.dict.get(b"Matrix").map(|o| self.resolve(o)) {
            Ok(Object::Array(m)) if m.len() >= 6 => M([
                f(m.first()),
                f(m.get(1)),
                f(m.get(2)),
                f(m.get(3)),
                f(m.get(4)),
                f(m.get(5)),
            ]),
            _ => M::ID,
        };
        let mut inner: Vec<&'a Dictionary> = Vec::with_capacity(resources.len() + 1);
        if let Ok(r) = stream.dict.get(b"Resources") {
            if let Object::Dictionary(d) = self.doc.dereference(r).map(|(_, o)| o).unwrap_or(r) {
                inner.push(d);
            }
        }
        inner.extend_from_slice(resources);
        self.forms.push(id.unwrap_or((0, 0)));
        // A broken form loses its own text only.
        let _ = self.run(&data, &inner, matrix.then(&st.ctm).0);
        self.forms.pop();
    }

    fn show(&mut self, st: &State, tm: &mut M, bytes: &[u8]) {
        let Some(font) = st.font.clone() else { return };
        self.glyphs.clear();
        font.decode(bytes, &mut self.glyphs);
        let glyphs = std::mem::take(&mut self.glyphs);
        for g in &glyphs {
            let m = tm.then(&st.ctm);
            let w = g.width * st.size * st.hscale;
            let origin = m.point(0.0, st.rise);
            let end = m.point(w, st.rise);
            let (ux, uy) = m.vector(1.0, 0.0);
            let (vx, vy) = m.vector(0.0, 1.0);
            let size = st.size * (vx * vx + vy * vy).sqrt();
            let ulen = (ux * ux + uy * uy).sqrt();
            let dir = if ulen > 0.0 {
                (ux / ulen, uy / ulen)
            } else {
                (1.0, 0.0)
            };
            self.layout.glyph(&g.text, origin, end, dir, size.abs());
            let spacing = st.char_spacing
                + if g.is_space_code {
                    st.word_spacing
                } else {
                    0.0
                };
            let tx = (w + spacing * st.hscale).max(-1e6);
            *tm = M::translate(tx, 0.0).then(tm);
        }
        self.glyphs = glyphs;
    }
}

/// A plain matrix, for callers outside this module.
pub type M0 = [f64; 6];

/// The identity matrix.
pub const IDENTITY: M0 = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];
