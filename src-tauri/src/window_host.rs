//! The window host (Linux): the window and the popover live in a child process, started when one
//! of them opens and ended when the last one closes, so a closed window gives all its memory back.
//!
//! Why a process: the tray app is a process the user keeps for days, mostly with the window
//! closed. Once WebKitGTK has made one web view, the process keeps what WebKit loaded for it for
//! good: Mesa's software GL driver (libLLVM's relocated tables, 8 MB of private pages), the
//! JavaScriptCore that reads the page's messages, the X server's shared-memory buffer. Destroying
//! the window and trimming the heap (`at_rest`) left 47 MB where a never-opened app holds 28 MB
//! (`docs/benchmarks.md`). No library call unloads them; a process that ends does.
//!
//! So the tray process never makes a web view. Opening the window spawns this same binary with
//! `--window-host`, joined to the app by a socket pair on its standard input: the host makes the
//! windows from the app's configuration, with the boot scripts the app hands it (the snapshot,
//! the saved window state, the desktop font), and carries everything across: each `invoke` from a
//! page goes to the app, which runs the very command the in-process window would have run
//! ([`dispatch`]), and each event the app emits for the pages comes back to be emitted in the
//! host. The app decides; the host only shows. When the host says its last window is gone, the
//! app tells it to exit; when the app dies, the host reads the end of its input and exits too,
//! so no orphan window outlives the tray.
//!
//! Under WebDriver (`TAURI_WEBVIEW_AUTOMATION=true`) the host is kept after its windows close:
//! the automation session lives in the host's web context, and the driver must find the next
//! window in the same browser process, as it did when the window lived in the app.
//!
//! The messages are JSON lines ([`ToHost`], [`FromHost`]); the channels to the writers are
//! bounded; the lock on the link is never held while writing or spawning.

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tauri::{AppHandle, Listener, Manager, Runtime};

pub use crate::window::{enabled, FromHost, PageCalls, ToHost, WindowHost, HOST_FLAG};
use crate::window::{write_lines, QUEUE};

use crate::limits::EVENT_LIMITS;

use crate::ipc::{
    CommandError, ErrorCode, EVENT_FOCUS, EVENT_INSTALL_RESULT, EVENT_OPEN_SETTINGS,
    EVENT_SESSIONS, EVENT_SETTINGS,
};

/// Every event the app emits for its pages: forwarded to the host.
pub const PAGE_EVENTS: &[&str] = &[
    EVENT_SESSIONS,
    EVENT_FOCUS,
    EVENT_SETTINGS,
    EVENT_OPEN_SETTINGS,
    EVENT_INSTALL_RESULT,
    EVENT_LIMITS,
];

/// Forwards every page event the app emits to the host now running.
pub fn forward_events<R: Runtime>(app: &AppHandle<R>) {
    for name in PAGE_EVENTS {
        let handle = app.clone();
        app.listen_any(*name, move |event| {
            if let Some(host) = handle.try_state::<Arc<WindowHost>>() {
                host.send_current(ToHost::Event {
                    name: (*name).to_string(),
                    payload: event.payload().to_string(),
                });
            }
        });
    }
}

/// A page's call, run in the app as the in-process window's `invoke` would have run it: the
/// same command, its arguments read from the page's JSON (camelCase keys, as Tauri reads them).
pub async fn dispatch<R: Runtime>(
    app: &AppHandle<R>,
    command: &str,
    args: serde_json::Value,
) -> Result<serde_json::Value, CommandError> {
    use crate::commands as c;
    fn arg<T: serde::de::DeserializeOwned>(
        args: &serde_json::Value,
        key: &str,
    ) -> Result<T, CommandError> {
        let value = args.get(key).cloned().unwrap_or(serde_json::Value::Null);
        serde_json::from_value(value).map_err(|e| {
            CommandError::new(
                ErrorCode::BadRequest,
                format!("argument {key} is not what the command takes: {e}"),
            )
        })
    }
    fn out<T: Serialize>(
        value: Result<T, CommandError>,
    ) -> Result<serde_json::Value, CommandError> {
        let value = value?;
        serde_json::to_value(value)
            .map_err(|e| CommandError::new(ErrorCode::BadRequest, e.to_string()))
    }
    let a = &args;
    match command {
        "get_snapshot" => {
            out(c::get_snapshot(app.clone(), app.state(), app.state(), app.state()).await)
        }
        "jump_to_session" => {
            out(c::jump_to_session(app.state(), arg(a, "sessionId")?, arg(a, "host")?).await)
        }
        "reveal_transcript" => {
            out(c::reveal_transcript(app.state(), arg(a, "sessionId")?, arg(a, "host")?).await)
        }
        "dismiss_session" => {
            out(c::dismiss_session(app.state(), arg(a, "sessionId")?, arg(a, "host")?).await)
        }
        "save_settings" => {
            out(c::save_settings(app.clone(), app.state(), arg(a, "settings")?).await)
        }
        "add_remote" => {
            out(c::add_remote(app.state(), arg(a, "name")?, arg(a, "destination")?).await)
        }
        "remove_remote" => out(c::remove_remote(app.state(), arg(a, "name")?).await),
        "install_hooks" => out(c::install_hooks().await),
        "hide_window" => out(c::hide_window(app.clone()).await),
        "get_window_memory" => out(c::get_window_memory(app.state()).await),
        "save_window_memory" => out(c::save_window_memory(app.state(), arg(a, "state")?).await),
        "get_today" => out(c::get_today(app.clone()).await),
        "get_history" => out(c::get_history(app.clone(), arg(a, "query")?).await),
        "get_session_detail" => {
            out(c::get_session_detail(app.clone(), arg(a, "sessionId")?, arg(a, "host")?).await)
        }
        "open_main_window" => out(c::open_main_window(app.clone()).await),
        "hide_popover" => out(c::hide_popover(app.clone()).await),
        "answer_request" => out(c::answer_request(
            app.state(),
            arg(a, "requestId")?,
            arg(a, "host")?,
            arg(a, "answer")?,
            arg(a, "message")?,
            arg(a, "from")?,
        )
        .await),
        "answer_question" => out(c::answer_question(
            app.state(),
            arg(a, "requestId")?,
            arg(a, "host")?,
            arg(a, "answers")?,
            arg(a, "from")?,
        )
        .await),
        "send_prompt" => out(c::send_prompt(
            app.state(),
            arg(a, "sessionId")?,
            arg(a, "host")?,
            arg(a, "text")?,
        )
        .await),
        "stop_turn" => out(c::stop_turn(app.state(), arg(a, "sessionId")?, arg(a, "host")?).await),
        "get_answering" => out(c::get_answering().await),
        "set_answering" => {
            out(c::set_answering(arg(a, "agent")?, arg(a, "enabled")?, arg(a, "waitSecs")?).await)
        }
        other => Err(CommandError::new(
            ErrorCode::BadRequest,
            format!("no command {other}"),
        )),
    }
}

/// [`dispatch`] as the window's [`PageCalls`] takes it.
pub fn page_calls<R: Runtime>() -> PageCalls<R> {
    PageCalls(|app, command, args| Box::pin(async move { dispatch(&app, &command, args).await }))
}

/// The host's side: what it sends the app and the page calls waiting for their answers.
struct HostSide {
    to_app: SyncSender<FromHost>,
    waiting: Mutex<std::collections::HashMap<u64, tauri::ipc::InvokeResolver<tauri::Wry>>>,
    next_id: std::sync::atomic::AtomicU64,
    /// Whether the popover has had the focus since it opened (it closes when it loses it).
    popover_had_focus: std::sync::atomic::AtomicBool,
}

impl HostSide {
    fn send(&self, message: FromHost) {
        if let Err(TrySendError::Full(message)) = self.to_app.try_send(message) {
            tracing::warn!(?message, "the app is not reading; message dropped");
        }
    }

    fn waiting(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<u64, tauri::ipc::InvokeResolver<tauri::Wry>>,
    > {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs this process as the window host of the app on the other end of its standard input,
/// until the app says `exit` or goes away; the process's exit code. Refuses (2, before any
/// logging or GUI) when its standard input is not a socket: the app starts hosts itself, a
/// person never needs to. `logging` starts the log once the link is known good; its guard lives
/// as long as the host.
pub fn run_host<G>(
    context: impl FnOnce() -> tauri::Context<tauri::Wry>,
    logging: impl FnOnce() -> G,
) -> i32 {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let linked = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|file| {
            if file.metadata()?.file_type().is_socket() {
                Ok(UnixStream::from(std::os::fd::OwnedFd::from(file)))
            } else {
                Err(std::io::Error::other("it is not a socket"))
            }
        });
    let stream = match linked {
        Ok(stream) => stream,
        Err(error) => {
            eprintln!(
                "agent-tray-desktop {HOST_FLAG}: the app starts its window host itself, linked \
                 by a socket on standard input ({error}); run agent-tray-desktop to open the window"
            );
            return 2;
        }
    };
    let _log_guard = logging();
    tracing::info!("window_host_main");
    let (writer, reader) = match stream.try_clone() {
        Ok(writer) => (writer, stream),
        Err(error) => {
            eprintln!("agent-tray-desktop {HOST_FLAG}: {error}");
            return 2;
        }
    };
    let (to_app, messages) = sync_channel(QUEUE);
    if let Err(error) = std::thread::Builder::new()
        .name("to-app".into())
        .spawn(move || write_lines(writer, messages, |_| false))
    {
        eprintln!("agent-tray-desktop {HOST_FLAG}: {error}");
        return 2;
    }
    let side = Arc::new(HostSide {
        to_app,
        waiting: Mutex::new(std::collections::HashMap::new()),
        next_id: std::sync::atomic::AtomicU64::new(1),
        popover_had_focus: std::sync::atomic::AtomicBool::new(false),
    });
    let invoking = side.clone();
    let setup_side = side.clone();
    let built = tauri::Builder::default()
        .plugin(tauri_plugin_positioner::init())
        .invoke_handler(move |invoke| {
            let id = invoking
                .next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let command = invoke.message.command().to_string();
            let args = match invoke.message.payload() {
                tauri::ipc::InvokeBody::Json(value) => value.clone(),
                tauri::ipc::InvokeBody::Raw(_) => serde_json::Value::Null,
            };
            invoking.waiting().insert(id, invoke.resolver);
            invoking.send(FromHost::Invoke { id, command, args });
            true
        })
        .setup(move |app| {
            tracing::info!("window_host_ready");
            let handle = app.handle().clone();
            std::thread::Builder::new()
                .name("from-app".into())
                .spawn(move || {
                    for line in BufReader::new(reader).lines() {
                        let Ok(line) = line else { break };
                        match serde_json::from_str::<ToHost>(&line) {
                            Ok(ToHost::Exit) => break,
                            Ok(message) => host_apply(&handle, &setup_side, message),
                            Err(error) => {
                                tracing::warn!(%error, "the app sent what is not a message")
                            }
                        }
                    }
                    handle.exit(0);
                })?;
            Ok(())
        })
        .build(context());
    let app = match built {
        Ok(app) => app,
        Err(error) => {
            eprintln!("agent-tray-desktop {HOST_FLAG}: cannot start: {error}");
            return 1;
        }
    };
    app.run(|_, event| {
        // Its last window closed: the app decides whether the host ends (it says `exit`).
        if let tauri::RunEvent::ExitRequested {
            code: None, api, ..
        } = &event
        {
            api.prevent_exit();
        }
    });
    0
}

/// Carries out one of the app's messages in the host.
fn host_apply(app: &AppHandle<tauri::Wry>, side: &Arc<HostSide>, message: ToHost) {
    use tauri::Emitter;
    match message {
        ToHost::Open {
            label,
            scripts,
            show,
            popover,
        } => host_open(app, side, &label, &scripts, show, popover),
        ToHost::Close { label } => {
            if let Some(window) = app.get_webview_window(&label) {
                let _ = window.destroy();
            }
        }
        ToHost::Event { name, payload } => {
            if let Err(error) = app.emit_str(&name, payload) {
                tracing::warn!(%error, "cannot emit an event to the pages");
            }
        }
        ToHost::Reply { id, ok, value } => {
            if let Some(resolver) = side.waiting().remove(&id) {
                if ok {
                    resolver.resolve(value);
                } else {
                    resolver.reject(value);
                }
            }
        }
        ToHost::Exit => {}
    }
}

fn host_open(
    app: &AppHandle<tauri::Wry>,
    side: &Arc<HostSide>,
    label: &str,
    scripts: &[String],
    show: bool,
    popover: bool,
) {
    let window = match app.get_webview_window(label) {
        Some(window) => window,
        None => match host_create(app, side, label, scripts, popover) {
            Ok(window) => window,
            Err(error) => {
                tracing::warn!(%error, label, "cannot create the window");
                side.send(FromHost::Destroyed {
                    label: label.to_string(),
                });
                return;
            }
        },
    };
    if show {
        let _ = window.unminimize();
        let _ = window.show();
        if popover {
            place_popover(&window);
        }
        let _ = window.set_focus();
    }
}

fn host_create(
    app: &AppHandle<tauri::Wry>,
    side: &Arc<HostSide>,
    label: &str,
    scripts: &[String],
    is_popover: bool,
) -> tauri::Result<tauri::WebviewWindow<tauri::Wry>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == label)
        .cloned()
        .ok_or(tauri::Error::WindowNotFound)?;
    let mut builder = tauri::WebviewWindowBuilder::from_config(app, &config)?;
    for script in scripts {
        builder = builder.initialization_script(script);
    }
    let window = builder.build()?;
    tracing::info!(label, "host_window_created");
    if is_popover {
        side.popover_had_focus
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }
    let events_side = side.clone();
    let events_window = window.clone();
    let owned_label = label.to_string();
    window.on_window_event(move |event| match event {
        tauri::WindowEvent::Destroyed => events_side.send(FromHost::Destroyed {
            label: owned_label.clone(),
        }),
        // The popover: placed again once it has its size (GTK reports none at first), closed
        // once it loses the focus it had (see `popover`).
        tauri::WindowEvent::Resized(size) if is_popover && size.width > 0 => {
            place_popover(&events_window);
        }
        tauri::WindowEvent::Focused(true) if is_popover => {
            events_side
                .popover_had_focus
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        tauri::WindowEvent::Focused(false) if is_popover => {
            let had = events_side
                .popover_had_focus
                .load(std::sync::atomic::Ordering::Relaxed);
            if agent_tray::shell_policy::popover::closes_on_focus_loss(had) {
                tracing::info!("popover_lost_focus");
                // Not from inside the window's own event handler: asked from another thread,
                // the destroy lands on the event loop next.
                let window = events_window.clone();
                std::thread::spawn(move || drop(window.destroy()));
            }
        }
        _ => {}
    });
    Ok(window)
}

/// Linux tray hosts report no clicks: the popover goes to the screen's top right corner, where
/// the tray usually is (see `popover`).
fn place_popover(window: &tauri::WebviewWindow<tauri::Wry>) {
    use tauri_plugin_positioner::{Position, WindowExt};
    if let Err(error) = window.move_window(Position::TopRight) {
        tracing::warn!(%error, "cannot place the popover");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_windows_leave_the_tray_process_on_linux_unless_asked_to_stay() {
        assert_eq!(enabled(None), cfg!(target_os = "linux"));
        assert_eq!(
            enabled(Some(std::ffi::OsStr::new("0"))),
            cfg!(target_os = "linux")
        );
        assert!(!enabled(Some(std::ffi::OsStr::new("1"))));
    }

    #[test]
    fn messages_are_tagged_json_lines_both_ways() {
        let open = ToHost::Open {
            label: "main".into(),
            scripts: vec!["window.x = 1;".into()],
            show: true,
            popover: false,
        };
        let line = serde_json::to_string(&open).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap()["kind"],
            "open"
        );
        assert_eq!(serde_json::from_str::<ToHost>(&line).unwrap(), open);
        let invoke: FromHost = serde_json::from_str(
            r#"{"kind":"invoke","id":4,"command":"stop_turn","args":{"sessionId":"s"}}"#,
        )
        .unwrap();
        assert_eq!(
            invoke,
            FromHost::Invoke {
                id: 4,
                command: "stop_turn".into(),
                args: serde_json::json!({"sessionId": "s"}),
            }
        );
        assert!(serde_json::from_str::<FromHost>(r#"{"kind":"format_disk"}"#).is_err());
    }

    #[test]
    fn every_event_the_shell_emits_for_its_pages_is_forwarded_to_the_host() {
        // An event missing here would reach no page once the window left the app's process.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut emitted = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            // This file emits in the host what the app forwarded.
            if path.ends_with("window_host.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (at, _) in text.match_indices(".emit(") {
                let name: String = text[at + 6..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                emitted.insert(name.rsplit("::").next().unwrap().to_string());
            }
        }
        assert!(emitted.len() >= 6, "{emitted:?}");
        let constants: std::collections::BTreeMap<&str, &str> = [
            ("EVENT_SESSIONS", EVENT_SESSIONS),
            ("EVENT_FOCUS", EVENT_FOCUS),
            ("EVENT_SETTINGS", EVENT_SETTINGS),
            ("EVENT_OPEN_SETTINGS", EVENT_OPEN_SETTINGS),
            ("EVENT_INSTALL_RESULT", EVENT_INSTALL_RESULT),
            ("EVENT_LIMITS", EVENT_LIMITS),
        ]
        .into();
        for name in &emitted {
            let event = constants
                .get(name.as_str())
                .unwrap_or_else(|| panic!("{name} is emitted but not known here"));
            assert!(PAGE_EVENTS.contains(event), "{name} is not forwarded");
        }
    }
}
