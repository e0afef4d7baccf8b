#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `skills.disabled` / `skills.platform_disabled` (Python Hermes' keys, issue 17): a disabled
//! skill is not in the prompt's skills index, not in `skills_list`, and `skill_view` refuses
//! it; the others are unaffected.

use std::collections::BTreeSet;
use std::path::Path;

use hermes_context::skills::IndexFilter;
use hermes_context::{LearningLayers, learning_tools_configured};
use hermes_protocol::HermesHome;
use hermes_protocol::config::{Config, MemoryConfig};
use hermes_tools::ToolContext;
use serde_json::json;

fn skill(home: &HermesHome, category: &str, name: &str) {
    let dir = home.skills_dir().join(category).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: does {name} things\n---\n# {name}\nbody\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn disabled_skills_leave_the_index_and_the_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let home = HermesHome::new(tmp.path());
    skill(&home, "dev", "kept-skill");
    skill(&home, "dev", "noisy-skill");
    skill(&home, "chat", "cli-only");
    let config = Config::parse(
        "skills:\n  disabled: [noisy-skill]\n  platform_disabled:\n    telegram: [cli-only]\n",
        Path::new("config.yaml"),
    )
    .unwrap()
    .config;
    let on_cli: BTreeSet<String> = config.skills.disabled_for(Some("cli"));
    let on_telegram = config.skills.disabled_for(Some("telegram"));

    let tool_names = vec!["skills_list".to_string(), "skill_view".to_string()];
    let filter = IndexFilter {
        platform: "linux",
        tool_names: &tool_names,
        toolsets: &[],
    };
    let index = LearningLayers::load_configured(&home, &filter, &MemoryConfig::default(), &on_cli)
        .skills_index
        .unwrap();
    assert!(
        index.contains("kept-skill") && index.contains("cli-only"),
        "{index}"
    );
    assert!(!index.contains("noisy-skill"), "{index}");
    let index =
        LearningLayers::load_configured(&home, &filter, &MemoryConfig::default(), &on_telegram)
            .skills_index
            .unwrap();
    assert!(
        !index.contains("cli-only") && !index.contains("noisy-skill"),
        "{index}"
    );

    let tools = learning_tools_configured(&home, None, &MemoryConfig::default(), &on_cli);
    let tool = |n: &str| tools.iter().find(|t| t.spec().name == n).unwrap().clone();
    let ctx = ToolContext::for_tests(tmp.path(), home.clone());
    let listed = tool("skills_list").call(json!({}), &ctx).await;
    assert!(!listed.is_error);
    assert!(listed.content.contains("kept-skill"), "{}", listed.content);
    assert!(
        !listed.content.contains("noisy-skill"),
        "{}",
        listed.content
    );
    let viewed = tool("skill_view")
        .call(json!({"name": "noisy-skill"}), &ctx)
        .await;
    assert!(viewed.is_error);
    assert!(viewed.content.contains("disabled"), "{}", viewed.content);
    let viewed = tool("skill_view")
        .call(json!({"name": "kept-skill"}), &ctx)
        .await;
    assert!(!viewed.is_error, "{}", viewed.content);
}
