//! `quire search`: the sources a question retrieves from the index, and why.

pub fn search(
    engine: &quire::engine::Engine,
    question: &str,
    opts: &quire::engine::RetrieveOptions,
    json: bool,
) -> anyhow::Result<()> {
    let cancel = quire::llm::Cancel::new();
    let r = engine.search(question, opts, &cancel)?;
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{r}");
    }
    Ok(())
}
