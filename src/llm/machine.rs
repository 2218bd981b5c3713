//! The model chosen for this machine, driven in one place for `quire models` and the
//! engine's `model = "auto"`: every installed GGUF's calibration ([`super::calibrate`]:
//! from the data directory's cache, or measured now when asked), and the choice among
//! them ([`super::choose`]). Reading the cache alone never measures: a model without a
//! calibration is then [`Reason::NotCalibrated`] and left out of the choice, and `auto`
//! stands for the default model until every installed one is calibrated.

use std::path::{Path, PathBuf};

use super::calibrate::{self, Cache, Calibration};
use super::choose::{self, Candidate, Reason};
use crate::{Error, Result};

/// One model as the choice saw it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Entry {
    /// Its name, path (none for a model not installed, estimated), size and
    /// predicted seconds.
    pub candidate: Candidate,
    pub path: Option<PathBuf>,
    /// Its calibration on this machine, and whether it came from the cache.
    pub calibration: Option<Calibration>,
    pub cached: Option<bool>,
    /// Why it was or was not chosen.
    pub reason: Reason,
}

impl Entry {
    /// Whether it has a calibration (or an estimate) on this machine.
    pub fn calibrated(&self) -> bool {
        self.reason != Reason::NotCalibrated && self.candidate.predicted.is_ok()
    }
}

/// The models and the one chosen.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MachineChoice {
    pub cpu: String,
    pub threads: usize,
    pub budget_secs: f64,
    pub models: Vec<Entry>,
    /// Index into `models`.
    pub chosen: Option<usize>,
}

/// What `model = "auto"` stands for now.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AutoModel {
    /// The model file's name and path.
    pub name: String,
    pub path: PathBuf,
    /// Whether it is the choice from calibrations (false: the stand-in while some
    /// installed model is not yet calibrated).
    pub calibrated: bool,
    /// Why this one, in words.
    pub why: String,
}

impl MachineChoice {
    /// The chosen model's name.
    pub fn chosen_name(&self) -> Option<&str> {
        self.chosen.map(|i| self.models[i].candidate.name.as_str())
    }

    /// The installed models without a calibration for this machine's key.
    pub fn uncalibrated(&self) -> Vec<PathBuf> {
        self.models
            .iter()
            .filter(|e| e.reason == Reason::NotCalibrated)
            .filter_map(|e| e.path.clone())
            .collect()
    }

    /// What `auto` resolves to: the choice once every installed model is calibrated
    /// (or failed); until then [`crate::models::DEFAULT_LLM`] if installed, else the
    /// first installed model, saying that calibration is pending. An error when no
    /// installed model can be used.
    pub fn resolve_auto(&self) -> Result<AutoModel> {
        let installed: Vec<&Entry> = self.models.iter().filter(|e| e.path.is_some()).collect();
        let pick = |e: &Entry, calibrated: bool, why: String| AutoModel {
            name: e.candidate.name.clone(),
            path: e.path.clone().unwrap_or_default(),
            calibrated,
            why,
        };
        if installed.iter().any(|e| e.reason == Reason::NotCalibrated) {
            let usable = |e: &&&Entry| !matches!(e.reason, Reason::Unusable { .. });
            let stand_in = installed
                .iter()
                .filter(usable)
                .find(|e| e.candidate.name == crate::models::DEFAULT_LLM)
                .or_else(|| installed.iter().find(usable))
                .ok_or_else(no_model)?;
            let pending = self.uncalibrated().len();
            return Ok(pick(
                stand_in,
                false,
                format!(
                    "not yet calibrated ({pending} model{} to measure): {} until calibration finishes",
                    if pending == 1 { "" } else { "s" },
                    if stand_in.candidate.name == crate::models::DEFAULT_LLM {
                        "the default model"
                    } else {
                        "the first installed model"
                    }
                ),
            ));
        }
        match self.chosen.map(|i| &self.models[i]) {
            Some(e) if e.path.is_some() => Ok(pick(e, true, e.reason.to_string())),
            _ => Err(no_model()),
        }
    }
}

fn no_model() -> Error {
    Error::Invalid(
        "model \"auto\": no installed GGUF model can be used (run `models/fetch.sh`, or put a \
         GGUF file in models/)"
            .into(),
    )
}

/// How [`for_machine`] gets each model's speed.
pub enum Calibrate<'a> {
    /// From the cache only: a model without one is [`Reason::NotCalibrated`].
    CacheOnly,
    /// Measured now where the cache does not hold (a few seconds a model), with
    /// `progress(i, model)` called before each.
    Run(&'a mut dyn FnMut(usize, &Path)),
}

/// The models `files` on `threads` threads, their calibrations kept in `data_dir`,
/// and the choice among them; `consider` adds models not installed, estimated from
/// the installed ones' calibrations (an error when one cannot be).
pub fn for_machine(
    data_dir: &Path,
    files: &[PathBuf],
    threads: usize,
    how: Calibrate<'_>,
    consider: &[String],
) -> Result<MachineChoice> {
    calibrate::slowdown()?;
    let threads = threads.max(1);
    let mut cache = Cache::open(&Cache::file_in(data_dir));
    let name = |m: &Path| {
        m.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    // Each installed model, and whether it waits for its calibration.
    let (mut models, pending): (Vec<Entry>, Vec<bool>) = match how {
        Calibrate::Run(progress) => calibrate::candidates(&mut cache, files, threads, progress)
            .into_iter()
            .zip(files)
            .map(|((candidate, out), path)| {
                let (calibration, cached) = match out {
                    Ok((c, cached)) => (Some(c), Some(cached)),
                    Err(_) => (None, None),
                };
                let e = Entry {
                    candidate,
                    path: Some(path.clone()),
                    calibration,
                    cached,
                    reason: Reason::Chosen, // the choice's, below
                };
                (e, false)
            })
            .unzip(),
        Calibrate::CacheOnly => files
            .iter()
            .map(|m| {
                let key = calibrate::key_for(m, threads);
                let cal = key.as_ref().ok().and_then(|k| cache.get(k)).cloned();
                // A failure kept, or a file Quire cannot run: unusable, not pending.
                let failed = match &key {
                    Err(e) => Some(e.to_string()),
                    Ok(k) => cache
                        .failure(k)
                        .map(str::to_string)
                        .or_else(|| crate::llm::catalog::describe(m).error),
                };
                let pending = cal.is_none() && failed.is_none();
                let predicted = match (&cal, failed) {
                    (Some(c), _) => Ok(c.predicted_secs()),
                    (None, Some(e)) => Err(e),
                    (None, None) => Err("not yet calibrated".into()),
                };
                let e = Entry {
                    candidate: Candidate {
                        name: name(m),
                        bytes: std::fs::metadata(m).map(|x| x.len()).unwrap_or(0),
                        predicted,
                        estimated: false,
                    },
                    path: Some(m.clone()),
                    cached: cal.as_ref().map(|_| true),
                    calibration: cal,
                    reason: if pending {
                        Reason::NotCalibrated
                    } else {
                        Reason::Chosen // the choice's, below
                    },
                };
                (e, pending)
            })
            .unzip(),
    };
    let cals: Vec<Calibration> = models
        .iter()
        .filter_map(|e| e.calibration.clone())
        .collect();
    for n in consider {
        if models.iter().any(|e| &e.candidate.name == n) {
            continue;
        }
        let Some(candidate) = calibrate::estimate(n, &cals) else {
            return Err(Error::Invalid(format!(
                "--consider {n}: no estimate (it, and an installed model, must be among the \
                 measured models: {})",
                choose::QUALITY
                    .iter()
                    .map(|m| m.file)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        models.push(Entry {
            candidate,
            path: None,
            calibration: None,
            cached: None,
            reason: Reason::Chosen, // replaced below
        });
    }
    // The choice among the models with a calibration (or a failure to report).
    let among: Vec<usize> = (0..models.len())
        .filter(|&i| !pending.get(i).copied().unwrap_or(false))
        .collect();
    let cands: Vec<Candidate> = among.iter().map(|&i| models[i].candidate.clone()).collect();
    let choice = choose::choose(&cands);
    for (j, &i) in among.iter().enumerate() {
        models[i].reason = choice.reasons[j].clone();
    }
    Ok(MachineChoice {
        cpu: calibrate::cpu_name(),
        threads,
        budget_secs: choose::BUDGET_SECS,
        chosen: choice.chosen.map(|j| among[j]),
        models,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::models::{DEFAULT_LLM, SMOLLM2};

    fn entry(name: &str, predicted: Option<f64>, reason: Reason) -> Entry {
        Entry {
            candidate: Candidate {
                name: name.into(),
                bytes: 1,
                predicted: predicted.ok_or_else(|| "not yet calibrated".to_string()),
                estimated: false,
            },
            path: Some(PathBuf::from("/m").join(name)),
            calibration: None,
            cached: None,
            reason,
        }
    }

    fn machine(models: Vec<Entry>, chosen: Option<usize>) -> MachineChoice {
        MachineChoice {
            cpu: "x".into(),
            threads: 2,
            budget_secs: choose::BUDGET_SECS,
            models,
            chosen,
        }
    }

    #[test]
    fn auto_is_the_default_model_until_every_model_is_calibrated() {
        let m = machine(
            vec![
                entry(SMOLLM2, Some(1.0), Reason::Chosen),
                entry(DEFAULT_LLM, None, Reason::NotCalibrated),
            ],
            Some(0),
        );
        let a = m.resolve_auto().unwrap();
        assert_eq!(a.name, DEFAULT_LLM);
        assert!(!a.calibrated);
        assert!(
            a.why.starts_with("not yet calibrated (1 model to measure)"),
            "{}",
            a.why
        );
        assert_eq!(
            m.uncalibrated(),
            vec![PathBuf::from("/m").join(DEFAULT_LLM)]
        );
    }

    #[test]
    fn without_the_default_model_auto_is_the_first_usable_one_until_calibrated() {
        let m = machine(
            vec![
                entry(
                    "bad.gguf",
                    None,
                    Reason::Unusable {
                        error: "not a GGUF file".into(),
                    },
                ),
                entry("b.gguf", None, Reason::NotCalibrated),
                entry("c.gguf", None, Reason::NotCalibrated),
            ],
            None,
        );
        let a = m.resolve_auto().unwrap();
        assert_eq!(a.name, "b.gguf");
        assert!(a.why.contains("the first installed model"), "{}", a.why);
    }

    #[test]
    fn once_calibrated_auto_is_the_choice_with_its_reason() {
        let m = machine(
            vec![
                entry(
                    DEFAULT_LLM,
                    Some(9.0),
                    Reason::Slower {
                        than: SMOLLM2.into(),
                    },
                ),
                entry(
                    SMOLLM2,
                    Some(7.0),
                    Reason::ChosenFastest {
                        predicted: 7.0,
                        budget: 6.0,
                    },
                ),
            ],
            Some(1),
        );
        let a = m.resolve_auto().unwrap();
        assert_eq!((a.name.as_str(), a.calibrated), (SMOLLM2, true));
        assert!(a.why.contains("no model fits 6 s"), "{}", a.why);
        assert!(m.uncalibrated().is_empty());
    }

    #[test]
    fn no_usable_model_is_a_clear_error() {
        let bad = Reason::Unusable { error: "x".into() };
        let m = machine(vec![entry("bad.gguf", None, bad)], None);
        let e = m.resolve_auto().unwrap_err().to_string();
        assert!(e.contains("no installed GGUF model can be used"), "{e}");
        assert!(machine(vec![], None).resolve_auto().is_err());
    }

    #[test]
    fn reading_the_cache_never_measures_and_a_file_that_is_no_model_is_unusable() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("junk.gguf");
        std::fs::write(&f, b"not a model").unwrap();
        let m = for_machine(dir.path(), &[f], 2, Calibrate::CacheOnly, &[]).unwrap();
        assert_eq!(m.models.len(), 1);
        assert!(
            matches!(m.models[0].reason, Reason::Unusable { .. }),
            "{m:?}"
        );
        assert!(m.uncalibrated().is_empty());
        assert_eq!(m.chosen, None);
        // Nothing was measured, so nothing was written.
        assert!(!Cache::file_in(dir.path()).exists());
    }
}
