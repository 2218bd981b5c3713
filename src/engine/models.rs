//! The models a person chooses in Settings: the lists, loading the embedding model
//! the settings name, and keeping the index's vectors in step with it (the index
//! records which model made each vector; a mismatch is a clear error until the index
//! is re-embedded).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::{lock, Cancel, Engine, IndexEmbedder, IndexEvent, SettingsView};
use crate::embed::bert::{BertEmbedder, BertFiles};
use crate::embed::Embedder;
use crate::llm::{Chosen, DeviceChoice, LoadOptions};
use crate::{Error, Result};

/// Chunks embedded and written per step of a re-embedding (a stop takes effect
/// between steps; each step is one transaction).
const REEMBED_STEP: usize = 64;

/// The name a model setting stands for: its file or folder name (the setting may be
/// a path). The index records embedders by this name.
pub(super) fn setting_name(setting: &str) -> String {
    Path::new(setting)
        .file_name()
        .map_or_else(|| setting.to_owned(), |n| n.to_string_lossy().into_owned())
}

impl Engine {
    /// The OpenAI-compatible model server to answer with: the engine's configuration's
    /// (`--llm-server`),
    /// else the settings' (`llm_server`); `None`: the local GGUF.
    pub fn remote_llm(&self) -> Option<crate::llm::RemoteConfig> {
        self.config
            .llm_server
            .clone()
            .or_else(|| self.settings().remote_llm())
    }

    /// Settings and the choices the dialog offers: every GGUF and embedding model in
    /// the model folders, described from their headers, and which embedding models
    /// made the index.
    pub fn settings_view(&self) -> SettingsView {
        let mut models: Vec<_> = crate::models::gguf_files()
            .iter()
            .map(|p| crate::llm::catalog::describe(p))
            .collect();
        let mut embedders: Vec<_> = crate::models::embedder_dirs()
            .iter()
            .map(|p| crate::embed::catalog::describe(p))
            .collect();
        let settings = self.settings();
        // A setting that names a path outside the model folders is listed too.
        if settings.model.trim() != crate::models::AUTO
            && !models
                .iter()
                .any(|m| m.name == setting_name(&settings.model))
        {
            if let Ok(p) = crate::models::find(&settings.model) {
                models.push(crate::llm::catalog::describe(&p));
            }
        }
        if !embedders
            .iter()
            .any(|m| m.name == setting_name(&settings.embedder))
        {
            if let Ok(p) = crate::models::find(&settings.embedder) {
                embedders.push(crate::embed::catalog::describe(&p));
            }
        }
        let choice = self.model_choice().ok();
        if let Some(c) = &choice {
            self.calibrate_in_background(c);
        }
        let model_times = choice
            .as_ref()
            .map(|c| {
                c.models
                    .iter()
                    .enumerate()
                    .map(|(i, e)| super::ModelTime {
                        name: e.candidate.name.clone(),
                        predicted_secs: e.candidate.predicted.as_ref().ok().copied(),
                        calibrated: e.calibrated(),
                        chosen: c.chosen == Some(i),
                        reason: e.reason.kind().into(),
                        why: e.reason.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        SettingsView {
            auto_model: choice.as_ref().and_then(|c| c.resolve_auto().ok()),
            model_times,
            calibration: self.calibration_status(),
            settings,
            models,
            embedders,
            index_embedders: self.index_embedders().unwrap_or_default(),
            modes: self.modes(),
            default_templates: super::DefaultTemplates::get(),
            store_in_use: {
                let s = self.store();
                format!("{}: {}", s.kind(), s.location())
            },
        }
    }

    /// Which embedding models made the index's vectors.
    pub fn index_embedders(&self) -> Result<Vec<IndexEmbedder>> {
        Ok(self
            .store()
            .embedding_models()?
            .into_iter()
            .map(|(name, chunks)| IndexEmbedder { name, chunks })
            .collect())
    }

    /// The name of the embedding model the settings choose.
    pub fn embedder_name(&self) -> String {
        setting_name(&self.settings().embedder)
    }

    /// The device setting in force: `--device` when given, else the settings'.
    pub fn device_choice(&self) -> Result<DeviceChoice> {
        if let Some(d) = self.config.device {
            return Ok(d);
        }
        self.settings().device.parse()
    }

    /// The device the models load on: the setting resolved (a GPU that does not
    /// initialize is an error naming what is missing; `auto` says why it chose).
    pub fn device(&self) -> Result<Chosen> {
        self.device_choice()?.resolve()
    }

    /// How the LLM is loaded: on the settings' device, its window capped by the
    /// `context_window` setting (0: the default cap).
    pub fn llm_load_options(&self) -> Result<LoadOptions> {
        let defaults = LoadOptions::default();
        let cap = self.settings().context_window;
        Ok(LoadOptions {
            device: self.device_choice()?,
            max_context: if cap == 0 { defaults.max_context } else { cap },
            ..defaults
        })
    }

    /// The embedding model the settings name, loaded on first use (on the settings'
    /// device) and kept until the settings change it.
    pub fn embedder(&self) -> Result<Arc<BertEmbedder>> {
        let path = crate::models::find(&self.settings().embedder)?;
        let device = self.device()?;
        let mut slot = lock(&self.embedder);
        if let Some((p, e)) = slot.as_ref() {
            if *p == path && e.device_name() == device.name {
                return Ok(e.clone());
            }
        }
        *slot = None;
        let e = Arc::new(BertEmbedder::open_on(&path, &device.device, None)?);
        *slot = Some((path, e.clone()));
        Ok(e)
    }

    /// Check that the settings' model choices can be used: the embedding model folder
    /// opens as a BERT model, the GGUF file is one Quire runs, a model server answers.
    pub(super) fn check_model_choices(&self, next: &crate::settings::Settings) -> Result<()> {
        let now = self.settings();
        if next.device != now.device {
            // An unknown name is refused; a GPU that is missing is said when loading.
            next.device.parse::<DeviceChoice>()?;
        }
        if next.embedder != now.embedder {
            let dir = crate::models::find(&next.embedder)?;
            BertFiles::open(&dir)?;
        }
        if let Some(cfg) = next.remote_llm() {
            // A server newly named (or asked for otherwise) must answer, serve the
            // model named and say how to count its tokens.
            if now.remote_llm().as_ref() != Some(&cfg) {
                crate::llm::RemoteLlm::connect(&cfg)?;
            }
        } else if next.model != now.model && next.model.trim() == crate::models::AUTO {
            // `auto` needs an installed model it can stand for.
            self.model_choice()?.resolve_auto()?;
        } else if next.model != now.model {
            let path = crate::models::find(&next.model)?;
            if let Some(e) = crate::llm::catalog::describe(&path).error {
                return Err(Error::model_format(&path, e));
            }
        }
        Ok(())
    }

    /// An error when vectors in the index were made by another embedding model than
    /// the one chosen: comparing vectors of two models gives silent garbage.
    pub fn check_index_embedder(&self) -> Result<()> {
        let made = self.store().embedding_models()?;
        self.check_made_by(&made)
    }

    /// [`Engine::check_index_embedder`] given the store's embedding models and their
    /// chunk counts.
    pub(super) fn check_made_by(&self, made: &[(String, usize)]) -> Result<()> {
        let want = self.embedder_name();
        let other: Vec<String> = made
            .iter()
            .filter(|(m, _)| *m != want)
            .map(|(m, n)| format!("{m} ({n} chunks)"))
            .collect();
        if other.is_empty() {
            return Ok(());
        }
        Err(Error::Conflict(format!(
            "the index's vectors were made by {} but the embedding model is {want}: \
             re-embed the index (Settings → Embedding model, or `quire reembed`) \
             or choose the model that made them",
            other.join(" and ")
        )))
    }

    /// Re-embed every chunk whose vector another model made with the chosen
    /// embedding model, with progress through `on` (returning false cancels). It
    /// resumes where a stopped one left off: only chunks not yet re-embedded are done.
    pub fn reembed(
        &self,
        cancel: &Cancel,
        on: &mut dyn FnMut(IndexEvent) -> bool,
    ) -> Result<usize> {
        let _reg = self.register(cancel);
        let t0 = Instant::now();
        let embedder = self.embedder()?;
        let model = self.embedder_name();
        let total: usize = self
            .store()
            .embedding_models()?
            .iter()
            .filter(|(m, _)| *m != model)
            .map(|(_, n)| n)
            .sum();
        let mut done = 0;
        let send = |on: &mut dyn FnMut(IndexEvent) -> bool, ev| {
            if on(ev) {
                Ok(())
            } else {
                Err(Error::Cancelled)
            }
        };
        send(
            on,
            IndexEvent::Reembedded {
                model: model.clone(),
                done,
                total,
                eta_secs: None,
            },
        )?;
        loop {
            cancel.check()?;
            let batch = self.store().chunks_not_embedded_by(&model, REEMBED_STEP)?;
            if batch.is_empty() {
                break;
            }
            let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
            let vectors = embedder.embed(&texts)?;
            let rows: Vec<(i64, Vec<f32>)> = batch.iter().map(|(id, _)| *id).zip(vectors).collect();
            self.store().replace_embeddings(&model, &rows)?;
            done += rows.len();
            let secs = t0.elapsed().as_secs_f64();
            let eta_secs =
                (done > 0 && total > done).then(|| secs / done as f64 * (total - done) as f64);
            send(
                on,
                IndexEvent::Reembedded {
                    model: model.clone(),
                    done: done.min(total.max(done)),
                    total: total.max(done),
                    eta_secs,
                },
            )?;
        }
        send(
            on,
            IndexEvent::Finished {
                indexed: 0,
                failed: 0,
                secs: t0.elapsed().as_secs_f64(),
            },
        )?;
        Ok(done)
    }
}

/// The loaded embedding model and the folder it came from.
pub(super) type EmbedderSlot = Option<(PathBuf, Arc<BertEmbedder>)>;
