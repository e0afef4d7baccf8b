//! The README's first question on the default local model, for every day of a week. The
//! compact prompt ends with a date line that changes every day, and a 135M model's greedy
//! answer is sensitive to it: with the earlier identity sentence ("Answer briefly and
//! accurately") it answered in French and looped on three days of the week of 2026-12-01.
//! The prompt is built by hermes' own builder, as `hermes chat -q` builds it for the local
//! provider (compact profile, no tools), and run on the real GGUF.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use hermes_context::{PromptBuilder, PromptInputs, PromptProfile};
use hermes_llm::local::prompt::build_turns;
use hermes_llm::local::{GenerateOptions, LocalConfig, LocalModel};
use hermes_protocol::{HermesHome, Message};
use tokio_util::sync::CancellationToken;

#[test]
fn the_readme_question_is_answered_on_every_day_of_the_week() {
    let Some(gguf) = std::env::var_os("HERMES_TEST_GGUF")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
    else {
        eprintln!("skipped: set HERMES_TEST_GGUF to the default GGUF to run this test");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let home = HermesHome::new(dir.path());
    let model = LocalModel::load(&LocalConfig::new(&gguf)).unwrap();
    let options = GenerateOptions {
        max_tokens: 24,
        temperature: None,
        seed: 0,
        reuse_prefix: true,
        stable_prefix: None,
    };
    let mut wrong = Vec::new();
    for day in 1..=7 {
        let date = chrono::NaiveDate::from_ymd_opt(2026, 12, day).unwrap();
        let system = PromptBuilder::new(PromptInputs {
            home: &home,
            cwd: dir.path(),
            tool_names: &[],
            model: "SmolLM2-135M-Instruct.Q4_1",
            provider: "local",
            date,
            profile: PromptProfile::Compact,
            context_window: Some(8_192),
            extra_system: None,
            load_context_files: false,
        })
        .build()
        .text;
        let turns = build_turns(
            &system,
            &[Message::user("What is the capital of France?")],
            &[],
        );
        let mut answer = String::new();
        model
            .generate(
                &model.render(&turns),
                &options,
                &CancellationToken::new(),
                |p| {
                    answer.push_str(p);
                    true
                },
            )
            .unwrap();
        if !answer.contains("Paris") {
            wrong.push(format!("{date}: {answer:?}"));
        }
    }
    assert!(wrong.is_empty(), "wrong answers:\n{}", wrong.join("\n"));
}
