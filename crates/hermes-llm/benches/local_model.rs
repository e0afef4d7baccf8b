//! Speed benchmark of the embedded model (FEATURES §14): load time, prefill tokens/s on a
//! ~200-token prompt and greedy decode tokens/s over 64+ tokens, median of 3 runs.
//!
//! Run: `HERMES_BENCH_GGUF=path/to/model.gguf cargo bench -p hermes-llm --bench local_model`
//! (`HERMES_TEST_GGUF` is used when `HERMES_BENCH_GGUF` is unset). Optional
//! `HERMES_BENCH_THREADS` overrides the thread count (default: all cores).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use hermes_llm::local::prompt::ChatTurn;
use hermes_llm::local::{GenerateOptions, LocalConfig, LocalModel, StopReason};
use tokio_util::sync::CancellationToken;

const DECODE_TOKENS: u32 = 96;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let Some(path) = ["HERMES_BENCH_GGUF", "HERMES_TEST_GGUF"]
        .iter()
        .find_map(std::env::var_os)
        .map(PathBuf::from)
    else {
        eprintln!("skipped: set HERMES_BENCH_GGUF (or HERMES_TEST_GGUF) to a GGUF file");
        return;
    };
    let mut config = LocalConfig::new(&path);
    config.threads = std::env::var("HERMES_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok());

    let t0 = Instant::now();
    let model = LocalModel::load(&config).expect("model loads");
    let load = t0.elapsed();

    let passage = "The river runs through the old town, past the mill, the bakery and the \
        school, and under three stone bridges built long ago by people whose names nobody \
        remembers. ";
    let user = format!(
        "Read this text and then summarise it in your own words.\n\n{}",
        passage.repeat(5)
    );
    let turns = [ChatTurn {
        role: "user".into(),
        content: user,
    }];
    let prompt = model.render(&turns);
    let prompt_tokens = model.count_tokens(&prompt);

    // Prefill: generate a single token so the time is almost all prompt processing.
    let cancel = CancellationToken::new();
    let one = GenerateOptions {
        max_tokens: 1,
        temperature: None,
        seed: 0,
        reuse_prefix: false,
        stable_prefix: None,
    };
    let mut prefill = Vec::new();
    for _ in 0..3 {
        let g = model.generate(&prompt, &one, &cancel, |_| true).unwrap();
        prefill.push(g.prompt_tokens as f64 / g.prefill_time.as_secs_f64());
    }

    // Decode: a short prompt, then DECODE_TOKENS greedy tokens (no early stop: the
    // callback keeps going; EOS ends a run early and is reported).
    let story = model.render(&[ChatTurn {
        role: "user".into(),
        content: "Write a long story about a lighthouse keeper.".into(),
    }]);
    let many = GenerateOptions {
        max_tokens: DECODE_TOKENS,
        temperature: None,
        seed: 0,
        reuse_prefix: false,
        stable_prefix: None,
    };
    let mut decode = Vec::new();
    let mut generated = 0;
    for _ in 0..3 {
        let g = model.generate(&story, &many, &cancel, |_| true).unwrap();
        if g.stop == StopReason::EndOfTurn {
            eprintln!("note: run ended at EOS after {} tokens", g.generated_tokens);
        }
        generated = g.generated_tokens;
        // The first generated token comes from the prefill logits; the rest are decodes.
        decode.push((g.generated_tokens.saturating_sub(1)) as f64 / g.decode_time.as_secs_f64());
    }

    let threads = config
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    println!("model:   {}", model.name());
    println!("threads: {threads}");
    println!("context: {} tokens", model.n_ctx());
    // Memory of this process with the model loaded and its context allocated (Linux only):
    // VmRSS now and VmHWM, the peak, in MB.
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let kb = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        };
        if let (Some(rss), Some(hwm)) = (kb("VmRSS:"), kb("VmHWM:")) {
            println!(
                "rss:     {:.1} MB (peak {:.1} MB)",
                rss / 1024.0,
                hwm / 1024.0
            );
        }
    }
    println!("load:    {:.3} s", load.as_secs_f64());
    println!(
        "prefill: {:.1} tok/s (prompt {prompt_tokens} tokens, median of 3)",
        median(prefill)
    );
    println!(
        "decode:  {:.1} tok/s ({generated} tokens greedy, median of 3)",
        median(decode)
    );
}
