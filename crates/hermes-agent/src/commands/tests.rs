use super::instead::INSTEAD;
use super::*;
use std::collections::HashSet;

/// Every variant; the `match` makes a new variant without an entry here a compile error.
fn all_ids() -> Vec<CommandId> {
    use CommandId::*;
    let ids = vec![
        New,
        Retry,
        Undo,
        Sessions,
        Resume,
        Status,
        Usage,
        Model,
        Compress,
        Memory,
        Skills,
        Cron,
        Stop,
        Approve,
        Deny,
        SetHome,
        Skin,
        Statusbar,
        Prompt,
        Help,
        Quit,
        Title,
        Insights,
        Personality,
        Platforms,
        Version,
        Config,
        Toolsets,
        History,
        Clear,
    ];
    for id in &ids {
        match id {
            New | Retry | Undo | Sessions | Resume | Status | Usage | Model | Compress | Memory
            | Skills | Cron | Stop | Approve | Deny | SetHome | Skin | Statusbar | Prompt
            | Help | Quit | Title | Insights | Personality | Platforms | Version | Config
            | Toolsets | History | Clear => {}
        }
    }
    ids
}

fn cmd(input: &str, surface: Surface) -> Invocation {
    match parse(input, surface) {
        Some(Parsed::Command(inv)) => inv,
        other => panic!("{input}: {other:?}"),
    }
}

#[test]
fn every_id_has_exactly_one_entry_and_names_are_unique() {
    for id in all_ids() {
        assert_eq!(COMMANDS.iter().filter(|c| c.id == id).count(), 1, "{id:?}");
        assert!(spec(id).is_some());
    }
    let mut seen = HashSet::new();
    for c in COMMANDS {
        assert!(!c.surfaces.is_empty(), "{} serves no surface", c.name);
        for n in std::iter::once(&c.name).chain(c.aliases) {
            assert!(seen.insert(*n), "/{n} is listed twice");
            assert_eq!(n.to_lowercase(), *n);
        }
    }
}

#[test]
fn the_gateway_serves_every_chat_command_of_issue_7() {
    for name in [
        "new", "reset", "retry", "undo", "status", "usage", "model", "compress", "stop", "approve",
        "deny", "sethome", "help",
    ] {
        let c = lookup(name).unwrap_or_else(|| panic!("/{name} missing"));
        assert!(c.on(Surface::Gateway), "/{name}");
    }
    for name in [
        "new", "reset", "retry", "undo", "sessions", "resume", "usage", "cron", "compress",
        "memory", "skills", "help", "quit", "exit",
    ] {
        assert!(lookup(name).is_some_and(|c| c.on(Surface::Cli)), "/{name}");
    }
}

#[test]
fn parses_names_aliases_bot_suffix_and_arguments() {
    let inv = cmd("/reset", Surface::Gateway);
    assert_eq!((inv.id, inv.name.as_str()), (CommandId::New, "reset"));
    let inv = cmd("/Undo@hermes_bot 2", Surface::Gateway);
    assert_eq!((inv.id, inv.count()), (CommandId::Undo, 2));
    assert_eq!(cmd("/undo", Surface::Cli).count(), 1);
    assert_eq!(
        cmd("/compress  the API design ", Surface::Cli).text(),
        Some("the API design")
    );
    assert_eq!(cmd("/compress", Surface::Cli).text(), None);
    assert_eq!(
        cmd("/approve Session", Surface::Gateway).text(),
        Some("session")
    );
    assert_eq!(cmd("/yes", Surface::Gateway).id, CommandId::Approve);
    assert_eq!(cmd("/start", Surface::Gateway).id, CommandId::Help);
    assert_eq!(cmd("/exit", Surface::Cli).id, CommandId::Quit);
    assert_eq!(cmd("/resume abc", Surface::Cli).text(), Some("abc"));
    // Alone, /resume offers the recent sessions to pick from (issue 20 item 4).
    assert_eq!(cmd("/resume", Surface::Cli).text(), None);
    assert_eq!(cmd("/compact", Surface::Cli).id, CommandId::Compress);
    assert_eq!(cmd("/gateway", Surface::Cli).id, CommandId::Platforms);
}

#[test]
fn python_hermes_commands_hermes_lacks_say_what_to_use_instead() {
    // Every name of the table is unknown to the registry (else it would never be reached)
    // and gets a one-line answer.
    for (names, _) in INSTEAD {
        for name in *names {
            assert!(lookup(name).is_none(), "/{name} is a real command");
            let msg = unknown_message(name);
            assert!(
                msg.starts_with(&format!("/{name} is not in hermes: ")),
                "{msg}"
            );
            assert!(!msg.contains('\n'), "{msg}");
        }
    }
    assert!(unknown_message("yolo").contains("hermes --yolo"));
}

#[test]
fn text_that_only_looks_like_a_command_is_not_one() {
    assert_eq!(parse("what is /etc/hosts", Surface::Cli), None);
    assert_eq!(parse("/etc/hosts is odd", Surface::Gateway), None);
    assert_eq!(parse("//comment", Surface::Cli), None);
    assert_eq!(parse("/new\nand more", Surface::Gateway), None);
    assert_eq!(parse("/", Surface::Gateway), None);
    assert_eq!(parse("/@bot", Surface::Gateway), None);
}

#[test]
fn unknown_names_come_back_with_their_argument() {
    assert_eq!(
        parse("/deploy-app  to staging ", Surface::Cli),
        Some(Parsed::Unknown {
            name: "deploy-app".into(),
            arg: "to staging".into()
        })
    );
    assert_eq!(
        unknown_message("frob"),
        "Unknown command /frob. /help lists the commands."
    );
}

#[test]
fn bad_arguments_and_wrong_surfaces_say_what_and_where() {
    let err = |input: &str, surface| match parse(input, surface) {
        Some(Parsed::Invalid(e)) => e.to_string(),
        other => panic!("{input}: {other:?}"),
    };
    assert_eq!(
        err("/undo x", Surface::Gateway),
        "/undo: expected a whole number of 1 or more, got \"x\" (usage: /undo [N])"
    );
    assert_eq!(
        err("/undo 0", Surface::Cli),
        "/undo: expected a whole number of 1 or more, got \"0\" (usage: /undo [N])"
    );
    assert_eq!(
        err("/new now", Surface::Cli),
        "/new: takes no argument, got \"now\" (usage: /new)"
    );
    assert_eq!(
        err("/approve forever", Surface::Gateway),
        "/approve: expected session or always or nothing, got \"forever\" (usage: /approve [session])"
    );
    assert_eq!(
        err("/quit", Surface::Gateway),
        "/quit is not available here; it works in the terminal (hermes). /help lists what works here."
    );
    assert_eq!(
        err("/sethome", Surface::Cli),
        "/sethome is not available here; it works in chats served by the gateway. /help lists what works here."
    );
}

#[test]
fn help_lists_exactly_the_commands_of_each_surface() {
    for surface in [Surface::Cli, Surface::Gateway] {
        let help = help_text(surface);
        for c in COMMANDS {
            let listed = help
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("/{}", c.name)));
            assert_eq!(listed, c.on(surface), "/{} in {surface:?} help", c.name);
        }
    }
    insta::assert_snapshot!("help_cli", help_text(Surface::Cli));
    insta::assert_snapshot!("help_gateway", help_text(Surface::Gateway));
}

#[test]
fn completion_offers_names_then_aliases_of_the_surface() {
    let names = |p: &str, s| {
        complete(p, s)
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>()
    };
    assert_eq!(names("re", Surface::Cli), ["retry", "resume", "reset"]);
    assert_eq!(names("/RE", Surface::Gateway), ["retry", "reset"]);
    assert_eq!(
        names("s", Surface::Gateway),
        ["status", "stop", "sethome", "set-home", "start"]
    );
    assert_eq!(names("zz", Surface::Cli), Vec::<&str>::new());
    assert_eq!(
        names("", Surface::Cli).len(),
        commands(Surface::Cli).count()
    );
}

/// Python Hermes' `/set-home` spelling is `/sethome` (HERMES_SURFACE lists it as the alias).
#[test]
fn set_home_is_an_alias_of_sethome() {
    assert_eq!(lookup("set-home").map(|c| c.id), Some(CommandId::SetHome));
}
