//! The loaded LLM, kept between asks: the local GGUF file on the settings' device, or
//! the OpenAI-compatible model server, loaded (or connected to) once and kept until
//! the settings name another. A local model gets its draft for speculative decoding
//! here too (the `draft` setting).

use std::sync::{Arc, Mutex};

use super::{lock, Engine};
use crate::llm::model::Drafter;
use crate::llm::{speculative, DeviceChoice, GgufLlm, Llm, RemoteConfig, RemoteLlm};
use crate::Result;

/// The model and what it was loaded from.
#[derive(Default)]
pub(super) struct LlmCache(Mutex<Option<(LlmSource, Arc<dyn Llm>)>>);

/// Where the LLM comes from: a GGUF file on a device (with its draft setting and
/// window cap), or a model server. A change of any loads again.
#[derive(PartialEq)]
enum LlmSource {
    Gguf(std::path::PathBuf, DeviceChoice, String, usize),
    Server(RemoteConfig),
}

impl Engine {
    /// The LLM the settings name, loaded (or connected to) once and kept until the
    /// settings change it: the local GGUF `model` on the settings' device, or the
    /// OpenAI-compatible server `llm_server`. `auto` is what it stands for now: a
    /// calibration finishing loads the model it chose at the next ask.
    pub fn llm(&self) -> Result<Arc<dyn Llm>> {
        let source = match self.remote_llm() {
            Some(cfg) => LlmSource::Server(cfg),
            None => {
                let opts = self.llm_load_options()?;
                LlmSource::Gguf(
                    self.model_path()?,
                    opts.device,
                    self.settings().draft,
                    opts.max_context,
                )
            }
        };
        let mut slot = lock(&self.llm_cache.0);
        if let Some((s, llm)) = slot.as_ref() {
            if *s == source {
                return Ok(llm.clone());
            }
        }
        *slot = None; // free the old model before loading the new one
        let llm: Arc<dyn Llm> = match &source {
            LlmSource::Gguf(path, _, draft, _) => {
                let llm = GgufLlm::load_with(path, &self.llm_load_options()?)?;
                self.set_draft(&llm, draft)?;
                Arc::new(llm)
            }
            LlmSource::Server(cfg) => Arc::new(RemoteLlm::connect(cfg)?),
        };
        *slot = Some((source, llm.clone()));
        Ok(llm)
    }
}

impl Engine {
    /// Give `llm` the draft the `draft` setting names: `off`; `lookup`; `auto`, prompt
    /// lookup, then a smaller installed model of the same vocabulary where lookup has
    /// no proposal (if there is one, and the model runs on the own kernels); or a
    /// model file, which must fit.
    fn set_draft(&self, llm: &GgufLlm, draft: &str) -> Result<()> {
        let auto = draft.trim() == "auto";
        let path = match draft.trim() {
            "off" => return Ok(()),
            "lookup" => return llm.set_draft(Some(Drafter::Lookup)),
            "auto" => {
                // Not on the own kernels (a GPU, say): auto decodes plainly, silently,
                // and loads no draft model.
                if llm.set_draft(Some(Drafter::Lookup)).is_err() {
                    return Ok(());
                }
                let files = crate::models::gguf_files();
                match speculative::find_draft(llm.path(), llm.tokenizer(), &files) {
                    Some(p) => p,
                    None => return Ok(()),
                }
            }
            name => crate::models::find(name)?,
        };
        let d = Arc::new(GgufLlm::load_with(&path, &self.llm_load_options()?)?);
        if !auto {
            return llm.set_draft(Some(Drafter::Model(d)));
        }
        // Where the model cannot draft, prompt lookup (set above) stays.
        llm.set_draft(Some(Drafter::LookupThenModel(d))).ok();
        Ok(())
    }
}
