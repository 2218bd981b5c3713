//! How long a model takes to answer on this machine, predicted from a short
//! calibration run: a prompt batch and a few generated tokens timed on the real model
//! (a few seconds at most), their tok/s, and the median compact answer predicted as
//! [`PROMPT_TOKENS`] / prompt rate + [`ANSWER_TOKENS`] / generation rate. Kept in a
//! JSON cache keyed by the CPU's model name, the thread count and the model file
//! (path, size, modification time), so a new CPU, thread count or file measures again.
//!
//! `QUIRE_CALIBRATION_SLOWDOWN=F` (a testing aid) multiplies every measured time by
//! `F`: a fake slow machine, part of the cache key.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::choose::Candidate;
use super::GgufLlm;
use crate::{Error, Result};

/// Prompt tokens of the median compact answer: the median compact prompt over the
/// corpus questions (`quire-bench answer --modes compact` over
/// `../shared/corpus/questions.jsonl`, 4 sources: ≈ 770 tokens, the same for every
/// model of the Qwen2.5 vocabulary).
pub const PROMPT_TOKENS: f64 = 770.0;
/// Generated tokens of the median compact answer, fitted (least squares) so that the
/// prediction meets the measured medians of both Qwen2.5 models on the README's
/// 2-core AMD EPYC: 0.5B 2.78 s at 397 / 77 prompt / generation tok/s
/// (770/397 + A/77 = 2.78 → A ≈ 65), 1.5B 10.88 s at 95 / 25 (→ A ≈ 69).
pub const ANSWER_TOKENS: f64 = 67.0;
/// Tokens of the timed prompt batch.
const CAL_PROMPT: usize = 128;
/// Tokens generated and timed.
const CAL_GEN: usize = 8;
/// The environment variable of the fake slow machine.
pub const SLOWDOWN_ENV: &str = "QUIRE_CALIBRATION_SLOWDOWN";

/// What a calibration is valid for: any change measures again.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Key {
    /// The CPU's model name (`/proc/cpuinfo`), else the architecture.
    pub cpu: String,
    /// Threads the model runs on.
    pub threads: usize,
    /// The model file, its size and modification time (ns since the epoch).
    pub path: String,
    pub bytes: u64,
    pub mtime_ns: u64,
    /// `QUIRE_CALIBRATION_SLOWDOWN` (1 on a real run).
    pub slowdown: f64,
}

/// One model's measured speed on this machine.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Calibration {
    pub key: Key,
    pub prompt_tok_s: f64,
    pub gen_tok_s: f64,
    /// Seconds to load the file (not in the prediction: the engine keeps the model
    /// loaded between questions).
    pub load_secs: f64,
    /// Seconds the calibration took, load included.
    pub took_secs: f64,
}

impl Calibration {
    /// The predicted median seconds of a compact answer.
    pub fn predicted_secs(&self) -> f64 {
        predict(self.prompt_tok_s, self.gen_tok_s)
    }
}

/// A measured rate as the cache keeps it: to a thousandth of a token a second. Its
/// decimal text (at most three decimals) reads back as the same f64, so a prediction
/// from the cache is the same bits as the fresh one (a rate of 17 significant digits
/// did not always: serde_json's default float parsing can miss by one unit in the last
/// place).
fn kept(rate: f64) -> f64 {
    (rate * 1000.0).round() / 1000.0
}

/// The median compact answer's seconds at these rates.
pub fn predict(prompt_tok_s: f64, gen_tok_s: f64) -> f64 {
    PROMPT_TOKENS / prompt_tok_s.max(1e-9) + ANSWER_TOKENS / gen_tok_s.max(1e-9)
}

/// The CPU's model name: `/proc/cpuinfo`'s first `model name` (or `Processor`,
/// `cpu model`), else the architecture.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                let k = k.trim();
                (k == "model name" || k == "Processor" || k == "cpu model")
                    .then(|| v.trim().to_string())
            })
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The slowdown factor from the environment: 1 when unset; a bad value is an error.
pub fn slowdown() -> Result<f64> {
    match std::env::var(SLOWDOWN_ENV) {
        Err(_) => Ok(1.0),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
            _ => Err(Error::Invalid(format!(
                "{SLOWDOWN_ENV}={v:?}: expected a positive number (a factor on measured times)"
            ))),
        },
    }
}

/// The key of `model` run on `threads` threads on this machine now.
pub fn key_for(model: &Path, threads: usize) -> Result<Key> {
    let meta = std::fs::metadata(model).map_err(|e| Error::io(model, e))?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let path = std::fs::canonicalize(model).unwrap_or_else(|_| model.to_path_buf());
    Ok(Key {
        cpu: cpu_name(),
        threads: threads.max(1),
        path: path.display().to_string(),
        bytes: meta.len(),
        mtime_ns,
        slowdown: slowdown()?,
    })
}

/// The threads a run uses: `threads`, else the widest pool this process gets.
pub fn threads_or_max(threads: Option<usize>) -> usize {
    threads.unwrap_or_else(crate::cpu::pool::max_threads).max(1)
}

/// Time `model` on `threads` threads: a warm-up, a [`CAL_PROMPT`]-token prompt, then
/// [`CAL_GEN`] generated tokens.
pub fn measure(model: &Path, threads: usize) -> Result<Calibration> {
    let key = key_for(model, threads)?;
    crate::cpu::pool::with_width(key.threads, || {
        let t = Instant::now();
        let llm = GgufLlm::load(model)?;
        let load_secs = t.elapsed().as_secs_f64();
        let ids = prompt_ids(&llm, CAL_PROMPT)?;
        // Warm-up: the weights' first touch and the allocator.
        llm.timed_run(&ids[..16], 1, false)?;
        // The faster of two runs: a machine busy for a moment (another program, a
        // build) should not make a model look slow for good.
        let (mut pp, mut gen, _) = llm.timed_run(&ids, CAL_GEN, false)?;
        let (pp2, gen2, _) = llm.timed_run(&ids, CAL_GEN, false)?;
        pp = pp.min(pp2);
        gen = gen.min(gen2);
        let f = key.slowdown;
        Ok(Calibration {
            prompt_tok_s: kept(ids.len() as f64 / (pp * f).max(1e-9)),
            gen_tok_s: kept(CAL_GEN as f64 / (gen * f).max(1e-9)),
            load_secs: load_secs * f,
            took_secs: t.elapsed().as_secs_f64() * f,
            key,
        })
    })
}

/// A prompt of exactly `n` ordinary tokens (a repeated English passage): the one
/// calibration and `quire-bench llm` time.
pub fn prompt_ids(llm: &GgufLlm, n: usize) -> Result<Vec<u32>> {
    let passage = "The GNU General Public License is a free, copyleft license for software \
                   and other kinds of works. Retrieval-augmented generation answers a question \
                   from passages found in your own documents. ";
    let tok = llm.tokenizer();
    let mut ids: Vec<u32> = Vec::new();
    if tok.add_bos() {
        ids.extend(tok.bos());
    }
    let body = tok.encode(passage, false)?;
    if body.is_empty() {
        return Err(Error::Invalid(
            "the timing passage encodes to nothing".into(),
        ));
    }
    while ids.len() < n {
        ids.extend(body.iter().take(n - ids.len()));
    }
    Ok(ids)
}

/// The calibrations kept in a data directory (`calibration.json`).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Cache {
    #[serde(skip)]
    path: PathBuf,
    entries: Vec<Calibration>,
    /// Models whose calibration failed (not a model Quire runs, say), by key: not
    /// measured again until the file, CPU or thread count changes.
    #[serde(default)]
    failures: Vec<Failure>,
}

/// A calibration that failed, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    pub key: Key,
    pub error: String,
}

impl Cache {
    /// The cache file of a data directory.
    pub fn file_in(data_dir: &Path) -> PathBuf {
        data_dir.join("calibration.json")
    }

    /// Read the cache at `path`; a missing or unreadable one is empty (it is only a
    /// cache: the next calibration rewrites it).
    pub fn open(path: &Path) -> Self {
        let mut c: Cache = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        c.path = path.to_path_buf();
        c
    }

    /// The calibration kept for exactly this key.
    pub fn get(&self, key: &Key) -> Option<&Calibration> {
        self.entries.iter().find(|c| &c.key == key)
    }

    /// Keep `c`, replacing what was kept for the same model file on the same CPU and
    /// thread count.
    pub fn put(&mut self, c: Calibration) {
        self.entries.retain(|e| {
            !(e.key.path == c.key.path
                && e.key.cpu == c.key.cpu
                && e.key.threads == c.key.threads
                && e.key.slowdown == c.key.slowdown)
        });
        self.entries.push(c);
    }

    /// Why this key's calibration failed, if it did.
    pub fn failure(&self, key: &Key) -> Option<&str> {
        self.failures
            .iter()
            .find(|f| &f.key == key)
            .map(|f| f.error.as_str())
    }

    /// Keep that `key`'s calibration failed, replacing a failure of an older key of
    /// the same file.
    pub fn put_failure(&mut self, key: Key, error: String) {
        self.failures.retain(|f| {
            !(f.key.path == key.path
                && f.key.cpu == key.cpu
                && f.key.threads == key.threads
                && f.key.slowdown == key.slowdown)
        });
        self.failures.push(Failure { key, error });
    }

    /// Every kept calibration.
    pub fn entries(&self) -> &[Calibration] {
        &self.entries
    }

    /// Write the cache (atomically: a temporary file renamed over it).
    pub fn save(&self) -> Result<()> {
        if let Some(d) = self.path.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Invalid(format!("calibration cache: {e}")))?;
        std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::io(&self.path, e))
    }
}

/// `model`'s calibration on `threads` threads: the cached one when its key still
/// holds, else measured now and kept. Returns it and whether it came from the cache.
pub fn calibrated(cache: &mut Cache, model: &Path, threads: usize) -> Result<(Calibration, bool)> {
    let key = key_for(model, threads)?;
    if let Some(c) = cache.get(&key) {
        return Ok((c.clone(), true));
    }
    if let Some(e) = cache.failure(&key) {
        return Err(Error::Invalid(e.to_string()));
    }
    let c = match measure(model, threads) {
        Ok(c) => c,
        Err(e) => {
            cache.put_failure(key, e.to_string());
            cache.save()?;
            return Err(e);
        }
    };
    cache.put(c.clone());
    cache.save()?;
    Ok((c, false))
}

/// One model's calibration, or why it failed.
pub type Outcome = std::result::Result<(Calibration, bool), String>;

/// Every model of `models` calibrated (from the cache where it holds), each as the
/// choice's [`Candidate`] beside its calibration (and whether it was cached).
/// `progress(i, model)` is called before each one is measured.
pub fn candidates(
    cache: &mut Cache,
    models: &[PathBuf],
    threads: usize,
    progress: &mut dyn FnMut(usize, &Path),
) -> Vec<(Candidate, Outcome)> {
    models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            progress(i, m);
            let out = calibrated(cache, m, threads).map_err(|e| e.to_string());
            let cand = Candidate {
                name: m
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                bytes: std::fs::metadata(m).map(|x| x.len()).unwrap_or(0),
                predicted: out
                    .as_ref()
                    .map(|(c, _)| c.predicted_secs())
                    .map_err(Clone::clone),
                estimated: false,
            };
            (cand, out)
        })
        .collect()
}

/// A model not installed, `name`, predicted from an installed model's calibration:
/// its rates scaled by the two models' measured rates on the reference machine
/// ([`super::choose::QUALITY`]). `None` when either is not in that table. The
/// installed model closest in measured speed is the best base; the caller passes
/// the calibrations it has.
pub fn estimate(name: &str, installed: &[Calibration]) -> Option<Candidate> {
    let target = super::choose::measured(name)?;
    let base = installed
        .iter()
        .filter_map(|c| {
            let file = Path::new(&c.key.path)
                .file_name()?
                .to_string_lossy()
                .into_owned();
            Some((c, super::choose::measured(&file)?))
        })
        .min_by(|a, b| {
            let d = |m: &super::choose::Measured| (m.gen_tok_s / target.gen_tok_s).ln().abs();
            d(a.1).total_cmp(&d(b.1))
        })?;
    let (c, m) = base;
    let pp = c.prompt_tok_s * target.prompt_tok_s / m.prompt_tok_s;
    let gen = c.gen_tok_s * target.gen_tok_s / m.gen_tok_s;
    Some(Candidate {
        name: target.file.to_string(),
        bytes: 0,
        predicted: Ok(predict(pp, gen)),
        estimated: true,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kept_rates_read_back_from_the_cache_as_the_same_bits() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Rates from 0.01 to 10,000 tokens a second, 53 random bits each.
            let raw = (seed >> 11) as f64 / (1u64 << 53) as f64 * 10_000.0 + 0.01;
            let rate = kept(raw);
            let text = serde_json::to_string(&rate).unwrap();
            let back: f64 = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_bits(), rate.to_bits(), "{raw} -> {text}");
            assert!(
                (rate - raw).abs() <= 0.0005 + raw * 1e-15,
                "{raw} -> {rate}"
            );
        }
    }

    fn cal(key: Key) -> Calibration {
        Calibration {
            key,
            prompt_tok_s: 400.0,
            gen_tok_s: 80.0,
            load_secs: 0.1,
            took_secs: 1.0,
        }
    }

    fn file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn the_prediction_meets_the_measured_medians_it_was_fitted_on() {
        // README "Models": 0.5B 397 / 77 tok/s, 2.78 s; 1.5B 95 / 25 tok/s, 10.88 s.
        assert!(
            (predict(397.0, 77.0) - 2.78).abs() < 0.1,
            "{}",
            predict(397.0, 77.0)
        );
        assert!(
            (predict(95.0, 25.0) - 10.88).abs() < 0.2,
            "{}",
            predict(95.0, 25.0)
        );
    }

    #[test]
    fn a_cached_calibration_holds_for_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let m = file(dir.path(), "m.gguf", b"model one");
        let cache_file = Cache::file_in(dir.path());
        let key = key_for(&m, 2).unwrap();
        let mut cache = Cache::open(&cache_file);
        cache.put(cal(key.clone()));
        cache.save().unwrap();

        let cache = Cache::open(&cache_file);
        assert_eq!(cache.get(&key).map(|c| c.gen_tok_s), Some(80.0));
        // Another thread count.
        assert!(cache.get(&key_for(&m, 1).unwrap()).is_none());
        // Another CPU.
        let other_cpu = Key {
            cpu: format!("{} (other)", key.cpu),
            ..key.clone()
        };
        assert!(cache.get(&other_cpu).is_none());
        // The file changed: its size, then only its modification time.
        std::fs::write(&m, b"model one, rewritten").unwrap();
        assert!(cache.get(&key_for(&m, 2).unwrap()).is_none());
        let f = std::fs::File::options().write(true).open(&m).unwrap();
        f.set_len(key.bytes).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        let k = key_for(&m, 2).unwrap();
        assert_eq!(k.bytes, key.bytes);
        assert!(cache.get(&k).is_none());
        // Another path with the same bytes.
        let m2 = file(dir.path(), "m2.gguf", b"model one");
        assert!(cache.get(&key_for(&m2, 2).unwrap()).is_none());
    }

    #[test]
    fn put_replaces_the_stale_entry_of_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let m = file(dir.path(), "m.gguf", b"x");
        let mut cache = Cache::open(&Cache::file_in(dir.path()));
        let key = key_for(&m, 2).unwrap();
        cache.put(cal(key.clone()));
        cache.put(cal(Key {
            mtime_ns: key.mtime_ns + 1,
            ..key.clone()
        }));
        cache.put(cal(Key {
            threads: 1,
            ..key.clone()
        }));
        assert_eq!(cache.entries().len(), 2);
    }

    #[test]
    fn a_corrupt_cache_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = file(dir.path(), "calibration.json", b"{not json");
        assert!(Cache::open(&p).entries().is_empty());
    }

    #[test]
    fn a_model_not_installed_is_estimated_from_an_installed_ones_rates() {
        let mut c = cal(Key {
            cpu: "x".into(),
            threads: 2,
            path: "/m/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf".into(),
            bytes: 1,
            mtime_ns: 1,
            slowdown: 1.0,
        });
        c.prompt_tok_s = 397.0;
        c.gen_tok_s = 77.0;
        let e = estimate("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", &[c.clone()]).unwrap();
        assert!(e.estimated);
        // The same machine as the reference: the reference's prediction.
        assert!((e.predicted.unwrap() - predict(95.0, 25.0)).abs() < 1e-9);
        // Twice as fast here: half the time.
        c.prompt_tok_s *= 2.0;
        c.gen_tok_s *= 2.0;
        let e = estimate("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", &[c.clone()]).unwrap();
        assert!((e.predicted.unwrap() - predict(95.0, 25.0) / 2.0).abs() < 1e-9);
        assert!(estimate("unknown.gguf", &[c.clone()]).is_none());
        c.key.path = "/m/unknown.gguf".into();
        assert!(estimate("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", &[c]).is_none());
    }

    #[test]
    fn the_cpu_has_a_name() {
        assert!(!cpu_name().is_empty());
    }
}
