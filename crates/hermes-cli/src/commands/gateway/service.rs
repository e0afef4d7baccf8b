//! `hermes gateway install|uninstall|start|stop|restart` and the service line of `status`
//! (issue 20; Python Hermes' names): the gateway as a systemd user service,
//! `hermes-gateway.service` (`hermes-gateway-<profile>.service` for `-p NAME`, as Python
//! Hermes names them) in `~/.config/systemd/user/`, driven with `systemctl --user`. On a
//! machine without a user systemd the commands say so in one line and print the unit text
//! to use with another supervisor.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};

/// The unit's name without `.service`.
pub fn service_name(profile: Option<&str>) -> String {
    match profile {
        Some(p) if !p.is_empty() => format!("hermes-gateway-{p}"),
        _ => "hermes-gateway".to_string(),
    }
}

/// Where systemd reads user units: `$XDG_CONFIG_HOME/systemd/user` (default
/// `~/.config/systemd/user`).
fn unit_dir() -> Result<PathBuf> {
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(
            std::env::var_os("HOME")
                .context("HOME is not set; cannot find the systemd user folder")?,
        )
        .join(".config"),
    };
    Ok(config.join("systemd").join("user"))
}

/// The unit file of `profile`'s service.
pub fn unit_path(profile: Option<&str>) -> Result<PathBuf> {
    Ok(unit_dir()?.join(format!("{}.service", service_name(profile))))
}

/// The unit text: this binary running `gateway run` on this home, restarted on failure,
/// stopped with SIGTERM (the gateway drains its turns first).
pub fn unit_text(profile: Option<&str>, home: &std::path::Path) -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::path::absolute(p).ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "hermes".to_string());
    let profile_arg = profile.map(|p| format!(" -p {p}")).unwrap_or_default();
    format!(
        "[Unit]\n\
         Description=hermes messaging gateway ({home})\n\
         After=network-online.target\n\
         Wants=network-online.target\n\
         \n\
         [Service]\n\
         ExecStart={exe}{profile_arg} gateway run\n\
         Environment=\"HERMES_HOME={home}\"\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         KillSignal=SIGTERM\n\
         TimeoutStopSec=40\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        home = home.display()
    )
}

/// Runs `systemctl --user ARGS`; `Err` with the reason when systemctl is missing or cannot
/// reach a user systemd, `Ok((success, output))` otherwise.
fn systemctl(args: &[&str]) -> std::result::Result<(bool, String), String> {
    let out = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .output()
        .map_err(|e| format!("`systemctl` cannot be run ({e})"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let unreachable = [
        "Failed to connect to bus",
        "not been booted with systemd",
        "System has not been booted",
        "Failed to connect to user scope bus",
    ];
    if let Some(hit) = unreachable.iter().find(|m| text.contains(*m)) {
        return Err(format!("no user systemd here (systemctl: {hit})"));
    }
    Ok((out.status.success(), text.trim().to_string()))
}

/// Whether a user systemd answers; the reason when not.
fn systemd_available() -> std::result::Result<(), String> {
    systemctl(&["show-environment"]).map(|_| ())
}

/// Says that systemd is not there and shows the unit to use elsewhere; exit code 1.
fn without_systemd(reason: &str, profile: Option<&str>, home: &std::path::Path) -> i32 {
    errln!(
        "cannot manage the gateway as a service: {reason}. Run `hermes gateway run` under your own supervisor; as a systemd user unit it would be:"
    );
    print!("{}", unit_text(profile, home));
    1
}

/// `hermes gateway install`: writes the unit, reloads systemd, enables and starts it.
pub fn install(profile: Option<&str>, home: &std::path::Path) -> Result<i32> {
    if let Err(reason) = systemd_available() {
        return Ok(without_systemd(&reason, profile, home));
    }
    let path = unit_path(profile)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, unit_text(profile, home))
        .with_context(|| format!("writing {}", path.display()))?;
    let name = service_name(profile);
    for args in [
        vec!["daemon-reload"],
        vec!["enable", "--now", name.as_str()],
    ] {
        match systemctl(&args) {
            Ok((true, _)) => {}
            Ok((false, out)) => {
                errln!("error: systemctl --user {} failed: {out}", args.join(" "));
                return Ok(1);
            }
            Err(reason) => return Ok(without_systemd(&reason, profile, home)),
        }
    }
    outln!("installed {} and started it ({})", path.display(), name);
    outln!("logs: `journalctl --user -u {name} -f`, or `hermes logs -f`");
    Ok(0)
}

/// `hermes gateway uninstall`: stops and disables the service and removes its unit.
pub fn uninstall(profile: Option<&str>, home: &std::path::Path) -> Result<i32> {
    let path = unit_path(profile)?;
    let name = service_name(profile);
    if !path.exists() {
        outln!(
            "{name} is not installed ({} does not exist)",
            path.display()
        );
        return Ok(0);
    }
    match systemctl(&["disable", "--now", &name]) {
        Ok((true, _)) => {}
        Ok((false, out)) => errln!("warning: systemctl --user disable --now {name}: {out}"),
        Err(reason) => return Ok(without_systemd(&reason, profile, home)),
    }
    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    let _ = systemctl(&["daemon-reload"]);
    outln!("stopped {name} and removed {}", path.display());
    Ok(0)
}

/// `hermes gateway start|stop|restart`.
pub fn control(profile: Option<&str>, home: &std::path::Path, verb: &str) -> Result<i32> {
    if let Err(reason) = systemd_available() {
        return Ok(without_systemd(&reason, profile, home));
    }
    let path = unit_path(profile)?;
    let name = service_name(profile);
    if !path.exists() {
        errln!(
            "{name} is not installed; `hermes gateway install` sets it up (or run `hermes gateway run`)"
        );
        return Ok(1);
    }
    match systemctl(&[verb, &name]) {
        Ok((true, _)) => {
            let done = match verb {
                "start" => "started",
                "stop" => "stopped",
                _ => "restarted",
            };
            outln!("{done} {name}");
            Ok(0)
        }
        Ok((false, out)) => {
            errln!("error: systemctl --user {verb} {name} failed: {out}");
            Ok(1)
        }
        Err(reason) => Ok(without_systemd(&reason, profile, home)),
    }
}

/// The service line of `hermes gateway status`.
pub fn status_line(profile: Option<&str>) -> String {
    let name = service_name(profile);
    let installed = unit_path(profile).map(|p| p.exists()).unwrap_or(false);
    if !installed {
        return format!("service: {name} not installed (`hermes gateway install`)");
    }
    match systemctl(&["is-active", &name]) {
        Ok((_, state)) => format!(
            "service: {name} {}",
            state.lines().next().unwrap_or("unknown")
        ),
        Err(reason) => format!("service: {name} installed; state unknown: {reason}"),
    }
}
