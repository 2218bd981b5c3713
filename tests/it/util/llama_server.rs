//! A real llama.cpp model server for the tests: llama-cpp-python's OpenAI-compatible
//! server (`scripts/setup.sh --test` builds it into `.venv-llama`), started on a free
//! loopback port and killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server.
pub struct LlamaServer {
    child: Child,
    pub url: String,
    /// The model name it serves (`--model_alias`).
    pub alias: String,
}

impl LlamaServer {
    /// Serve `gguf` as `alias` with a `n_ctx`-token context: returns once the server
    /// says it listens (it prints so after loading the model).
    pub fn start(gguf: &Path, alias: &str, n_ctx: usize) -> Self {
        let python = std::env::var_os("QUIRE_LLAMA_SERVER_PYTHON")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| super::repo().join(".venv-llama/bin/python"));
        assert!(
            python.is_file(),
            "{} missing: run `scripts/setup.sh --test` (make test does), which builds \
             llama-cpp-python[server] there",
            python.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(&python)
            .args(["-m", "llama_cpp.server", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .arg("--model")
            .arg(gguf)
            .args(["--model_alias", alias, "--n_ctx"])
            .arg(n_ctx.to_string())
            .args(["--n_threads", "2", "--verbose", "false"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", python.display()));
        // Uvicorn says "Uvicorn running on http://…" on stderr once it accepts.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut said = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Uvicorn running on") {
                    let _ = tx.send(Ok(()));
                } else {
                    said.push(line);
                    if said.len() > 40 {
                        said.remove(0);
                    }
                }
            }
            let _ = tx.send(Err(said.join("\n")));
        });
        let deadline = Instant::now() + Duration::from_secs(120);
        match rx.recv_timeout(deadline - Instant::now()) {
            Ok(Ok(())) => {}
            Ok(Err(said)) => panic!("the llama.cpp server exited:\n{said}"),
            Err(e) => {
                let _ = child.kill();
                panic!("the llama.cpp server did not start in 120 s: {e}")
            }
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            alias: alias.into(),
        }
    }

    /// Kill it now (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.kill();
    }
}
