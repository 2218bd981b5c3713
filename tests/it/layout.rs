//! The rooms of the code base and which may import which (ARCHITECTURE.md), checked
//! by reading the sources: a shell names only the engine's types, `synth` knows no
//! store or retriever, `llm` knows no engine, embedder or retriever, the store knows
//! no ingestion, `cpu` and `text` are below everything, only the HTTP server
//! (cli/src/server) names axum — and no two rooms, nor two files of one folder,
//! import each other in a circle.

use std::path::{Path, PathBuf};

use crate::util;

/// The rooms (`crate::X` / `quire::X`) a source file names, with the line of each.
fn rooms_named(src: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // Comments are not imports: drop `//` to the end of each line.
    let code: String = src
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let bytes = code.as_bytes();
    for prefix in ["crate::", "quire::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(prefix) {
            let at = from + i;
            from = at + prefix.len();
            // `foo_crate::` or `my_quire::` are other paths.
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let line = code[..at].matches('\n').count() + 1;
            let rest = &code[from..];
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a, b::{c, d}, e}`: the top-level names of the group.
                let mut depth = 0usize;
                let mut name = String::new();
                let mut names = Vec::new();
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            names.push(std::mem::take(&mut name));
                            continue;
                        }
                        _ => {}
                    }
                    if depth == 0 {
                        name.push(c);
                    }
                }
                names.push(name);
                for n in names {
                    let head: String = n
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !head.is_empty() {
                        out.push((line, head));
                    }
                }
            } else {
                let head: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !head.is_empty() {
                    out.push((line, head));
                }
            }
        }
    }
    out
}

/// Every `.rs` file under `dir` (or `dir` itself if it is a file).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    if dir.is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty(), "no sources under {}", dir.display());
    files
}

/// Where the files under each of `dirs` name one of `forbidden` rooms.
fn violations(dirs: &[&str], forbidden: &[&str]) -> Vec<String> {
    let root = util::repo();
    let mut bad = Vec::new();
    for d in dirs {
        for f in rust_files(&root.join(d)) {
            let src = std::fs::read_to_string(&f).expect("source");
            for (line, room) in rooms_named(&src) {
                if forbidden.contains(&room.as_str()) {
                    let rel = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
                    bad.push(format!("{rel}:{line} names `{room}`"));
                }
            }
        }
    }
    bad
}

fn assert_none(what: &str, bad: Vec<String>) {
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_sees_every_form_of_import() {
    let src = "use crate::store::Store;\n\
               use quire::{engine::Engine, retrieve::FusionMode};\n\
               // use crate::synth::x; (a comment)\n\
               fn f() { let _ = crate::synth::ResponseMode::Refine; }\n\
               use crate::{\n    llm::{Cancel, Llm},\n    Result,\n};\n\
               use my_crate::store;\n";
    let named: Vec<(usize, String)> = rooms_named(src);
    let names: Vec<&str> = named.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(
        names,
        ["store", "synth", "llm", "Result", "engine", "retrieve"],
        "{named:?}"
    );
    assert_eq!(named[1].0, 4, "the line of `crate::synth`");
}

#[test]
fn shells_use_only_the_engines_types() {
    let shells = ["cli/src", "src-tauri/src"];
    assert_none(
        "a shell names store, retrieve, synth, chat or support (use the engine's types)",
        violations(&shells, &["store", "retrieve", "synth", "chat", "support"]),
    );
}

#[test]
fn synth_knows_no_store_or_retriever() {
    assert_none(
        "synth imports store, retrieve, engine or ingest",
        violations(&["src/synth"], &["store", "retrieve", "engine", "ingest"]),
    );
}

#[test]
fn the_support_check_reads_words_only() {
    // It sits on the analyzer (retrieve::text), the sentence splitter (synth) and
    // text; the engine hands it the answer and the sources.
    assert_none(
        "support imports store, engine, llm, embed, chat, ingest or settings",
        violations(
            &["src/support"],
            &[
                "store", "engine", "llm", "embed", "chat", "ingest", "settings",
            ],
        ),
    );
    assert_none(
        "a room below the support check names it",
        violations(
            &[
                "src/synth",
                "src/retrieve",
                "src/chat",
                "src/llm",
                "src/embed",
                "src/store",
                "src/ingest",
                "src/cpu",
                "src/text",
            ],
            &["support"],
        ),
    );
}

#[test]
fn the_store_keeps_and_knows_nothing_of_what_fills_it() {
    // It sits on retrieve (its PostgreSQL backend is a retrieval corpus), embed
    // (the corpus embeds queries), text and cpu; ingestion writes to it.
    assert_none(
        "store imports ingest, engine, llm, synth, chat, support or settings",
        violations(
            &["src/store"],
            &[
                "ingest", "engine", "llm", "synth", "chat", "support", "settings", "models",
            ],
        ),
    );
}

#[test]
fn ingestion_knows_no_retrieval_or_answers() {
    assert_none(
        "ingest imports retrieve, llm, synth, chat, support, settings or engine",
        violations(
            &["src/ingest"],
            &[
                "retrieve", "llm", "synth", "chat", "support", "settings", "engine", "models",
            ],
        ),
    );
}

#[test]
fn retrieval_knows_no_store_or_answers() {
    // The store implements retrieve's Corpus, not the other way round.
    assert_none(
        "retrieve imports store, ingest, synth, chat, support, settings or engine",
        violations(
            &["src/retrieve"],
            &[
                "store", "ingest", "synth", "chat", "support", "settings", "engine", "models",
            ],
        ),
    );
}

#[test]
fn chat_knows_only_the_llm_and_synthesis() {
    assert_none(
        "chat imports store, retrieve, embed, engine or ingest",
        violations(
            &["src/chat"],
            &["store", "retrieve", "embed", "engine", "ingest"],
        ),
    );
}

#[test]
fn llm_knows_no_engine_embedder_or_retriever() {
    assert_none(
        "llm imports engine, embed, retrieve or another room above it",
        violations(
            &["src/llm"],
            &[
                "engine", "embed", "retrieve", "store", "synth", "ingest", "settings",
            ],
        ),
    );
}

#[test]
fn embed_knows_no_room_above_it() {
    assert_none(
        "embed imports llm, retrieve or a room above it",
        violations(
            &["src/embed"],
            &[
                "llm", "retrieve", "engine", "store", "synth", "ingest", "settings",
            ],
        ),
    );
}

#[test]
fn cpu_and_text_are_below_everything() {
    assert_none(
        "cpu or text imports another room",
        violations(
            &["src/cpu", "src/text"],
            &[
                "llm", "embed", "retrieve", "engine", "store", "synth", "ingest", "settings",
                "models",
            ],
        ),
    );
}

#[test]
fn lower_rooms_do_not_reach_up_to_the_engine() {
    assert_none(
        "a room below the engine imports it",
        violations(
            &[
                "src/ingest",
                "src/store",
                "src/embed",
                "src/retrieve",
                "src/synth",
                "src/chat",
                "src/llm",
                "src/support",
                "src/settings.rs",
                "src/models.rs",
                "src/text",
                "src/cpu",
            ],
            &["engine"],
        ),
    );
}

#[test]
fn only_the_server_names_axum() {
    let root = util::repo();
    let mut bad = Vec::new();
    for f in rust_files(&root.join("src")) {
        let src = std::fs::read_to_string(&f).expect("source");
        if src.contains("axum::") || src.contains("tauri::") || src.contains("quire_cli") {
            bad.push(f.display().to_string());
        }
    }
    assert_none(
        "the core (src/) names axum, tauri or its command line (quire_cli)",
        bad,
    );
}

#[test]
fn the_desktop_app_does_not_link_axum() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "quire-desktop",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(util::repo())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.lines().any(|l| l.starts_with("quire v")), "{tree}");
    assert!(tree.lines().any(|l| l.starts_with("tauri v")), "{tree}");
    let axum: Vec<&str> = tree.lines().filter(|l| l.starts_with("axum")).collect();
    assert!(axum.is_empty(), "quire-desktop links {axum:?}");
}

/// A source file's code outside its tests (a `#[cfg(test)]` item and what follows,
/// or a `mod tests` block, may import what the code may not).
fn outside_tests(src: &str) -> &str {
    let cut = [src.find("\n#[cfg(test)]"), src.find("\nmod tests {")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(src.len());
    &src[..cut]
}

/// The sibling modules each file of `dir` (its `.rs` files but `mod.rs`) names, as
/// edges `file → sibling`; a sibling is a file or a folder of `dir`. `module` is the
/// path of `dir` from the crate root (`store::postgres`), so that `super::x` and
/// `crate::store::postgres::x` both name sibling `x`.
fn sibling_imports(dir: &Path, module: &str) -> Vec<(String, String)> {
    let entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .collect();
    let files: Vec<&PathBuf> = entries
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && !p.ends_with("mod.rs"))
        .collect();
    let stem = |p: &Path| p.file_stem().expect("stem").to_string_lossy().into_owned();
    let names: Vec<String> = entries
        .iter()
        .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
        .map(|p| stem(p))
        .collect();
    let mut edges = Vec::new();
    for f in files {
        let name = stem(f);
        let src = std::fs::read_to_string(f).expect("source");
        // Another crate's paths (`quire::store` in bench/) are not siblings.
        let mut code = outside_tests(&src)
            .replace("quire::", "other_crate::")
            .replace("super::", "crate::");
        if !module.is_empty() {
            code = code.replace(&format!("crate::{module}::"), "crate::");
        }
        for (_, room) in rooms_named(&code) {
            if names.contains(&room) && room != name {
                edges.push((name.clone(), room));
            }
        }
    }
    edges.sort();
    edges.dedup();
    edges
}

/// Every folder under `dir`, `dir` included.
fn folders(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let mut subs: Vec<PathBuf> = std::fs::read_dir(&out[i])
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        out.extend(subs);
        i += 1;
    }
    out
}

/// The rooms of the core (`src/`'s folders and files, less `lib.rs`), as edges
/// `room → room it names`, outside tests.
fn room_imports() -> Vec<(String, String)> {
    let src = util::repo().join("src");
    let rooms: Vec<(String, PathBuf)> = std::fs::read_dir(&src)
        .expect("src")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            (name, p)
        })
        .filter(|(n, _)| n != "lib")
        .collect();
    let names: Vec<&str> = rooms.iter().map(|(n, _)| n.as_str()).collect();
    let mut edges = Vec::new();
    for (room, path) in &rooms {
        for f in rust_files(path) {
            let text = std::fs::read_to_string(&f).expect("source");
            for (_, other) in rooms_named(outside_tests(&text)) {
                if other != *room && names.contains(&other.as_str()) {
                    edges.push((room.clone(), other));
                }
            }
        }
    }
    edges.sort();
    edges.dedup();
    edges
}

/// A cycle in `edges`, if there is one.
fn cycle(edges: &[(String, String)]) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &[(String, String)],
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.iter().any(|d| d == n) {
            return None;
        }
        path.push(n.to_string());
        for (_, to) in edges.iter().filter(|(from, _)| from == n) {
            if let Some(c) = visit(to, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(n.to_string());
        None
    }
    let mut done = Vec::new();
    edges
        .iter()
        .find_map(|(from, _)| visit(from, edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(cycle(&[e("a", "b"), e("b", "c")]), None);
    assert_eq!(
        cycle(&[e("a", "b"), e("b", "c"), e("c", "a")]),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn no_two_rooms_import_each_other_in_a_circle() {
    let edges = room_imports();
    assert!(
        edges.iter().any(|(a, b)| a == "engine" && b == "store"),
        "the room reader found no imports: {edges:?}"
    );
    assert_eq!(cycle(&edges), None, "rooms: {edges:?}");
}

#[test]
fn no_two_files_of_a_folder_import_each_other_in_a_circle() {
    let root = util::repo();
    let mut checked = 0;
    for base in ["src", "pdf/src", "cli/src", "bench/src", "src-tauri/src"] {
        let top = root.join(base);
        for dir in folders(&top) {
            let module = dir
                .strip_prefix(&top)
                .expect("under its base")
                .to_string_lossy()
                .replace('/', "::");
            let edges = sibling_imports(&dir, &module);
            checked += edges.len();
            assert_eq!(cycle(&edges), None, "{}: {edges:?}", dir.display());
        }
    }
    assert!(
        checked > 50,
        "only {checked} imports between files were found"
    );
}

#[test]
fn the_folder_reader_sees_both_forms_of_a_sibling_import() {
    let dir = tempfile::tempdir().expect("tempdir");
    let w = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
    w("mod.rs", "mod a;\nmod b;\n");
    w("a.rs", "use super::b::B;\n");
    w(
        "b.rs",
        "use crate::store::postgres::a::A;\n#[cfg(test)]\nmod tests { use super::c; }\n",
    );
    w("c.rs", "");
    let edges = sibling_imports(dir.path(), "store::postgres");
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(edges, vec![e("a", "b"), e("b", "a")]);
    assert!(cycle(&edges).is_some());
}
