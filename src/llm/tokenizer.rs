//! A tokenizer built from a GGUF file's own metadata, giving llama.cpp's token ids.
//!
//! Two vocabularies are supported, as `tokenizer.ggml.model` names them:
//! - `gpt2`: byte-level BPE with merges, split first by the pre-tokenizer regexes
//!   llama.cpp uses for `tokenizer.ggml.pre` (`smollm`, `llama-bpe`, `qwen2`, ...);
//! - `llama`: SentencePiece (scores, `▁` for spaces, `<0xXX>` byte fallback), as in
//!   Gemma and TinyLlama.
//!
//! Special tokens are split out of the text first, longest first, like llama.cpp's
//! `tokenizer_st_partition`: control tokens only when special parsing is asked for,
//! user-defined tokens always.

use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use candle_core::quantized::gguf_file::Value;

use super::gguf::GgufFile;
use crate::{Error, Result};

const TYPE_NORMAL: i32 = 1;
const TYPE_UNKNOWN: i32 = 2;
const TYPE_CONTROL: i32 = 3;
const TYPE_USER_DEFINED: i32 = 4;
const TYPE_BYTE: i32 = 6;

enum Model {
    Bpe {
        /// (left id, right id) -> (rank, merged id)
        merges: HashMap<(u32, u32), (u32, u32)>,
        /// Applied in order; each splits the pieces left by the previous.
        regexes: Vec<fancy_regex::Regex>,
        /// byte -> id of the token for its byte-level character.
        byte_ids: [Option<u32>; 256],
        /// char of the byte-level alphabet -> byte.
        unbyte: HashMap<char, u8>,
        /// byte -> its char of the byte-level alphabet.
        chars: Box<[char; 256]>,
        /// A piece that is a token as a whole is that token, merges or not
        /// (llama.cpp's `ignore_merges`, Llama 3's pre-tokenizer).
        ignore_merges: bool,
    },
    Spm {
        scores: Vec<f32>,
        byte_ids: [Option<u32>; 256],
        add_space_prefix: bool,
    },
}

/// A tokenizer from GGUF metadata.
pub struct Tokenizer {
    model: Model,
    tokens: Vec<String>,
    types: Vec<i32>,
    ids: HashMap<String, u32>,
    /// Control / user-defined / unknown tokens, longest text first.
    specials: Vec<u32>,
    bos: Option<u32>,
    eos: Option<u32>,
    add_bos: bool,
    eog: Vec<u32>,
    unk: Option<u32>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab", &self.tokens.len())
            .field("bos", &self.bos)
            .field("eos", &self.eos)
            .finish()
    }
}

/// The pre-tokenizer regexes llama.cpp uses for a `tokenizer.ggml.pre` value.
fn pre_regexes(pre: &str) -> Vec<&'static str> {
    const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
    const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral" | "dbrx" | "smaug-bpe" => {
            vec![LLAMA3]
        }
        "qwen2" | "stablelm2" | "deepseek-r1-qwen" | "hunyuan" | "grok-2" => vec![QWEN2],
        "starcoder" | "refact" | "command-r" | "smollm" | "codeshell" | "exaone" | "minerva-7b" => {
            vec![r"\p{N}", GPT2]
        }
        "gpt-2" | "gpt2" | "mpt" | "olmo" | "jais" | "trillion" => vec![GPT2],
        "falcon" => vec![r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"],
        _ => vec![r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
    }
}

/// Whether llama.cpp looks a whole piece up before merging for this
/// `tokenizer.ggml.pre` (`ignore_merges`), and adds BOS unless the file says otherwise.
fn is_llama3_pre(pre: &str) -> bool {
    matches!(
        pre,
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral"
    )
}

/// GPT-2's byte to printable-character table.
fn byte_chars() -> [char; 256] {
    let mut out = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..256u32 {
        let printable =
            (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
        let c = if printable {
            b
        } else {
            n += 1;
            255 + n
        };
        out[b as usize] = char::from_u32(c).unwrap_or('\u{FFFD}');
    }
    out
}

fn meta_strings<'a>(g: &'a GgufFile, key: &str) -> Result<Vec<&'a str>> {
    let v = g
        .get(key)
        .ok_or_else(|| Error::model_format(&g.path, format!("metadata key {key} is missing")))?;
    let arr = v
        .to_vec()
        .map_err(|e| Error::model_format(&g.path, format!("metadata {key}: {e}")))?;
    arr.iter()
        .map(|x| {
            x.to_string()
                .map(|s| s.as_str())
                .map_err(|e| Error::model_format(&g.path, format!("metadata {key}: {e}")))
        })
        .collect()
}

fn value_i64(v: &Value) -> Option<i64> {
    Some(match v {
        Value::U8(x) => *x as i64,
        Value::I8(x) => *x as i64,
        Value::U16(x) => *x as i64,
        Value::I16(x) => *x as i64,
        Value::U32(x) => *x as i64,
        Value::I32(x) => *x as i64,
        Value::U64(x) => *x as i64,
        Value::I64(x) => *x,
        _ => return None,
    })
}

fn meta_bool(g: &GgufFile, key: &str) -> Option<bool> {
    g.get(key).and_then(|v| v.to_bool().ok())
}

fn meta_id(g: &GgufFile, key: &str, n: usize) -> Option<u32> {
    g.get(key)
        .and_then(value_i64)
        .filter(|&i| i >= 0 && (i as usize) < n)
        .map(|i| i as u32)
}

impl Tokenizer {
    /// Build the tokenizer of the GGUF file at `path` (reads the header only).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::from_gguf(&GgufFile::open(path)?)
    }

    /// Build the tokenizer from an opened GGUF header.
    pub fn from_gguf(g: &GgufFile) -> Result<Self> {
        let bad = |reason: String| Error::model_format(&g.path, reason);
        let model_name = g.get_str("tokenizer.ggml.model")?;
        let tokens: Vec<String> = meta_strings(g, "tokenizer.ggml.tokens")?
            .into_iter()
            .map(str::to_owned)
            .collect();
        let n = tokens.len();
        if n == 0 || n > u32::MAX as usize {
            return Err(bad(format!("tokenizer has {n} tokens")));
        }
        let mut types: Vec<i32> = match g.get("tokenizer.ggml.token_type") {
            Some(v) => {
                let arr = v
                    .to_vec()
                    .map_err(|e| bad(format!("metadata tokenizer.ggml.token_type: {e}")))?;
                let t: Vec<i32> = arr
                    .iter()
                    .map(|x| value_i64(x).unwrap_or(1) as i32)
                    .collect();
                if t.len() != n {
                    return Err(bad(format!(
                        "tokenizer.ggml.token_type has {} entries for {n} tokens",
                        t.len()
                    )));
                }
                t
            }
            None => vec![TYPE_NORMAL; n],
        };
        let mut ids = HashMap::with_capacity(n);
        for (i, t) in tokens.iter().enumerate() {
            // The first id of a duplicated text wins, as in llama.cpp.
            ids.entry(t.clone()).or_insert(i as u32);
        }
        let eog = end_of_generation(g, &ids, &mut types, n);
        let mut specials: Vec<u32> = (0..n as u32)
            .filter(|&i| {
                let t = types[i as usize];
                (t == TYPE_CONTROL || t == TYPE_USER_DEFINED || t == TYPE_UNKNOWN)
                    && !tokens[i as usize].is_empty()
            })
            .collect();
        specials.sort_by(|a, b| tokens[*b as usize].len().cmp(&tokens[*a as usize].len()));

        let model = match model_name {
            "gpt2" => {
                let pre = g.get_str("tokenizer.ggml.pre").unwrap_or("default");
                let regexes = pre_regexes(pre)
                    .into_iter()
                    .map(|r| {
                        fancy_regex::Regex::new(r)
                            .map_err(|e| bad(format!("pre-tokenizer regex for {pre}: {e}")))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let table = byte_chars();
                let mut byte_ids = [None; 256];
                let mut unbyte = HashMap::with_capacity(256);
                for (b, c) in table.iter().enumerate() {
                    byte_ids[b] = ids.get(&c.to_string()).copied();
                    unbyte.insert(*c, b as u8);
                }
                let merge_strs = meta_strings(g, "tokenizer.ggml.merges")?;
                let mut merges = HashMap::with_capacity(merge_strs.len());
                for (rank, m) in merge_strs.iter().enumerate() {
                    // Split on the first space that is not at position 0.
                    let Some(pos) = m
                        .char_indices()
                        .skip(1)
                        .find(|(_, c)| *c == ' ')
                        .map(|x| x.0)
                    else {
                        return Err(bad(format!("merge {rank} has no space: {m:?}")));
                    };
                    let (l, r) = (&m[..pos], &m[pos + 1..]);
                    let (Some(&li), Some(&ri)) = (ids.get(l), ids.get(r)) else {
                        continue;
                    };
                    let Some(&mi) = ids.get(&format!("{l}{r}")) else {
                        continue;
                    };
                    merges.entry((li, ri)).or_insert((rank as u32, mi));
                }
                Model::Bpe {
                    merges,
                    regexes,
                    byte_ids,
                    unbyte,
                    chars: Box::new(table),
                    ignore_merges: is_llama3_pre(pre),
                }
            }
            "llama" => {
                let scores_v = g
                    .get("tokenizer.ggml.scores")
                    .ok_or_else(|| bad("metadata key tokenizer.ggml.scores is missing".into()))?
                    .to_vec()
                    .map_err(|e| bad(format!("metadata tokenizer.ggml.scores: {e}")))?;
                let scores: Vec<f32> = scores_v.iter().map(|v| v.to_f32().unwrap_or(0.0)).collect();
                if scores.len() != n {
                    return Err(bad(format!(
                        "tokenizer.ggml.scores has {} entries for {n} tokens",
                        scores.len()
                    )));
                }
                let mut byte_ids = [None; 256];
                for (b, slot) in byte_ids.iter_mut().enumerate() {
                    *slot = ids.get(&format!("<0x{b:02X}>")).copied();
                }
                Model::Spm {
                    scores,
                    byte_ids,
                    add_space_prefix: meta_bool(g, "tokenizer.ggml.add_space_prefix")
                        .unwrap_or(true),
                }
            }
            other => {
                return Err(bad(format!(
                    "unsupported tokenizer model {other:?} (supported: gpt2, llama)"
                )))
            }
        };

        let bos = meta_id(g, "tokenizer.ggml.bos_token_id", n);
        let eos = meta_id(g, "tokenizer.ggml.eos_token_id", n);
        let default_add_bos = match &model {
            Model::Spm { .. } => true,
            Model::Bpe { ignore_merges, .. } => *ignore_merges,
        };
        let add_bos = meta_bool(g, "tokenizer.ggml.add_bos_token").unwrap_or(default_add_bos)
            && bos.is_some();
        Ok(Self {
            model,
            tokens,
            types,
            ids,
            specials,
            bos,
            eos,
            add_bos,
            eog,
            unk: meta_id(g, "tokenizer.ggml.unknown_token_id", n),
        })
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// Beginning-of-sequence token, if any.
    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    /// End-of-sequence token, if any.
    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    /// Whether prompts start with the BOS token.
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// Whether `id` ends generation.
    pub fn is_eog(&self, id: u32) -> bool {
        self.eog.contains(&id)
    }

    /// The end-of-generation tokens.
    pub fn eog_tokens(&self) -> &[u32] {
        &self.eog
    }

    /// The id of the token whose text is exactly `text`.
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// The raw vocabulary text of `id`.
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(|s| s.as_str())
    }

    /// Tokens of a prompt: BOS when the model wants it, special tokens parsed.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        if self.add_bos {
            if let Some(b) = self.bos {
                out.push(b);
            }
        }
        out.extend(self.encode(text, true)?);
        Ok(out)
    }

    /// Tokens of `text` without BOS/EOS; `parse_special` turns control-token texts
    /// such as `<|im_start|>` into their ids (llama.cpp's `parse_special`).
    pub fn encode(&self, text: &str, parse_special: bool) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut prev_special = true;
        for frag in self.partition(text, parse_special) {
            match frag {
                Frag::Token(id) => {
                    out.push(id);
                    prev_special = true;
                }
                Frag::Text(s) => {
                    match &self.model {
                        Model::Bpe { .. } => self.bpe(s, &mut out)?,
                        Model::Spm {
                            add_space_prefix, ..
                        } => {
                            let mut t = String::with_capacity(s.len() + 3);
                            if *add_space_prefix && prev_special {
                                t.push(' ');
                            }
                            t.push_str(s);
                            self.spm(&t.replace(' ', "\u{2581}"), &mut out);
                        }
                    }
                    prev_special = false;
                }
            }
        }
        Ok(out)
    }

    fn partition<'t>(&self, text: &'t str, parse_special: bool) -> Vec<Frag<'t>> {
        let mut frags = vec![Frag::Text(text)];
        if text.is_empty() {
            return Vec::new();
        }
        for &id in &self.specials {
            let ty = self.types[id as usize];
            if !parse_special && (ty == TYPE_CONTROL || ty == TYPE_UNKNOWN) {
                continue;
            }
            let pat = self.tokens[id as usize].as_str();
            if !frags
                .iter()
                .any(|f| matches!(f, Frag::Text(s) if s.contains(pat)))
            {
                continue;
            }
            let mut next = Vec::with_capacity(frags.len() + 2);
            for f in frags {
                match f {
                    Frag::Text(s) => {
                        let mut rest = s;
                        while let Some(pos) = rest.find(pat) {
                            if pos > 0 {
                                next.push(Frag::Text(&rest[..pos]));
                            }
                            next.push(Frag::Token(id));
                            rest = &rest[pos + pat.len()..];
                        }
                        if !rest.is_empty() {
                            next.push(Frag::Text(rest));
                        }
                    }
                    tok => next.push(tok),
                }
            }
            frags = next;
        }
        frags
    }

    fn bpe(&self, text: &str, out: &mut Vec<u32>) -> Result<()> {
        let Model::Bpe {
            merges,
            regexes,
            byte_ids,
            chars,
            ignore_merges,
            ..
        } = &self.model
        else {
            return Ok(());
        };
        // Split by each regex in turn; text between matches stays a piece of its own.
        let mut words: Vec<&str> = vec![text];
        for re in regexes {
            let mut next = Vec::with_capacity(words.len() * 2);
            for w in words {
                let mut last = 0;
                for m in re.find_iter(w) {
                    let m = m.map_err(|e| Error::Invalid(format!("tokenizer regex: {e}")))?;
                    if m.start() > last {
                        next.push(&w[last..m.start()]);
                    }
                    if m.end() > m.start() {
                        next.push(m.as_str());
                    }
                    last = m.end();
                }
                if last < w.len() {
                    next.push(&w[last..]);
                }
            }
            words = next;
        }
        let mut syms: Vec<Option<u32>> = Vec::new();
        let mut whole = String::new();
        for w in words {
            if *ignore_merges {
                whole.clear();
                whole.extend(w.bytes().map(|b| chars[b as usize]));
                if let Some(&id) = self.ids.get(&whole) {
                    out.push(id);
                    continue;
                }
            }
            syms.clear();
            syms.extend(w.bytes().map(|b| byte_ids[b as usize]));
            // Merge the lowest-ranked adjacent pair, leftmost first, until none is left.
            loop {
                let mut best: Option<(u32, usize, u32)> = None;
                for i in 0..syms.len().saturating_sub(1) {
                    if let (Some(l), Some(r)) = (syms[i], syms[i + 1]) {
                        if let Some(&(rank, merged)) = merges.get(&(l, r)) {
                            if best.is_none_or(|(br, _, _)| rank < br) {
                                best = Some((rank, i, merged));
                            }
                        }
                    }
                }
                let Some((_, i, merged)) = best else { break };
                syms[i] = Some(merged);
                syms.remove(i + 1);
            }
            for s in &syms {
                match s {
                    Some(id) => out.push(*id),
                    None => out.extend(self.unk),
                }
            }
        }
        Ok(())
    }

    fn spm(&self, text: &str, out: &mut Vec<u32>) {
        let Model::Spm {
            scores, byte_ids, ..
        } = &self.model
        else {
            return;
        };
        // Symbols are byte ranges of the text, linked like llama.cpp's llm_symbol.
        struct Sym {
            start: usize,
            len: usize,
            prev: isize,
            next: isize,
        }
        #[derive(PartialEq)]
        struct Bigram {
            score: f32,
            left: usize,
            right: usize,
            size: usize,
        }
        impl Eq for Bigram {}
        impl PartialOrd for Bigram {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for Bigram {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                // Highest score first, then leftmost.
                self.score
                    .total_cmp(&o.score)
                    .then_with(|| o.left.cmp(&self.left))
            }
        }
        let mut syms: Vec<Sym> = Vec::new();
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let count = chars.len();
        for (k, (start, c)) in chars.into_iter().enumerate() {
            syms.push(Sym {
                start,
                len: c.len_utf8(),
                prev: k as isize - 1,
                next: if k + 1 == count { -1 } else { k as isize + 1 },
            });
        }
        let mut heap = BinaryHeap::new();
        let try_add = |heap: &mut BinaryHeap<Bigram>, syms: &[Sym], l: isize, r: isize| {
            if l < 0 || r < 0 {
                return;
            }
            let (l, r) = (l as usize, r as usize);
            let s = &text[syms[l].start..syms[r].start + syms[r].len];
            if let Some(&id) = self.ids.get(s) {
                heap.push(Bigram {
                    score: scores[id as usize],
                    left: l,
                    right: r,
                    size: s.len(),
                });
            }
        };
        for i in 1..syms.len() {
            try_add(&mut heap, &syms, i as isize - 1, i as isize);
        }
        while let Some(b) = heap.pop() {
            let (ln, rn) = (syms[b.left].len, syms[b.right].len);
            if ln == 0 || rn == 0 || ln + rn != b.size {
                continue;
            }
            syms[b.left].len += rn;
            syms[b.right].len = 0;
            let rnext = syms[b.right].next;
            syms[b.left].next = rnext;
            if rnext >= 0 {
                syms[rnext as usize].prev = b.left as isize;
            }
            let lprev = syms[b.left].prev;
            try_add(&mut heap, &syms, lprev, b.left as isize);
            try_add(&mut heap, &syms, b.left as isize, rnext);
        }
        let mut i: isize = if syms.is_empty() { -1 } else { 0 };
        while i >= 0 {
            let s = &syms[i as usize];
            let piece = &text[s.start..s.start + s.len];
            match self.ids.get(piece) {
                Some(&id) => out.push(id),
                None => {
                    for b in piece.bytes() {
                        match byte_ids[b as usize] {
                            Some(id) => out.push(id),
                            None => out.extend(self.unk),
                        }
                    }
                }
            }
            i = s.next;
        }
    }

    /// The bytes token `id` stands for in generated text; control tokens give none.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        let Some(text) = self.tokens.get(id as usize) else {
            return Vec::new();
        };
        let ty = self.types[id as usize];
        if ty == TYPE_CONTROL || ty == TYPE_UNKNOWN {
            return Vec::new();
        }
        match &self.model {
            Model::Bpe { unbyte, .. } => {
                if ty == TYPE_USER_DEFINED {
                    return text.as_bytes().to_vec();
                }
                let mut out = Vec::with_capacity(text.len());
                for c in text.chars() {
                    match unbyte.get(&c) {
                        Some(b) => out.push(*b),
                        None => {
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        }
                    }
                }
                out
            }
            Model::Spm { .. } => {
                if ty == TYPE_BYTE {
                    if let Some(h) = text.strip_prefix("<0x").and_then(|s| s.strip_suffix('>')) {
                        if let Ok(b) = u8::from_str_radix(h, 16) {
                            return vec![b];
                        }
                    }
                }
                text.replace('\u{2581}', " ").into_bytes()
            }
        }
    }

    /// The text of `ids` (invalid UTF-8 is replaced).
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|&i| self.token_bytes(i)).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

enum Frag<'t> {
    Text(&'t str),
    Token(u32),
}

/// Turns a stream of token bytes into text without ever splitting a UTF-8 character.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Add bytes; returns the text that is complete so far.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let good = e.valid_up_to();
                    // Safe: from_utf8 said these bytes are valid.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..good]));
                    match e.error_len() {
                        // An incomplete character at the end: keep it for later.
                        None => {
                            self.pending.drain(..good);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..good + bad);
                        }
                    }
                }
            }
        }
    }

    /// Whatever is left at the end (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}

/// The end-of-generation tokens, as llama.cpp's `llama_vocab::load` finds them (its
/// `special_eog_ids`): the fill-in-the-middle pad, repo and file-separator tokens
/// (from the metadata, else by their text), the tokens whose text is a known end
/// marker, whatever their type, and the eos, eot and eom ids of the metadata (eot,
/// when the metadata has none, is the first known end-of-turn text). A text-matched
/// token that is not a control token becomes one, as in llama.cpp.
fn end_of_generation(
    g: &GgufFile,
    ids: &HashMap<String, u32>,
    types: &mut [i32],
    n: usize,
) -> Vec<u32> {
    let by_text = |texts: &[&str]| texts.iter().find_map(|t| ids.get(*t).copied());
    let mut eog: Vec<u32> = Vec::new();
    let add = |id: u32, eog: &mut Vec<u32>| {
        if !eog.contains(&id) {
            eog.push(id);
        }
    };
    let fim = [
        (
            "tokenizer.ggml.fim_pad_token_id",
            &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"][..],
        ),
        (
            "tokenizer.ggml.fim_rep_token_id",
            &[
                "<|fim_repo|>",
                "<|repo_name|>",
                "<fim-repo>",
                "<REPO>",
                "<reponame>",
            ][..],
        ),
        ("tokenizer.ggml.fim_sep_token_id", &["<|file_sep|>"][..]),
    ];
    for (key, texts) in fim {
        let id = meta_id(g, key, n).or_else(|| {
            let id = by_text(texts)?;
            promote_to_control(types, id);
            Some(id)
        });
        if let Some(id) = id {
            add(id, &mut eog);
        }
    }
    const END_MARKERS: &[&str] = &[
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
    ];
    for t in END_MARKERS {
        if let Some(&id) = ids.get(*t) {
            promote_to_control(types, id);
            add(id, &mut eog);
        }
    }
    const END_OF_TURN: &[&str] = &[
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "<|end_of_text|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "<end_of_utterance>",
    ];
    let eot = meta_id(g, "tokenizer.ggml.eot_token_id", n).or_else(|| by_text(END_OF_TURN));
    let eom = meta_id(g, "tokenizer.ggml.eom_token_id", n).or_else(|| by_text(&["<|eom_id|>"]));
    for id in [meta_id(g, "tokenizer.ggml.eos_token_id", n), eot, eom]
        .into_iter()
        .flatten()
    {
        add(id, &mut eog);
    }
    eog
}

fn promote_to_control(types: &mut [i32], id: u32) {
    if let Some(t) = types.get_mut(id as usize) {
        if *t != TYPE_CONTROL {
            *t = TYPE_CONTROL;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stream_never_splits_a_character() {
        let text = "中文 ok 🙂";
        let mut s = Utf8Stream::default();
        let mut out = String::new();
        for b in text.as_bytes() {
            let piece = s.push(&[*b]);
            assert!(!piece.contains('\u{FFFD}'));
            out.push_str(&piece);
        }
        out.push_str(&s.finish());
        assert_eq!(out, text);
    }

    #[test]
    fn utf8_stream_replaces_invalid_bytes() {
        let mut s = Utf8Stream::default();
        assert_eq!(s.push(&[b'a', 0xff, b'b']), "a\u{FFFD}b");
        assert_eq!(s.push(&[0xe4]), "");
        assert_eq!(s.finish(), "\u{FFFD}");
    }

    #[test]
    fn byte_table_is_a_bijection() {
        let t = byte_chars();
        let set: std::collections::HashSet<char> = t.iter().copied().collect();
        assert_eq!(set.len(), 256);
        assert_eq!(t[b' ' as usize], '\u{120}');
        assert_eq!(t[b'\n' as usize], '\u{10A}');
    }
}
