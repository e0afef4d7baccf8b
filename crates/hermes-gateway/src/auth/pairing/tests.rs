use super::*;

#[test]
fn the_pairing_directory_is_chosen_as_python_chooses_it() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    // Nothing yet: Python's new layout.
    assert_eq!(
        PairingStore::dir_for_home(root),
        root.join("platforms/pairing")
    );
    // An empty old stub does not count.
    std::fs::create_dir_all(root.join("pairing")).unwrap();
    assert_eq!(
        PairingStore::dir_for_home(root),
        root.join("platforms/pairing")
    );
    // An old directory with files wins, as in Python.
    std::fs::write(root.join("pairing/telegram-pending.json"), "{}").unwrap();
    assert_eq!(PairingStore::dir_for_home(root), root.join("pairing"));
}

fn store() -> (tempfile::TempDir, PairingStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = PairingStore::new(dir.path().join("pairing"));
    (dir, store)
}

fn issued(r: CodeRequest) -> String {
    match r {
        CodeRequest::Issued(c) => c,
        other => panic!("expected a code, got {other:?}"),
    }
}

fn read(s: &PairingStore, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(s.dir().join(name)).unwrap()).unwrap()
}

#[test]
fn codes_use_the_alphabet_without_look_alikes() {
    for _ in 0..200 {
        let c = new_code();
        assert_eq!(c.len(), CODE_LEN);
        assert!(!c.contains(['0', 'O', '1', 'I']), "{c}");
        assert!(c.bytes().all(|b| CODE_ALPHABET.contains(&b)));
    }
}

#[test]
fn files_have_pythons_shape_and_never_hold_the_code() {
    let (_d, s) = store();
    let code = issued(s.request_code("telegram", "42", Some("bob"), 1000).unwrap());
    let pending = read(&s, "telegram-pending.json");
    let (id, entry) = pending.as_object().unwrap().iter().next().unwrap();
    assert_eq!(id.len(), 16);
    assert_eq!(entry["user_id"], "42");
    assert_eq!(entry["user_name"], "bob");
    assert_eq!(entry["created_at"], 1000.0);
    assert_eq!(entry["hash"].as_str().unwrap().len(), 64);
    assert!(!pending.to_string().contains(&code));
    assert_eq!(read(&s, "_rate_limits.json")["telegram:42"], 1000.0);
    s.approve("telegram", &code, 1010).unwrap();
    let approved = read(&s, "telegram-approved.json");
    assert_eq!(approved["42"]["user_name"], "bob");
    assert_eq!(approved["42"]["approved_at"], 1010.0);
    assert_eq!(read(&s, "telegram-pending.json"), json!({}));
}

#[test]
fn approve_moves_the_user_to_approved_and_revoke_removes_them() {
    let (_d, s) = store();
    let code = issued(s.request_code("telegram", "42", Some("bob"), 1000).unwrap());
    assert!(!s.is_approved("telegram", "42").unwrap());
    let user = s.approve("telegram", &code.to_lowercase(), 1010).unwrap();
    assert_eq!(user.user_id, "42");
    assert!(s.is_approved("telegram", "42").unwrap());
    assert!(!s.is_approved("discord", "42").unwrap());
    assert!(s.overview(1010).unwrap().pending.is_empty());
    assert!(s.revoke("telegram", "42").unwrap());
    assert!(!s.is_approved("telegram", "42").unwrap());
    assert!(!s.revoke("telegram", "42").unwrap());
}

#[test]
fn codes_expire_after_an_hour() {
    let (_d, s) = store();
    let code = issued(s.request_code("slack", "U1", None, 0).unwrap());
    assert!(matches!(
        s.approve("slack", &code, CODE_TTL_S + 1),
        Err(PairingError::UnknownCode { .. })
    ));
}

#[test]
fn at_most_three_pending_per_platform_and_users_are_rate_limited() {
    let (_d, s) = store();
    for u in ["a", "b", "c"] {
        issued(s.request_code("telegram", u, None, 100).unwrap());
    }
    assert_eq!(
        s.request_code("telegram", "d", None, 100).unwrap(),
        CodeRequest::TooManyPending
    );
    // The refusal counted as d's request.
    assert_eq!(
        s.request_code("telegram", "d", None, 200).unwrap(),
        CodeRequest::RateLimited
    );
    assert_eq!(
        s.request_code("telegram", "a", None, 200).unwrap(),
        CodeRequest::RateLimited
    );
    // Other platforms have their own limit.
    issued(s.request_code("discord", "d", None, 100).unwrap());
    // After an hour the old codes are gone and a new one is issued.
    let later = 100 + CODE_TTL_S + 1;
    let again = issued(s.request_code("telegram", "a", None, later).unwrap());
    assert_eq!(s.overview(later).unwrap().pending.len(), 1);
    assert_eq!(s.approve("telegram", &again, later).unwrap().user_id, "a");
}

#[test]
fn repeated_wrong_codes_lock_approvals_and_new_codes() {
    let (_d, s) = store();
    let code = issued(s.request_code("telegram", "42", None, 0).unwrap());
    for _ in 0..MAX_FAILED_APPROVALS {
        assert!(matches!(
            s.approve("telegram", "ZZZZZZZZ", 0),
            Err(PairingError::UnknownCode { .. })
        ));
    }
    assert!(matches!(
        s.approve("telegram", &code, 20),
        Err(PairingError::LockedOut { .. })
    ));
    assert_eq!(
        s.request_code("telegram", "43", None, 20).unwrap(),
        CodeRequest::LockedOut
    );
    // The lockout ends when the code's hour does (it is still valid at its last second).
    assert_eq!(
        s.approve("telegram", &code, LOCKOUT_S).unwrap().user_id,
        "42"
    );
    issued(s.request_code("telegram", "44", None, LOCKOUT_S).unwrap());
}

#[cfg(unix)]
#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, s) = store();
    issued(s.request_code("telegram", "42", None, 0).unwrap());
    for name in ["telegram-pending.json", "_rate_limits.json"] {
        let mode = std::fs::metadata(s.dir().join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

#[test]
fn bad_platform_names_and_damaged_files_are_errors() {
    let (_d, s) = store();
    assert!(matches!(
        s.request_code("../x", "1", None, 0),
        Err(PairingError::BadPlatform(_))
    ));
    std::fs::create_dir_all(s.dir()).unwrap();
    std::fs::write(s.dir().join("telegram-approved.json"), "{nope").unwrap();
    let e = s.is_approved("telegram", "1").unwrap_err();
    assert!(e.to_string().contains("telegram-approved.json"), "{e}");
    std::fs::write(s.dir().join("telegram-approved.json"), "3").unwrap();
    let e = s.is_approved("telegram", "1").unwrap_err();
    assert!(e.to_string().contains("expected a JSON object"), "{e}");
}

#[test]
fn files_of_earlier_hermes_releases_are_migrated_once() {
    let (_d, s) = store();
    std::fs::create_dir_all(s.dir()).unwrap();
    std::fs::write(
        s.dir().join("telegram-pending.json"),
        r#"[{"code": "ABCD2345", "user_id": "7", "user_name": "eve", "created_at": 1000}]"#,
    )
    .unwrap();
    std::fs::write(
        s.dir().join("telegram-approved.json"),
        r#"[{"user_id": "5", "user_name": null, "approved_at": 900}]"#,
    )
    .unwrap();
    std::fs::write(
        s.dir().join("_limits.json"),
        r#"{"last_request": {"telegram:7": 1000}, "failed": {"telegram": 2}, "locked_until": {}}"#,
    )
    .unwrap();
    // Read before any write: the old shapes are understood.
    assert!(s.is_approved("telegram", "5").unwrap());
    s.migrate().unwrap();
    assert!(!s.dir().join("_limits.json").exists());
    // The old files stay beside, under names neither program reads.
    for name in [
        "_limits.json",
        "telegram-pending.json",
        "telegram-approved.json",
    ] {
        let kept = s.dir().join(format!("{name}.bak-hermes-list"));
        assert!(kept.is_file(), "{name}");
    }
    let again = std::fs::read_dir(s.dir()).unwrap().count();
    s.migrate().unwrap();
    assert_eq!(std::fs::read_dir(s.dir()).unwrap().count(), again, "once");
    let limits = read(&s, "_rate_limits.json");
    assert_eq!(limits["telegram:7"], 1000.0);
    assert_eq!(limits["_failures:telegram"], 2.0);
    assert!(read(&s, "telegram-approved.json")["5"].is_object());
    let pending = read(&s, "telegram-pending.json");
    assert!(!pending.to_string().contains("ABCD2345"));
    // The plain-text code of the old file is still approvable (it was hashed).
    assert_eq!(
        s.approve("telegram", "abcd2345", 1100).unwrap().user_id,
        "7"
    );
    assert!(s.is_approved("telegram", "5").unwrap());
}

#[test]
fn the_other_directory_is_merged_in_as_python_does() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    let new = root.join("platforms/pairing");
    std::fs::create_dir_all(&new).unwrap();
    std::fs::write(
        new.join("telegram-approved.json"),
        r#"{"1": {"user_name": "new", "approved_at": 1.0}, "2": {"user_name": "two", "approved_at": 2.0}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("pairing")).unwrap();
    std::fs::write(
        root.join("pairing/telegram-approved.json"),
        r#"{"1": {"user_name": "old", "approved_at": 3.0}}"#,
    )
    .unwrap();
    let s = PairingStore::for_home(root);
    assert_eq!(s.dir(), root.join("pairing"));
    assert!(!s.is_approved("telegram", "2").unwrap());
    s.migrate().unwrap();
    assert!(s.is_approved("telegram", "2").unwrap());
    assert_eq!(read(&s, "telegram-approved.json")["1"]["user_name"], "old");
}

#[test]
fn allowlists_follow_pythons_sync_rules() {
    assert_eq!(allowlist_env("telegram"), Some("TELEGRAM_ALLOWED_USERS"));
    assert_eq!(allowlist_env("qqbot"), Some("QQ_ALLOWED_USERS"));
    assert_eq!(allowlist_env("webhook"), None);
    assert_eq!(allowlist_with("", "9"), None);
    assert_eq!(allowlist_with(" 1, 2 ", "9").as_deref(), Some("1,2,9"));
    assert_eq!(allowlist_with("1,*", "9"), None);
    assert_eq!(allowlist_with("1,9", "9"), None);
    assert_eq!(allowlist_without("1,9", "9").as_deref(), Some("1"));
    assert_eq!(allowlist_without("9", "9").as_deref(), Some(""));
    assert_eq!(allowlist_without("1", "9"), None);
}

/// Replicas on one store (issue 21 item 4): the pairing state is a shared document of the
/// store. It starts from the home's files (a home switching to PostgreSQL keeps its paired
/// users; the files are left for Python Hermes), a code issued through one handle is approved
/// through another, and codes asked for at once on several handles all land.
#[test]
fn the_pairing_state_in_the_store_is_shared_by_every_handle() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    let files = PairingStore::for_home(root);
    let code = issued(
        files
            .request_code("telegram", "111", Some("ann"), 1_000)
            .unwrap(),
    );
    files.approve("telegram", &code, 1_010).unwrap();
    let before = std::fs::read_to_string(files.dir().join("telegram-approved.json")).unwrap();

    let db = root.join("shared.db");
    let open = || hermes_store::SessionStore::open(&db).unwrap();
    let a = PairingStore::in_store(root, open());
    let b = PairingStore::in_store(root, open());
    assert!(
        a.is_approved("telegram", "111").unwrap(),
        "imported from the files"
    );
    assert!(a.location().contains("shared pairing document"));

    let code = issued(
        a.request_code("telegram", "222", Some("bob"), 2_000)
            .unwrap(),
    );
    assert_eq!(b.overview(2_001).unwrap().pending.len(), 1);
    b.approve("telegram", &code, 2_002).unwrap();
    assert!(a.is_approved("telegram", "222").unwrap());
    assert!(
        !files.is_approved("telegram", "222").unwrap(),
        "the files are not written"
    );
    assert_eq!(
        std::fs::read_to_string(files.dir().join("telegram-approved.json")).unwrap(),
        before
    );

    // Three users ask at once on three handles: three codes pending, none lost.
    let threads: Vec<_> = ["301", "302", "303"]
        .into_iter()
        .map(|user| {
            let store = PairingStore::in_store(root, open());
            std::thread::spawn(move || {
                issued(store.request_code("discord", user, None, 3_000).unwrap())
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let pending: Vec<String> = a
        .overview(3_001)
        .unwrap()
        .pending
        .into_iter()
        .filter(|(p, _)| p == "discord")
        .map(|(_, c)| c.user_id)
        .collect();
    assert_eq!(pending.len(), 3, "{pending:?}");
    assert!(a.revoke("telegram", "111").unwrap());
    assert!(!b.is_approved("telegram", "111").unwrap());
}
