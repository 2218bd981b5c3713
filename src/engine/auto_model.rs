//! The model setting `auto`: the model chosen for this machine from the installed
//! models' cached calibrations ([`crate::llm::machine`]), and the background thread
//! that calibrates the models that have none. Until every installed model is
//! calibrated, `auto` stands for the default model (else the first installed one)
//! and says so.
//!
//! Calibration never blocks a question: it runs on one thread of its own, waits
//! before each model while a question is being answered ([`crate::cpu::priority`]),
//! and otherwise accepts contention: a question asked while a model is being timed is
//! answered at once, both sharing the CPUs for those few seconds (the calibration
//! keeps the faster of its two timed runs, which a short overlap rarely spoils).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{lock, Engine};
use crate::llm::calibrate;
use crate::llm::machine::{self, AutoModel, Calibrate, MachineChoice};
use crate::Result;

/// The background calibration's state, shared with its thread.
#[derive(Default)]
pub(super) struct Calibrating(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// A thread is calibrating now.
    running: bool,
    /// The model being calibrated now.
    current: Option<String>,
}

/// Whether the background calibration runs, and on which model.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CalibrationStatus {
    pub running: bool,
    pub current: Option<String>,
}

impl Engine {
    /// The threads a local model runs on, the key of its calibration.
    fn model_threads(&self) -> usize {
        calibrate::threads_or_max(None)
    }

    /// The installed models, their predicted answer times from the cached
    /// calibrations (never measured here) and the choice among them.
    pub fn model_choice(&self) -> Result<MachineChoice> {
        machine::for_machine(
            self.data_dir(),
            &crate::models::gguf_files(),
            self.model_threads(),
            Calibrate::CacheOnly,
            &[],
        )
    }

    /// What `model = "auto"` stands for now (starting the background calibration
    /// when a model waits for one).
    pub fn auto_model(&self) -> Result<AutoModel> {
        let choice = self.model_choice()?;
        self.calibrate_in_background(&choice);
        choice.resolve_auto()
    }

    /// The GGUF file the `model` setting names, `auto` resolved.
    pub fn model_path(&self) -> Result<PathBuf> {
        let model = self.settings().model;
        if model.trim() == crate::models::AUTO {
            return Ok(self.auto_model()?.path);
        }
        crate::models::find(&model)
    }

    /// The model setting as a file name: the setting's own, or what `auto` stands
    /// for now (what answers are signed with).
    pub(super) fn model_name(&self, setting: &str) -> String {
        if setting.trim() == crate::models::AUTO {
            if let Ok(a) = self.auto_model() {
                return a.name;
            }
        }
        super::models::setting_name(setting)
    }

    /// The background calibration now.
    pub fn calibration_status(&self) -> CalibrationStatus {
        let s = lock(&self.calibrating.0);
        CalibrationStatus {
            running: s.running,
            current: s.current.clone(),
        }
    }

    /// Start calibrating, on one background thread, the installed models `choice`
    /// has no calibration for, when the setting is `auto` (and no model server
    /// answers instead) and no such thread runs yet.
    pub(super) fn calibrate_in_background(&self, choice: &MachineChoice) {
        if self.settings().model.trim() != crate::models::AUTO || self.remote_llm().is_some() {
            return;
        }
        let files = choice.uncalibrated();
        if files.is_empty() {
            return;
        }
        let state = self.calibrating.0.clone();
        {
            let mut s = lock(&state);
            if s.running {
                return;
            }
            s.running = true;
        }
        let data_dir = self.data_dir().to_path_buf();
        let threads = self.model_threads();
        let priority = self.priority.clone();
        let spawned = std::thread::Builder::new()
            .name("quire-calibrate".into())
            .spawn({
                let state = state.clone();
                move || {
                    for f in &files {
                        // Questions first: wait while one is being answered.
                        priority.wait_background(|| false);
                        lock(&state).current = Some(
                            f.file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default(),
                        );
                        // Read again before each model: another process (`quire
                        // models`) may have calibrated it meanwhile. A failure is kept
                        // in the cache (the model is then unusable), so it is not
                        // measured again and again.
                        let mut cache =
                            calibrate::Cache::open(&calibrate::Cache::file_in(&data_dir));
                        if let Err(e) = calibrate::calibrated(&mut cache, f, threads) {
                            eprintln!("quire: calibrating {}: {e}", f.display());
                        }
                    }
                    let mut s = lock(&state);
                    s.running = false;
                    s.current = None;
                }
            });
        if let Err(e) = spawned {
            eprintln!("quire: cannot start the calibration thread: {e}");
            lock(&state).running = false;
        }
    }
}
