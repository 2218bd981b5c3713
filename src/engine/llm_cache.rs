//! The loaded LLM, kept between asks: the local GGUF file on the settings' device, or
//! the OpenAI-compatible model server, loaded (or connected to) once and kept until
//! the settings name another.

use std::sync::{Arc, Mutex};

use super::{lock, Engine};
use crate::llm::{DeviceChoice, GgufLlm, Llm, RemoteConfig, RemoteLlm};
use crate::Result;

/// The model and what it was loaded from.
#[derive(Default)]
pub(super) struct LlmCache(Mutex<Option<(LlmSource, Arc<dyn Llm>)>>);

/// Where the LLM comes from: a GGUF file on a device, or a model server. A change of
/// either loads again.
#[derive(PartialEq)]
enum LlmSource {
    Gguf(std::path::PathBuf, DeviceChoice),
    Server(RemoteConfig),
}

impl Engine {
    /// The LLM the settings name, loaded (or connected to) once and kept until the
    /// settings change it: the local GGUF `model` on the settings' device, or the
    /// OpenAI-compatible server `llm_server`.
    pub fn llm(&self) -> Result<Arc<dyn Llm>> {
        let source = match self.remote_llm() {
            Some(cfg) => LlmSource::Server(cfg),
            None => LlmSource::Gguf(
                crate::models::find(&self.settings().model)?,
                self.llm_load_options()?.device,
            ),
        };
        let mut slot = lock(&self.llm_cache.0);
        if let Some((s, llm)) = slot.as_ref() {
            if *s == source {
                return Ok(llm.clone());
            }
        }
        *slot = None; // free the old model before loading the new one
        let llm: Arc<dyn Llm> = match &source {
            LlmSource::Gguf(path, _) => {
                Arc::new(GgufLlm::load_with(path, &self.llm_load_options()?)?)
            }
            LlmSource::Server(cfg) => Arc::new(RemoteLlm::connect(cfg)?),
        };
        *slot = Some((source, llm.clone()));
        Ok(llm)
    }
}
