#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The tool-use discipline layer (FEATURES §5, issue 4 item 1): which models get it and where
//! it sits in the assembled prompt.

use chrono::NaiveDate;
use hermes_context::{
    LayerKind, PromptBuilder, PromptInputs, PromptProfile, ensure_soul, tool_use_discipline,
};
use hermes_protocol::HermesHome;

fn prompt_for(model: &str, setting: Option<&str>) -> (String, Option<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let home = HermesHome::new(tmp.path().join("home"));
    ensure_soul(&home).unwrap();
    let cwd = tmp.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let tools: Vec<String> = ["read_file", "terminal"].map(String::from).to_vec();
    let mut builder = PromptBuilder::new(PromptInputs {
        home: &home,
        cwd: &cwd,
        tool_names: &tools,
        model,
        provider: "openai",
        date: NaiveDate::from_ymd_opt(2026, 3, 4).unwrap(),
        profile: PromptProfile::Full,
        context_window: Some(128_000),
        extra_system: Some("Answer in English.".to_string()),
        load_context_files: false,
    });
    if let Some(layer) = tool_use_discipline(model, setting, &tools) {
        builder = builder.with_layer(LayerKind::ToolUseDiscipline, layer);
    }
    let built = builder.build();
    let section = built
        .section(LayerKind::ToolUseDiscipline)
        .map(str::to_string);
    (built.text, section)
}

#[test]
fn snapshot_gpt_prompt_with_tool_use_discipline() {
    let (text, section) = prompt_for("gpt-5", None);
    let section = section.expect("gpt models get the layer");
    let guidance = text.find("## Running commands").unwrap();
    let discipline = text.find(&section).unwrap();
    let system = text.find("Answer in English.").unwrap();
    assert!(guidance < discipline && discipline < system, "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn other_models_get_no_discipline_layer_unless_configured() {
    let (text, section) = prompt_for("anthropic/claude-sonnet-4", None);
    assert!(section.is_none());
    assert!(!text.contains("## Acting with tools"), "{text}");
    let (_, forced) = prompt_for("anthropic/claude-sonnet-4", Some("true"));
    assert!(forced.is_some());
    let (_, off) = prompt_for("gpt-5", Some("false"));
    assert!(off.is_none());
}
