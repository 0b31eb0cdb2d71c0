//! The committed JSON Schema of the config file is what the code generates. Regenerate with
//! `UPDATE_SCHEMA=1 cargo test --test schema`.

#[test]
fn committed_schema_is_current() {
    let generated = serde_json::to_string_pretty(&qa_loop::config::config_schema()).unwrap() + "\n";
    let path = std::path::Path::new("schema/qa-loop.schema.json");
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all("schema").unwrap();
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path)
        .expect("schema/qa-loop.schema.json exists (UPDATE_SCHEMA=1 to create)");
    assert_eq!(
        committed, generated,
        "schema/qa-loop.schema.json is stale: run UPDATE_SCHEMA=1 cargo test --test schema"
    );
}

#[test]
fn schema_accepts_the_examples_and_names_every_key() {
    let schema = qa_loop::config::config_schema();
    let props = schema["properties"].as_object().unwrap();
    for key in [
        "risk_level",
        "unit_tests",
        "max_iterations",
        "run_timeout",
        "provider",
        "conversations",
    ] {
        assert!(props.contains_key(key), "{key} missing from the schema");
    }
    assert_eq!(schema["additionalProperties"], serde_json::json!(false));
}
