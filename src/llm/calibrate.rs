//! How long a model takes to answer on this machine, predicted from a short
//! calibration run: a prompt batch and a few generated tokens timed on the real model
//! (a few seconds at most), their tok/s, and the median compact answer predicted as
//! [`PROMPT_TOKENS`] / prompt rate + the model's answer length ([`answer_tokens`]) /
//! generation rate. Kept in a
//! JSON cache keyed by the CPU (its model name, family, model and stepping, and the
//! kernels run on it), the thread count, the model file (path, size, modification
//! time) and the program (its executable, and the build: version, size, time), so a
//! new CPU, thread count, file or build measures again; the app and the CLI keep
//! one entry each.
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
/// Generated tokens of the median compact answer of a model not measured
/// ([`choose::QUALITY`](super::choose::QUALITY) keeps each measured model's own): the
/// one length once fitted to both Qwen2.5 models (0.5B 2.78 s at 397 / 77 prompt /
/// generation tok/s → 65, 1.5B 10.88 s at 95 / 25 → 69), between the 41 and 103
/// tokens they were since measured to write.
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
    /// What tells two CPUs of one name apart ([`cpu_id`]): a cloud's "AMD EPYC" is
    /// a Zen 3 without AVX-512 or a Zen 4 with it. Empty in a cache written before
    /// it was kept, which measures again.
    #[serde(default)]
    pub cpu_id: String,
    /// The program that measured ([`program`]: its executable's path) and its build
    /// ([`build`]): a new build may have faster kernels, so it measures again. The
    /// app and the `quire` CLI keep one calibration each, side by side.
    #[serde(default)]
    pub program: String,
    #[serde(default)]
    pub build: String,
    /// Threads the model runs on.
    pub threads: usize,
    /// The model file, its size and modification time (ns since the epoch).
    pub path: String,
    pub bytes: u64,
    pub mtime_ns: u64,
    /// `QUIRE_CALIBRATION_SLOWDOWN` (1 on a real run).
    pub slowdown: f64,
}

impl Key {
    /// Whether `other` is the same program's key for the same model file, CPU name,
    /// thread count and slowdown: a newer key replaces it in the cache.
    fn same_slot(&self, other: &Key) -> bool {
        self.path == other.path
            && self.cpu == other.cpu
            && self.threads == other.threads
            && self.slowdown == other.slowdown
            && self.program == other.program
    }
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
        let name = super::model::file_name(Path::new(&self.key.path));
        predict(self.prompt_tok_s, self.gen_tok_s, answer_tokens(&name))
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

/// The median compact answer's seconds at these rates, for an answer of
/// `answer_tokens` generated tokens.
pub fn predict(prompt_tok_s: f64, gen_tok_s: f64, answer_tokens: f64) -> f64 {
    PROMPT_TOKENS / prompt_tok_s.max(1e-9) + answer_tokens / gen_tok_s.max(1e-9)
}

/// The generated tokens of the median compact answer of the model file `name`: its
/// measured length, else [`ANSWER_TOKENS`].
pub fn answer_tokens(name: &str) -> f64 {
    super::choose::measured(name).map_or(ANSWER_TOKENS, |m| m.answer_tokens)
}

/// The CPU's model name: `/proc/cpuinfo`'s first `model name` (or `Processor`,
/// `cpu model`), else the architecture.
pub fn cpu_name() -> String {
    cpuinfo_field(&["model name", "Processor", "cpu model"])
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The value of the first `/proc/cpuinfo` line whose key is one of `keys` (the file
/// read once a process: every model's key asks).
fn cpuinfo_field(keys: &[&str]) -> Option<String> {
    static INFO: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let info = INFO
        .get_or_init(|| std::fs::read_to_string("/proc/cpuinfo").ok())
        .as_deref()?;
    info.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        keys.contains(&k.trim()).then(|| v.trim().to_string())
    })
}

/// What tells two CPUs of one model name apart: `/proc/cpuinfo`'s family, model and
/// stepping, and the kernels this process runs the models on (`avx512-vnni`,
/// `avx2`, `portable`: `QUIRE_NO_VNNI` changes it).
pub fn cpu_id() -> String {
    let field = |key: &str| cpuinfo_field(&[key]).unwrap_or_else(|| "?".into());
    format!(
        "family {} model {} stepping {}, {} kernels",
        field("cpu family"),
        field("model"),
        field("stepping"),
        crate::cpu::Kernels::here().name()
    )
}

/// This program: its executable's path.
pub fn program() -> String {
    static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROGRAM.get_or_init(exe_path).clone()
}

fn exe_path() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "unknown executable".into())
}

/// This program's build: its version and its executable's size and modification
/// time, as they were when the process first asked (a file replaced under a running
/// program is not the build that runs). A rebuilt program may run the models faster,
/// so it measures again.
pub fn build() -> String {
    static BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILD.get_or_init(exe_build).clone()
}

fn exe_build() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| {
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{} bytes, modified {mtime}", m.len())
        })
        .unwrap_or_else(|| "unknown size and time".into());
    format!("quire {}, {exe}", env!("CARGO_PKG_VERSION"))
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
        cpu_id: cpu_id(),
        program: program(),
        build: build(),
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

    /// Keep `c`, replacing what the same program kept for the same model file on the
    /// same CPU and thread count (an older build's, another CPU's of that name).
    pub fn put(&mut self, c: Calibration) {
        self.entries.retain(|e| !e.key.same_slot(&c.key));
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
        self.failures.retain(|f| !f.key.same_slot(&key));
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
/// its rates scaled by the two models' measured rates on the reference machine of
/// this CPU's kernels ([`super::choose::QUALITY`]). `None` when either is not in that
/// table. The installed model closest in measured speed is the best base; the caller
/// passes the calibrations it has.
pub fn estimate(name: &str, installed: &[Calibration]) -> Option<Candidate> {
    estimate_on(name, installed, crate::cpu::Kernels::here())
}

/// [`estimate`] with the reference rates of kernels `k`.
pub fn estimate_on(
    name: &str,
    installed: &[Calibration],
    k: crate::cpu::Kernels,
) -> Option<Candidate> {
    let measured = super::choose::measured(name)?;
    let target = measured.rates(k);
    let base = installed
        .iter()
        .filter_map(|c| {
            let file = Path::new(&c.key.path)
                .file_name()?
                .to_string_lossy()
                .into_owned();
            Some((c, super::choose::measured(&file)?.rates(k)))
        })
        .min_by(|a, b| {
            let d = |m: &super::choose::Rates| (m.gen_tok_s / target.gen_tok_s).ln().abs();
            d(&a.1).total_cmp(&d(&b.1))
        })?;
    let (c, m) = base;
    let pp = c.prompt_tok_s * target.prompt_tok_s / m.prompt_tok_s;
    let gen = c.gen_tok_s * target.gen_tok_s / m.gen_tok_s;
    Some(Candidate {
        name: measured.file.to_string(),
        bytes: 0,
        predicted: Ok(predict(pp, gen, measured.answer_tokens)),
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
    fn the_prediction_meets_the_measured_medians() {
        // 2-core AMD EPYC Zen 4, 2026-12-05 (README "How close the prediction is"):
        // the calibration's rates, then the median compact answer over the corpus
        // questions but A14 (`quire-bench answer --modes compact`).
        let cases = [
            (
                "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                493.273,
                71.548,
                2.30,
            ),
            (
                "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                197.587,
                31.056,
                7.05,
            ),
        ];
        for (name, pp, gen, measured) in cases {
            let p = predict(pp, gen, answer_tokens(name));
            assert!(
                (p / measured - 1.0).abs() < 0.10,
                "{name}: {p} s, measured {measured} s"
            );
        }
        // The 1.5B measured over 6 s is predicted over 6 s (one length for all said 6.05).
        let (_, pp, gen, _) = cases[1];
        assert!(predict(pp, gen, answer_tokens(cases[1].0)) > 6.0);
        // A model not measured takes the one length.
        assert_eq!(answer_tokens("unknown.gguf"), ANSWER_TOKENS);
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
        // A CPU of the same name that is another model (a Zen 3 for a Zen 4).
        let same_name = Key {
            cpu_id: format!("{} (other)", key.cpu_id),
            ..key.clone()
        };
        assert!(cache.get(&same_name).is_none());
        // Another build of the program, and another program.
        let rebuilt = Key {
            build: format!("{} (rebuilt)", key.build),
            ..key.clone()
        };
        assert!(cache.get(&rebuilt).is_none());
        let app = Key {
            program: "/usr/bin/quire-app".into(),
            ..key.clone()
        };
        assert!(cache.get(&app).is_none());
        // A cache written before the CPU id and the build were kept measures again.
        let mut old: serde_json::Value = serde_json::to_value(&key).unwrap();
        old.as_object_mut().unwrap().remove("cpu_id");
        old.as_object_mut().unwrap().remove("program");
        old.as_object_mut().unwrap().remove("build");
        let old: Key = serde_json::from_value(old).unwrap();
        assert!(cache.get(&old).is_none());
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
        // A rebuilt program replaces its own entry; another program (the app beside
        // the CLI) keeps one of its own, so the two do not measure in turn.
        cache.put(cal(Key {
            build: "rebuilt".into(),
            ..key.clone()
        }));
        assert_eq!(cache.entries().len(), 2);
        let app = Key {
            program: "/usr/bin/quire-app".into(),
            ..key.clone()
        };
        cache.put(cal(app.clone()));
        assert_eq!(cache.entries().len(), 3);
        assert!(cache.get(&app).is_some());
    }

    #[test]
    fn a_corrupt_cache_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = file(dir.path(), "calibration.json", b"{not json");
        assert!(Cache::open(&p).entries().is_empty());
    }

    #[test]
    fn a_model_not_installed_is_estimated_from_an_installed_ones_rates() {
        use crate::cpu::Kernels;
        use crate::llm::choose::measured;
        const Q15: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
        const Q05: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
        let mut c = cal(Key {
            cpu: "x".into(),
            cpu_id: "x".into(),
            program: "x".into(),
            build: "x".into(),
            threads: 2,
            path: format!("/m/{Q05}"),
            bytes: 1,
            mtime_ns: 1,
            slowdown: 1.0,
        });
        for k in [Kernels::Avx512Vnni, Kernels::Avx2] {
            let (base, target) = (
                measured(Q05).unwrap().rates(k),
                measured(Q15).unwrap().rates(k),
            );
            c.prompt_tok_s = base.prompt_tok_s;
            c.gen_tok_s = base.gen_tok_s;
            let e = estimate_on(Q15, &[c.clone()], k).unwrap();
            assert!(e.estimated);
            // The same machine as the reference: the reference's prediction.
            let same = predict(target.prompt_tok_s, target.gen_tok_s, 103.0);
            assert!((e.predicted.unwrap() - same).abs() < 1e-9);
            // Twice as fast here: half the time.
            c.prompt_tok_s *= 2.0;
            c.gen_tok_s *= 2.0;
            let e = estimate_on(Q15, &[c.clone()], k).unwrap();
            assert!((e.predicted.unwrap() - same / 2.0).abs() < 1e-9);
        }
        // The kernels' own ratio: the same installed rates estimate the 1.5B
        // differently on AVX-512 VNNI and on AVX2.
        let vnni = estimate_on(Q15, &[c.clone()], Kernels::Avx512Vnni).unwrap();
        let avx2 = estimate_on(Q15, &[c.clone()], Kernels::Avx2).unwrap();
        assert_ne!(vnni.predicted, avx2.predicted);
        assert!(estimate("unknown.gguf", &[c.clone()]).is_none());
        c.key.path = "/m/unknown.gguf".into();
        assert!(estimate(Q15, &[c]).is_none());
    }

    #[test]
    fn the_cpu_has_a_name_an_id_and_the_program_a_build() {
        assert!(!cpu_name().is_empty());
        let id = cpu_id();
        assert!(
            id.ends_with(&format!("{} kernels", crate::cpu::Kernels::here().name())),
            "{id}"
        );
        #[cfg(target_os = "linux")]
        assert!(id.starts_with("family ") && !id.contains('?'), "{id}");
        assert!(!program().is_empty());
        let b = build();
        assert!(
            b.starts_with("quire ") && b.contains(" bytes, modified "),
            "{b}"
        );
    }
}
