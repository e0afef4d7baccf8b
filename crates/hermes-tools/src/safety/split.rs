//! Splitting a shell command line into simple commands (quote-aware) and stripping the
//! wrapper programs (`sudo`, `env`, `nohup`, …) in front of the real program.

/// How a simple command is joined to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Joiner {
    /// First command, or after `;`, `&&`, `||`, `&`, a newline or a bracket.
    Sequence,
    /// After a single `|` (the previous command's output feeds this one).
    Pipe,
}

/// One simple command: its raw text and how it is joined to the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) text: String,
    pub(crate) joiner: Joiner,
}

/// Splits `cmd` at `;`, `&&`, `||`, `|`, `&`, newlines, `(`, `)`, `{`, `}` and backticks
/// outside quotes. Quotes are kept in the segment text (shlex removes them later).
pub(crate) fn split_commands(cmd: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut joiner = Joiner::Sequence;
    let mut chars = cmd.chars().peekable();
    let mut single = false;
    let mut double = false;
    let push = |out: &mut Vec<Segment>, cur: &mut String, joiner: Joiner| {
        let t = cur.trim();
        if !t.is_empty() {
            out.push(Segment {
                text: t.to_string(),
                joiner,
            });
        }
        cur.clear();
    };
    while let Some(c) = chars.next() {
        if single {
            cur.push(c);
            if c == '\'' {
                single = false;
            }
            continue;
        }
        if c == '\\' {
            cur.push(c);
            if let Some(n) = chars.next() {
                cur.push(n);
            }
            continue;
        }
        if double {
            cur.push(c);
            if c == '"' {
                double = false;
            }
            continue;
        }
        match c {
            '\'' => {
                single = true;
                cur.push(c);
            }
            '"' => {
                double = true;
                cur.push(c);
            }
            '|' => {
                push(&mut out, &mut cur, joiner);
                if chars.peek() == Some(&'|') {
                    chars.next();
                    joiner = Joiner::Sequence;
                } else {
                    if chars.peek() == Some(&'&') {
                        chars.next();
                    }
                    joiner = Joiner::Pipe;
                }
            }
            '&' => {
                // `>&2`, `&>file` and `2>&1` are redirections, not separators.
                if cur.ends_with('>') || chars.peek() == Some(&'>') {
                    cur.push(c);
                    continue;
                }
                push(&mut out, &mut cur, joiner);
                if chars.peek() == Some(&'&') {
                    chars.next();
                }
                joiner = Joiner::Sequence;
            }
            ';' | '\n' | '(' | ')' | '{' | '}' | '`' => {
                // `$(` opens a command substitution: the `$` belongs to nothing.
                if c == '(' && cur.ends_with('$') {
                    cur.pop();
                }
                push(&mut out, &mut cur, joiner);
                joiner = Joiner::Sequence;
            }
            _ => cur.push(c),
        }
    }
    push(&mut out, &mut cur, joiner);
    out
}

/// Splits one simple command into words (shell quoting removed); falls back to whitespace
/// splitting when the quoting is unbalanced.
pub(crate) fn words(segment: &str) -> Vec<String> {
    shlex::split(segment)
        .unwrap_or_else(|| segment.split_whitespace().map(str::to_string).collect())
}

/// The real program of a simple command after wrappers, with its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Invocation {
    /// Program base name (`/bin/rm` → `rm`).
    pub(crate) program: String,
    /// Arguments after the program.
    pub(crate) args: Vec<String>,
    /// `sudo -S` (password from stdin) was used in front.
    pub(crate) sudo_stdin: bool,
}

/// Strips `VAR=value` assignments and wrapper programs (`sudo`, `doas`, `env`, `nohup`,
/// `time`, `command`, `exec`, `nice`, `timeout`, `xargs`, `stdbuf`, `builtin`).
pub(crate) fn invocation(words: &[String]) -> Option<Invocation> {
    let mut i = 0;
    let mut sudo_stdin = false;
    while i < words.len() {
        let w = words[i].as_str();
        let base = basename(w);
        if is_assignment(w) {
            i += 1;
            continue;
        }
        match base {
            "sudo" | "doas" => {
                i += 1;
                while i < words.len() && words[i].starts_with('-') {
                    let flag = words[i].as_str();
                    if flag == "--" {
                        i += 1;
                        break;
                    }
                    if !flag.starts_with("--") && flag.contains('S') {
                        sudo_stdin = true;
                    }
                    if flag == "--stdin" {
                        sudo_stdin = true;
                    }
                    // Options that take a value as the next word.
                    let takes = ["-u", "-g", "-p", "-C", "-D", "-h", "-r", "-t", "-U", "-T"];
                    i += if takes.contains(&flag) { 2 } else { 1 };
                }
            }
            "env" => {
                i += 1;
                while i < words.len() && (words[i].starts_with('-') || is_assignment(&words[i])) {
                    let flag = words[i].as_str();
                    i += if flag == "-u" || flag == "-C" { 2 } else { 1 };
                }
            }
            "nohup" | "time" | "command" | "exec" | "builtin" | "stdbuf" | "xargs" | "nice"
            | "ionice" | "setsid" | "timeout" => {
                i += 1;
                let value_flags = ["-n", "-I", "-L", "-P", "-s", "-d", "-c", "-k"];
                while i < words.len() && words[i].starts_with('-') {
                    let flag = words[i].as_str();
                    i += if value_flags.contains(&flag) { 2 } else { 1 };
                }
                if base == "timeout" && i < words.len() {
                    // The duration.
                    i += 1;
                }
            }
            _ => {
                return Some(Invocation {
                    program: base.to_string(),
                    args: words[i + 1..].to_vec(),
                    sudo_stdin,
                });
            }
        }
    }
    if sudo_stdin {
        return Some(Invocation {
            program: String::new(),
            args: Vec::new(),
            sudo_stdin,
        });
    }
    None
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// The last path component of a program word (`/usr/bin/rm` → `rm`, `\rm` → `rm`).
pub(crate) fn basename(w: &str) -> &str {
    let w = w.trim_start_matches('\\');
    w.rsplit('/').next().unwrap_or(w)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_operators_outside_quotes() {
        let s = split_commands("echo 'a;b' && rm -rf x | sh; ls &");
        let texts: Vec<_> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, vec!["echo 'a;b'", "rm -rf x", "sh", "ls"]);
        assert_eq!(s[2].joiner, Joiner::Pipe);
    }

    #[test]
    fn redirection_ampersand_is_not_a_separator() {
        let s = split_commands("cmd >/dev/null 2>&1 &");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].text, "cmd >/dev/null 2>&1");
    }

    #[test]
    fn wrappers_are_stripped() {
        let w = words("sudo -u root env A=1 nohup /bin/rm -rf /tmp/x");
        let inv = invocation(&w).unwrap();
        assert_eq!(inv.program, "rm");
        assert_eq!(inv.args, vec!["-rf", "/tmp/x"]);
        let w = words("sudo -S apt install x");
        assert!(invocation(&w).unwrap().sudo_stdin);
    }
}
