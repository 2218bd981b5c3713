//! `quire collections`: list, create, change and delete collections of documents.

use quire::engine::Engine;

#[derive(clap::Subcommand, Debug, Clone)]
pub enum CollectionsCmd {
    /// Create a collection of documents (ids, paths or file names).
    Create { name: String, docs: Vec<String> },
    /// Add documents to a collection.
    Add { name: String, docs: Vec<String> },
    /// Take documents out of a collection (they stay indexed).
    Remove { name: String, docs: Vec<String> },
    /// Rename a collection.
    Rename { name: String, new_name: String },
    /// Delete a collection (its documents stay indexed).
    Rm { name: String },
}

/// Run `cmd` (none: list the collections).
pub fn run(engine: &Engine, cmd: Option<CollectionsCmd>, json: bool) -> anyhow::Result<()> {
    let ids = |docs: &[String]| -> anyhow::Result<Vec<i64>> {
        match engine.parse_scope(&docs.join(","))? {
            quire::engine::Scope::Documents { ids } => Ok(ids),
            _ => anyhow::bail!("name documents by id, path or file name"),
        }
    };
    match cmd {
        None => {}
        Some(CollectionsCmd::Create { name, docs }) => {
            let docs = if docs.is_empty() {
                Vec::new()
            } else {
                ids(&docs)?
            };
            engine.create_collection(&name, &docs)?;
        }
        Some(CollectionsCmd::Add { name, docs }) => {
            let c = engine.find_collection(&name)?;
            let mut all = c.documents.clone();
            all.extend(ids(&docs)?);
            all.sort_unstable();
            all.dedup();
            engine.update_collection(c.id, None, Some(&all))?;
        }
        Some(CollectionsCmd::Remove { name, docs }) => {
            let c = engine.find_collection(&name)?;
            let gone = ids(&docs)?;
            let kept: Vec<i64> = c
                .documents
                .iter()
                .copied()
                .filter(|d| !gone.contains(d))
                .collect();
            engine.update_collection(c.id, None, Some(&kept))?;
        }
        Some(CollectionsCmd::Rename { name, new_name }) => {
            let c = engine.find_collection(&name)?;
            engine.update_collection(c.id, Some(&new_name), None)?;
        }
        Some(CollectionsCmd::Rm { name }) => {
            engine.remove_collection(engine.find_collection(&name)?.id)?
        }
    }
    let all = engine.collections()?;
    if json {
        println!("{}", serde_json::to_string(&all)?);
        return Ok(());
    }
    let docs = engine.documents()?;
    for c in &all {
        let names: Vec<&str> = c
            .documents
            .iter()
            .filter_map(|id| {
                docs.iter()
                    .find(|d| d.id == *id)
                    .map(|d| d.file_name.as_str())
            })
            .collect();
        println!(
            "{}  ({} documents)  {}",
            c.name,
            names.len(),
            names.join(", ")
        );
    }
    if all.is_empty() {
        println!("no collections (create one with `quire collections create NAME DOC...`)");
    }
    Ok(())
}
