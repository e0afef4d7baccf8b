//! A strict Telegram MarkdownV2 checker for tests: walks a message the way the Bot API
//! parses it ("MarkdownV2 style": entities `*bold*`, `_italic_`, `__underline__`,
//! `~strike~`, `||spoiler||`, `` `code` ``, ```` ```pre``` ````, `[text](url)`, `>` quotes;
//! every other reserved character must be escaped with `\`) and reports what Telegram would
//! reject. Stricter than Telegram in one way: entities must nest properly.

#![allow(dead_code)]

/// What the walk found.
#[derive(Debug, Default)]
pub struct Report {
    /// A `\` as the very last character.
    pub dangling_backslash: usize,
    /// Reserved characters outside entities that were not escaped.
    pub unescaped_reserved: usize,
    /// Unclosed or misnested entities, bad escapes inside code or URLs.
    pub structure_errors: Vec<String>,
    /// The visible text (escapes removed, entity markers dropped, link URLs hidden).
    pub plain: String,
    /// Number of complete links.
    pub links: usize,
}

impl Report {
    /// True when Telegram would accept the message.
    pub fn is_valid(&self) -> bool {
        self.dangling_backslash == 0
            && self.unescaped_reserved == 0
            && self.structure_errors.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ent {
    Bold,
    Italic,
    Underline,
    Strike,
    Spoiler,
    LinkText,
}

/// Walks `s` as Telegram's MarkdownV2 parser does.
pub fn check(s: &str) -> Report {
    let c: Vec<char> = s.chars().collect();
    let mut r = Report::default();
    let mut stack: Vec<Ent> = Vec::new();
    let mut line_start = true;
    let mut i = 0;
    let toggle = |stack: &mut Vec<Ent>, e: Ent, r: &mut Report, at: usize| {
        if stack.last() == Some(&e) {
            stack.pop();
        } else if stack.contains(&e) {
            r.structure_errors
                .push(format!("misnested {e:?} at char {at}"));
        } else {
            stack.push(e);
        }
    };
    while i < c.len() {
        let ch = c[i];
        let was_line_start = line_start;
        line_start = false;
        match ch {
            '\\' => {
                let Some(&next) = c.get(i + 1) else {
                    r.dangling_backslash += 1;
                    break;
                };
                if !(1..=126).contains(&(next as u32)) {
                    r.structure_errors
                        .push(format!("escape of a non-ASCII char at {i}"));
                }
                r.plain.push(next);
                i += 2;
                continue;
            }
            '`' => {
                let pre = c.get(i + 1) == Some(&'`') && c.get(i + 2) == Some(&'`');
                if pre {
                    i += 3;
                    // Language up to the end of the line.
                    while i < c.len() && c[i] != '\n' {
                        if c[i] == '`' || c[i] == '\\' {
                            r.structure_errors
                                .push(format!("bad pre language char at {i}"));
                        }
                        i += 1;
                    }
                    i += 1;
                } else {
                    i += 1;
                }
                let mut closed = false;
                while i < c.len() {
                    match c[i] {
                        '\\' => match c.get(i + 1) {
                            Some('`') | Some('\\') => {
                                r.plain.push(c[i + 1]);
                                i += 2;
                            }
                            _ => {
                                r.structure_errors
                                    .push(format!("unescaped \\ in code at {i}"));
                                i += 1;
                            }
                        },
                        '`' => {
                            if pre {
                                if c.get(i + 1) == Some(&'`') && c.get(i + 2) == Some(&'`') {
                                    i += 3;
                                    closed = true;
                                    break;
                                }
                                r.structure_errors
                                    .push(format!("unescaped ` in pre at {i}"));
                                i += 1;
                            } else {
                                i += 1;
                                closed = true;
                                break;
                            }
                        }
                        other => {
                            r.plain.push(other);
                            i += 1;
                        }
                    }
                }
                if !closed {
                    r.structure_errors.push("unclosed code/pre".to_string());
                }
                continue;
            }
            '*' => toggle(&mut stack, Ent::Bold, &mut r, i),
            '_' => {
                if c.get(i + 1) == Some(&'_') {
                    toggle(&mut stack, Ent::Underline, &mut r, i);
                    i += 1;
                } else {
                    toggle(&mut stack, Ent::Italic, &mut r, i);
                }
            }
            '~' => toggle(&mut stack, Ent::Strike, &mut r, i),
            '|' => {
                if c.get(i + 1) == Some(&'|') {
                    toggle(&mut stack, Ent::Spoiler, &mut r, i);
                    i += 1;
                } else {
                    r.unescaped_reserved += 1;
                }
            }
            '[' => {
                if stack.contains(&Ent::LinkText) {
                    r.structure_errors.push(format!("nested link at {i}"));
                }
                stack.push(Ent::LinkText);
            }
            ']' => {
                if stack.last() == Some(&Ent::LinkText) {
                    stack.pop();
                    if c.get(i + 1) != Some(&'(') {
                        r.structure_errors
                            .push(format!("link text without (url) at {i}"));
                    } else {
                        i += 2;
                        let mut closed = false;
                        while i < c.len() {
                            match c[i] {
                                '\\' => match c.get(i + 1) {
                                    Some(')') | Some('\\') => i += 2,
                                    _ => {
                                        r.structure_errors
                                            .push(format!("bad escape in URL at {i}"));
                                        i += 1;
                                    }
                                },
                                ')' => {
                                    closed = true;
                                    break;
                                }
                                _ => i += 1,
                            }
                        }
                        if closed {
                            r.links += 1;
                        } else {
                            r.structure_errors.push("unclosed link URL".to_string());
                        }
                    }
                } else {
                    r.unescaped_reserved += 1;
                }
            }
            '>' if was_line_start => {}
            '(' | ')' | '#' | '+' | '-' | '=' | '.' | '!' | '{' | '}' | '>' => {
                r.unescaped_reserved += 1;
                r.plain.push(ch);
            }
            '\n' => {
                line_start = true;
                r.plain.push(ch);
            }
            other => r.plain.push(other),
        }
        i += 1;
    }
    if !stack.is_empty() {
        r.structure_errors
            .push(format!("unclosed entities at the end: {stack:?}"));
    }
    r
}

#[test]
fn checker_catches_what_telegram_rejects() {
    assert!(
        check(
            r"a \. *b* _c_ `x\`y` [t](https://e\)x) ```rust
fn x() {}
```"
        )
        .is_valid()
    );
    assert_eq!(check("end.").unescaped_reserved, 1);
    assert_eq!(check(r"torn\").dangling_backslash, 1);
    assert!(!check("see [docs](https://exa").is_valid());
    assert!(!check("*open").is_valid());
    assert!(!check("*a _b* c_").is_valid());
    assert_eq!(check("(1/2)").unescaped_reserved, 2);
}
