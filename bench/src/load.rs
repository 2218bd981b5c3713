//! Busy processes beside a benchmark: what a desktop looks like when something else
//! runs (`yes > /dev/null`, as the busy-desktop measurements used). They start with
//! [`Busy::start`] and are killed when it is dropped, whatever happens in between.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use quire::{Error, Result};

/// Run the peer script `scripts/NAME` with `python` on `inputs` (a model file or
/// folder, and any more paths it takes), under whatever load runs now; the JSON it
/// writes. `needs` names the packages the script imports, for the error.
pub fn run_peer_script(
    python: &Path,
    name: &str,
    inputs: &[&Path],
    needs: &str,
) -> Result<serde_json::Value> {
    run_peer_script_with(python, name, inputs, &[], needs)
}

/// [`run_peer_script`] with environment variables `envs` set for the script.
pub fn run_peer_script_with(
    python: &Path,
    name: &str,
    inputs: &[&Path],
    envs: &[(&str, String)],
    needs: &str,
) -> Result<serde_json::Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scripts")
        .join(name);
    let out = tempfile::NamedTempFile::new().map_err(|e| Error::io(Path::new("tmp"), e))?;
    let status = Command::new(python)
        .arg(&script)
        .args(inputs)
        .arg(out.path())
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Error::io(python, e))?;
    if !status.success() {
        return Err(Error::Invalid(format!(
            "{} {} failed ({status}): is {needs} installed in it?",
            python.display(),
            script.display()
        )));
    }
    let text = std::fs::read_to_string(out.path()).map_err(|e| Error::io(out.path(), e))?;
    serde_json::from_str(&text).map_err(|e| Error::Invalid(format!("{}: {e}", script.display())))
}

/// At most this many busy processes (a typo must not fork-bomb the machine).
pub const MAX_BUSY: usize = 64;

/// `n` busy processes, stopped on drop.
pub struct Busy {
    children: Vec<Child>,
}

impl Busy {
    pub fn start(n: usize) -> Result<Self> {
        if n > MAX_BUSY {
            return Err(Error::Invalid(format!(
                "--load {n}: at most {MAX_BUSY} busy processes"
            )));
        }
        let mut busy = Self {
            children: Vec::new(),
        };
        for _ in 0..n {
            let child = Command::new("yes")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| {
                    Error::Invalid(format!("could not start a busy process (yes): {e}"))
                })?;
            busy.children.push(child);
        }
        Ok(busy)
    }

    pub fn len(&self) -> usize {
        self.children.len()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn busy_processes_run_and_are_stopped() {
        let busy = Busy::start(2).unwrap();
        let pids: Vec<u32> = busy.children.iter().map(Child::id).collect();
        for p in &pids {
            assert!(std::path::Path::new(&format!("/proc/{p}")).exists());
        }
        drop(busy);
        for p in &pids {
            // Reaped: no process (not even a zombie) with that id is ours any more.
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            assert!(!stat.contains("(yes)"), "{p} still runs: {stat}");
        }
        assert!(Busy::start(MAX_BUSY + 1).is_err());
    }
}
