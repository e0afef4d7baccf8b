//! Write gating for memory (seed 004 §5.2, "记忆写入的门控机制": not everything is worth
//! remembering): before an entry is added, the text must carry enough information, and an
//! entry that says (nearly) the same as an existing one, or contradicts it, updates that entry
//! instead of adding another.
//!
//! Everything here is deterministic and offline: words are counted, not guessed.
//!
//! - **Tokens** ([`tokenize`]): lowercased runs of letters and digits (with `_ - . / + # @ '`
//!   kept inside a run, so `cargo-nextest`, `v0.9`, `src/main.rs` and `don't` are one token);
//!   a run of CJK characters (Han, kana, Hangul) becomes its character bigrams (`用户喜欢` →
//!   `用户 户喜 喜欢`), a lone CJK character stays one token. Everything else separates.
//! - **Content words** ([`content_words`]): tokens that are neither [`STOP_WORDS`] nor
//!   [`NEGATIONS`].
//! - **Information threshold** ([`check_information`]): seed 004 §5.2 rule 1 refuses text
//!   whose entity count over word count is below 0.05. hermes has no NER on the machine, so
//!   distinct content words stand in for entities, and three rules apply in order:
//!   at least [`MIN_CONTENT_WORDS`] distinct content words ([`Refusal::TooShort`]); at
//!   least one content word that is not [`FILLER_WORDS`] ("remember this", "user said
//!   something important": a restatement that a fact exists, without the fact,
//!   [`Refusal::Restatement`]); distinct content words over all tokens at least
//!   [`MIN_DENSITY`] (the seed's 0.05; text repeating a few words, [`Refusal::Repetitive`]).
//! - **Near-duplicates** ([`jaccard`]): seed 004 §5.2 rule 3 — Jaccard similarity of the two
//!   entries' content-word sets above [`NEAR_DUPLICATE_JACCARD`] (0.85) merges the new entry
//!   into the existing one.
//! - **Conflicts** ([`conflict`]): deliberately narrow, so that two different facts are never
//!   mistaken for one: the same content words where exactly one side is negated, or the same
//!   statement whose trailing value (a token with a digit: a version, a time, a size, a
//!   port) changed. The newer entry replaces the older one and the result says so.
//!
//! Seed 004 §5.2 rule 2 (write only what the user interacted with: clicks, dwell time,
//! shares) has no counterpart in a conversation: the model's decision to call `memory`, or
//! the review's, is the signal, and the two rules above judge the text it chose.

use std::collections::BTreeSet;

/// Near-duplicate threshold: Jaccard similarity of content-word sets strictly above this
/// merges instead of adding (seed 004 §5.2 rule 3, "Jaccard相似度 > 0.85，则合并而非新增").
pub const NEAR_DUPLICATE_JACCARD: f64 = 0.85;

/// Fewest distinct content words an entry needs (the information threshold standing in for
/// seed 004 §5.2 rule 1's entity count: one word cannot state a fact about anything).
pub const MIN_CONTENT_WORDS: usize = 2;

/// Lowest ratio of distinct content words to all tokens (seed 004 §5.2 rule 1's 0.05, with
/// distinct content words in place of named entities).
pub const MIN_DENSITY: f64 = 0.05;

/// Function words that carry no fact on their own (English, plus single CJK particles that
/// appear as one-character tokens). Not counted as content words.
pub const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "if", "then", "so", "of", "to", "in", "on", "at", "by",
    "for", "with", "from", "as", "into", "onto", "about", "is", "are", "was", "were", "be", "been",
    "being", "am", "do", "does", "did", "has", "have", "had", "it", "its", "it's", "this", "that",
    "these", "those", "there", "here", "i", "me", "my", "we", "our", "us", "you", "your", "he",
    "him", "his", "she", "her", "they", "them", "their", "what", "which", "who", "whom", "when",
    "where", "why", "how", "all", "any", "some", "just", "very", "too", "also", "than", "will",
    "would", "can", "could", "should", "shall", "may", "might", "must", "up", "out", "again",
    "only", "such", "each", "more", "most", "other", "s", "t", "的", "了", "是", "在", "和", "也",
    "就", "都", "而", "及", "与", "着", "或", "个", "这", "那", "吗", "呢", "吧", "啊", "我", "你",
    "他", "她", "它",
];

/// Negation words: not content words, but they decide a negation conflict ([`conflict`]).
pub const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "nor",
    "none",
    "don't",
    "dont",
    "doesn't",
    "doesnt",
    "didn't",
    "didnt",
    "isn't",
    "isnt",
    "aren't",
    "arent",
    "wasn't",
    "wasnt",
    "weren't",
    "won't",
    "wont",
    "can't",
    "cant",
    "cannot",
    "shouldn't",
    "mustn't",
    "haven't",
    "hasn't",
    "不",
    "没",
    "没有",
    "不是",
    "不要",
    "别",
];

/// Content words that only say that something is worth remembering, or who said it. An
/// entry made of nothing else is a restatement, not a fact ([`Refusal::Restatement`]).
pub const FILLER_WORDS: &[&str] = &[
    "remember",
    "remembered",
    "recall",
    "note",
    "noted",
    "notes",
    "save",
    "saved",
    "memory",
    "memorize",
    "store",
    "stored",
    "fact",
    "facts",
    "info",
    "information",
    "detail",
    "details",
    "thing",
    "things",
    "something",
    "stuff",
    "important",
    "ok",
    "okay",
    "yes",
    "yeah",
    "sure",
    "thanks",
    "thank",
    "done",
    "got",
    "user",
    "said",
    "says",
    "say",
    "told",
    "tell",
    "asked",
    "ask",
    "mentioned",
    "mention",
    "conversation",
    "chat",
    "session",
    "today",
    "earlier",
    "above",
    "please",
    "following",
    "记住",
    "记得",
    "用户",
    "重要",
    "信息",
    "东西",
    "事情",
    "好的",
    "知道",
    "收到",
    "谢谢",
    "这个",
    "那个",
    "一下",
    "以上",
    "刚才",
    "说过",
];

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FFFF) // CJK Extensions B–F
}

fn is_joiner(c: char) -> bool {
    matches!(c, '_' | '-' | '.' | '/' | '+' | '#' | '@' | '\'')
}

/// Splits `text` into lowercased tokens (see the module docs): word runs with inner joiners,
/// CJK runs as character bigrams. Order is kept, repeats are kept.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, tokens: &mut Vec<String>| {
        let t = word.trim_matches(is_joiner);
        if !t.is_empty() {
            tokens.push(t.to_string());
        }
        word.clear();
    };
    let flush_cjk = |cjk: &mut Vec<char>, tokens: &mut Vec<String>| {
        match cjk.len() {
            0 => {}
            1 => tokens.push(cjk[0].to_string()),
            _ => tokens.extend(cjk.windows(2).map(|w| w.iter().collect::<String>())),
        }
        cjk.clear();
    };
    for c in text.chars().map(|c| if c == '’' { '\'' } else { c }) {
        if is_cjk(c) {
            flush_word(&mut word, &mut tokens);
            cjk.push(c);
        } else if c.is_alphanumeric() || (is_joiner(c) && !word.is_empty()) {
            flush_cjk(&mut cjk, &mut tokens);
            word.extend(c.to_lowercase());
        } else {
            flush_word(&mut word, &mut tokens);
            flush_cjk(&mut cjk, &mut tokens);
        }
    }
    flush_word(&mut word, &mut tokens);
    flush_cjk(&mut cjk, &mut tokens);
    tokens
}

fn is_stop(t: &str) -> bool {
    STOP_WORDS.contains(&t)
}

fn is_negation(t: &str) -> bool {
    NEGATIONS.contains(&t)
}

/// The content words of `text` in order: [`tokenize`] minus [`STOP_WORDS`] and
/// [`NEGATIONS`].
pub fn content_words(text: &str) -> Vec<String> {
    tokenize(text)
        .into_iter()
        .filter(|t| !is_stop(t) && !is_negation(t))
        .collect()
}

fn content_set(text: &str) -> BTreeSet<String> {
    content_words(text).into_iter().collect()
}

/// Jaccard similarity (|A ∩ B| / |A ∪ B|, 0.0–1.0) of the content-word sets of `a` and `b`;
/// when both have no content words, of their token sets; 0.0 when both are empty. Entries
/// above [`NEAR_DUPLICATE_JACCARD`] are near-duplicates (seed 004 §5.2 rule 3).
pub fn jaccard(a: &str, b: &str) -> f64 {
    let (mut sa, mut sb) = (content_set(a), content_set(b));
    if sa.is_empty() && sb.is_empty() {
        sa = tokenize(a).into_iter().collect();
        sb = tokenize(b).into_iter().collect();
    }
    let union = sa.union(&sb).count();
    if union == 0 {
        return 0.0;
    }
    sa.intersection(&sb).count() as f64 / union as f64
}

/// Why text was refused as below the information threshold (seed 004 §5.2 rule 1). Its
/// `Display` is the text the model gets: what is missing and what to write instead.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Fewer than [`MIN_CONTENT_WORDS`] distinct content words.
    TooShort {
        /// The distinct content words found.
        words: Vec<String>,
    },
    /// Only [`FILLER_WORDS`]: says that something should be remembered, not what.
    Restatement,
    /// Distinct content words over all tokens below [`MIN_DENSITY`].
    Repetitive {
        /// Distinct content words.
        distinct: usize,
        /// All tokens.
        tokens: usize,
    },
}

impl Refusal {
    /// `too_short`, `restatement` or `repetitive` (the tool result's `rule`).
    pub fn rule(&self) -> &'static str {
        match self {
            Refusal::TooShort { .. } => "too_short",
            Refusal::Restatement => "restatement",
            Refusal::Repetitive { .. } => "repetitive",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused: the entry carries too little information to be worth remembering (")?;
        match self {
            Refusal::TooShort { words } if words.is_empty() => {
                f.write_str("it has no content words, only function words or punctuation")?
            }
            Refusal::TooShort { words } => write!(
                f,
                "{} content word{} ({}); at least {MIN_CONTENT_WORDS} are needed",
                words.len(),
                if words.len() == 1 { "" } else { "s" },
                words.join(", ")
            )?,
            Refusal::Restatement => f.write_str(
                "it only says that something should be remembered or was said, not what it is",
            )?,
            Refusal::Repetitive { distinct, tokens } => write!(
                f,
                "{distinct} distinct content words among {tokens} words; it repeats itself"
            )?,
        }
        f.write_str(
            "). Nothing was saved. Write the fact itself as one self-contained sentence — who or \
             what it is about and the specific detail, e.g. \"User prefers tabs over spaces in \
             Rust files\" — or save nothing.",
        )
    }
}

/// Checks `text` against the information threshold (module docs; seed 004 §5.2 rule 1).
///
/// # Errors
/// The first [`Refusal`] that applies, in the order too short, restatement, repetitive.
pub fn check_information(text: &str) -> Result<(), Refusal> {
    let tokens = tokenize(text);
    let distinct: BTreeSet<&str> = tokens
        .iter()
        .map(String::as_str)
        .filter(|t| !is_stop(t) && !is_negation(t))
        .collect();
    if distinct.len() < MIN_CONTENT_WORDS {
        return Err(Refusal::TooShort {
            words: distinct.iter().map(|w| w.to_string()).collect(),
        });
    }
    if distinct.iter().all(|w| FILLER_WORDS.contains(w)) {
        return Err(Refusal::Restatement);
    }
    if (distinct.len() as f64) < MIN_DENSITY * tokens.len() as f64 {
        return Err(Refusal::Repetitive {
            distinct: distinct.len(),
            tokens: tokens.len(),
        });
    }
    Ok(())
}

/// How a new entry contradicts an existing one ([`conflict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// The same content words, one side negated ("Tests run in parallel" / "Tests do not
    /// run in parallel").
    Negation,
    /// The same statement with another trailing value ("Project uses Python 3.11" /
    /// "Project uses Python 3.12").
    ChangedValue,
}

impl Conflict {
    /// `negation` or `changed_value`.
    pub fn as_str(self) -> &'static str {
        match self {
            Conflict::Negation => "negation",
            Conflict::ChangedValue => "changed_value",
        }
    }
}

fn has_digit(t: &str) -> bool {
    t.chars().any(|c| c.is_ascii_digit())
}

/// Whether `new` contradicts `old` (module docs), conservatively:
/// - [`Conflict::Negation`]: equal content-word sets of at least two words, and exactly one
///   of the two has a [`NEGATIONS`] word;
/// - [`Conflict::ChangedValue`]: content-word sequences of equal length (at least three)
///   that differ in exactly one position, at index 2 or later, where both tokens contain a
///   digit and every token after it contains a digit too (the value is the statement's
///   tail: "… 14:00" vs "… 16:00", never "fact 1 of X" vs "fact 2 of X").
///
/// `None` for anything else, including identical text.
pub fn conflict(old: &str, new: &str) -> Option<Conflict> {
    let (to, tn) = (tokenize(old), tokenize(new));
    let negated = |t: &[String]| t.iter().any(|w| is_negation(w));
    let words = |t: &[String]| -> Vec<String> {
        t.iter()
            .filter(|w| !is_stop(w) && !is_negation(w))
            .cloned()
            .collect()
    };
    let (wo, wn) = (words(&to), words(&tn));
    let (so, sn): (BTreeSet<&String>, BTreeSet<&String>) =
        (wo.iter().collect(), wn.iter().collect());
    if so == sn && so.len() >= 2 && negated(&to) != negated(&tn) {
        return Some(Conflict::Negation);
    }
    if wo.len() == wn.len() && wo.len() >= 3 {
        let diff: Vec<usize> = (0..wo.len()).filter(|&i| wo[i] != wn[i]).collect();
        if let [i] = diff[..]
            && i >= 2
            && has_digit(&wo[i])
            && has_digit(&wn[i])
            && wo[i + 1..].iter().all(|t| has_digit(t))
        {
            return Some(Conflict::ChangedValue);
        }
    }
    None
}

/// What the gate does with a new entry, given the entries there now.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Add it as a new entry.
    Add,
    /// A near-duplicate of `existing[index]` (similarity above [`NEAR_DUPLICATE_JACCARD`]):
    /// update that entry instead of adding.
    Merge {
        /// Index into the existing entries.
        index: usize,
        /// The Jaccard similarity (0.0–1.0).
        similarity: f64,
    },
    /// Contradicts `existing[index]`: the newer entry replaces it.
    Supersede {
        /// Index into the existing entries.
        index: usize,
        /// How they conflict.
        conflict: Conflict,
    },
}

/// Decides what adding `new` to `existing` does: the first conflicting entry is superseded;
/// else the most similar near-duplicate (the first among equals) is merged into; else the
/// entry is added. The information check is separate ([`check_information`]).
pub fn judge(existing: &[String], new: &str) -> Verdict {
    if let Some((index, conflict)) = existing
        .iter()
        .enumerate()
        .find_map(|(i, e)| conflict(e, new).map(|c| (i, c)))
    {
        return Verdict::Supersede { index, conflict };
    }
    let mut best: Option<(usize, f64)> = None;
    for (i, e) in existing.iter().enumerate() {
        let s = jaccard(e, new);
        if s > NEAR_DUPLICATE_JACCARD && best.is_none_or(|(_, b)| s > b) {
            best = Some((i, s));
        }
    }
    match best {
        Some((index, similarity)) => Verdict::Merge { index, similarity },
        None => Verdict::Add,
    }
}

/// The text a merge leaves in the existing entry's place: the existing entry when it already
/// holds every content word of the new one (nothing to learn; an exact duplicate stays a
/// no-op), else the new wording (the newer statement wins).
pub fn merged_text(existing: &str, new: &str) -> String {
    if content_set(new).is_subset(&content_set(existing)) {
        existing.to_string()
    } else {
        new.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_identifiers_and_split_cjk_into_bigrams() {
        assert_eq!(
            tokenize("Repo uses cargo-nextest (v0.9), see src/main.rs."),
            [
                "repo",
                "uses",
                "cargo-nextest",
                "v0.9",
                "see",
                "src/main.rs"
            ]
        );
        assert_eq!(
            tokenize("用户喜欢喝茶"),
            ["用户", "户喜", "喜欢", "欢喝", "喝茶"]
        );
        assert_eq!(tokenize("CI 在 arm64 上跑"), ["ci", "在", "arm64", "上跑"]);
        assert_eq!(tokenize("Don’t!"), ["don't"]);
        assert!(tokenize("... !!! — ").is_empty());
    }

    #[test]
    fn information_threshold_refuses_short_filler_and_repetitive_text() {
        for ok in [
            "User likes tea",
            "Prefers Rust",
            "Name is Ada",
            "Repo uses cargo-nextest",
            "用户喜欢喝茶",
            "部署窗口是周五下午",
        ] {
            assert_eq!(check_information(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check_information("ok"),
            Err(Refusal::TooShort {
                words: vec!["ok".into()]
            })
        );
        assert_eq!(
            check_information("the of and it is"),
            Err(Refusal::TooShort { words: vec![] })
        );
        assert_eq!(
            check_information("?!... — §"),
            Err(Refusal::TooShort { words: vec![] })
        );
        assert_eq!(
            check_information("好的"),
            Err(Refusal::TooShort {
                words: vec!["好的".into()]
            })
        );
        assert_eq!(
            check_information("Remember this, it is important!"),
            Err(Refusal::Restatement)
        );
        assert_eq!(
            check_information("The user said something important"),
            Err(Refusal::Restatement)
        );
        let repeated = "tea cake ".repeat(30);
        assert_eq!(
            check_information(&repeated),
            Err(Refusal::Repetitive {
                distinct: 2,
                tokens: 60
            })
        );
        // Exactly at the seed's 0.05: 2 distinct content words in 40 tokens passes.
        assert_eq!(check_information(&"tea cake ".repeat(20)), Ok(()));
    }

    #[test]
    fn refusals_say_what_to_write_instead() {
        let text = check_information("noted").unwrap_err().to_string();
        assert!(text.contains("1 content word (noted)"), "{text}");
        assert!(text.contains("Nothing was saved"), "{text}");
        assert!(text.contains("Write the fact itself"), "{text}");
        assert_eq!(Refusal::Restatement.rule(), "restatement");
    }

    #[test]
    fn jaccard_over_content_words_ascii() {
        assert_eq!(jaccard("User likes tea", "user LIKES tea."), 1.0);
        // Stop-words do not count: {project, uses, postgresql, 16, production} both sides.
        assert_eq!(
            jaccard(
                "The project uses PostgreSQL 16 in production",
                "Project uses PostgreSQL 16 for production"
            ),
            1.0
        );
        // 3 shared of 4: 0.75, not a near-duplicate.
        assert_eq!(
            jaccard("Repo uses cargo-nextest", "Repo uses cargo-nextest (v0.9)"),
            0.75
        );
        assert_eq!(jaccard("alpha beta", "gamma delta"), 0.0);
        assert_eq!(jaccard("", ""), 0.0);
        // One added detail on 7 words: 7 of 8, 0.875 > 0.85.
        let a = "User prefers dark mode in every editor and terminal";
        let b = "User prefers the dark mode theme in every editor and terminal";
        assert_eq!(jaccard(a, b), 0.875);
        // One changed word on 8: 7 of 9, 0.78 — a different statement.
        let c = "Deploys go out from the build server in Frankfurt every Tuesday night";
        let d = "Deploys go out from the build server in Frankfurt every Tuesday evening";
        assert!(jaccard(c, d) < NEAR_DUPLICATE_JACCARD);
    }

    #[test]
    fn jaccard_over_cjk_bigrams() {
        // 用户 户喜 喜欢 欢喝 喝茶 vs 用户 户喜 喜欢 欢喝 喝茶 茶。→ identical sets.
        assert_eq!(jaccard("用户喜欢喝茶", "用户喜欢喝茶。"), 1.0);
        // One changed character changes two bigrams: 3 shared of 7.
        let s = jaccard("用户喜欢喝茶", "用户喜欢喝酒");
        assert!((s - 4.0 / 6.0).abs() < 1e-9, "{s}");
        assert!(s < NEAR_DUPLICATE_JACCARD);
        // Long CJK sentences differing in a trailing particle are near-duplicates.
        let long_a = "这个项目的持续集成在每个工作日晚上运行完整的端到端测试";
        let long_b = "这个项目的持续集成在每个工作日晚上运行完整的端到端测试。";
        assert!(jaccard(long_a, long_b) > NEAR_DUPLICATE_JACCARD);
        let mixed_a = "CI 在 arm64 机器上运行测试套件";
        let mixed_b = "CI 在 arm64 机器上运行测试套件了";
        assert!(jaccard(mixed_a, mixed_b) > NEAR_DUPLICATE_JACCARD);
    }

    #[test]
    fn conflicts_are_narrow() {
        assert_eq!(
            conflict("Tests run in parallel", "Tests do not run in parallel"),
            Some(Conflict::Negation)
        );
        assert_eq!(
            conflict("Project uses Python 3.11", "Project uses Python 3.12"),
            Some(Conflict::ChangedValue)
        );
        assert_eq!(
            conflict(
                "Deploy window is Friday 14:00",
                "Deploy window is Friday 16:00"
            ),
            Some(Conflict::ChangedValue)
        );
        // Different facts, not conflicts.
        assert_eq!(
            conflict("concurrent fact 0 of hermes", "concurrent fact 1 of hermes"),
            None
        );
        assert_eq!(
            conflict("Server 1 is at 10.0.0.1", "Server 2 is at 10.0.0.2"),
            None
        );
        assert_eq!(conflict("User likes tea", "User likes coffee"), None);
        assert_eq!(conflict("User likes tea", "User likes tea"), None);
        assert_eq!(
            conflict("not tea", "tea"),
            None,
            "one word is not a statement"
        );
    }

    #[test]
    fn judge_prefers_conflicts_then_the_closest_near_duplicate() {
        let existing = vec![
            "Project uses Python 3.11".to_string(),
            "User prefers dark mode in every editor and terminal".to_string(),
        ];
        assert_eq!(
            judge(&existing, "Project uses Python 3.12"),
            Verdict::Supersede {
                index: 0,
                conflict: Conflict::ChangedValue
            }
        );
        assert!(matches!(
            judge(
                &existing,
                "User prefers the dark mode theme in every editor and terminal"
            ),
            Verdict::Merge { index: 1, .. }
        ));
        assert_eq!(judge(&existing, "User prefers tabs"), Verdict::Add);
        assert_eq!(
            merged_text("User likes green tea", "User likes tea"),
            "User likes green tea"
        );
        assert_eq!(
            merged_text("User likes tea", "User likes green tea"),
            "User likes green tea"
        );
    }
}
