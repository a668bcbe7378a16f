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

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Listener, Manager, Runtime};

use crate::limits::EVENT_LIMITS;

use crate::ipc::{
    CommandError, ErrorCode, EVENT_FOCUS, EVENT_INSTALL_RESULT, EVENT_OPEN_SETTINGS,
    EVENT_SESSIONS, EVENT_SETTINGS,
};

/// The command-line flag that makes the binary a window host.
pub const HOST_FLAG: &str = "--window-host";

/// How many messages may wait for a writer before one is dropped (a host that stopped reading).
const QUEUE: usize = 1024;

/// Every event the app emits for its pages: forwarded to the host.
pub const PAGE_EVENTS: &[&str] = &[
    EVENT_SESSIONS,
    EVENT_FOCUS,
    EVENT_SETTINGS,
    EVENT_OPEN_SETTINGS,
    EVENT_INSTALL_RESULT,
    EVENT_LIMITS,
];

/// What the app tells its window host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToHost {
    /// Makes the window `label` (from the configuration) unless it exists, with `scripts` run
    /// before the page's own; shows, unminimises and focuses it when `show`.
    Open {
        label: String,
        scripts: Vec<String>,
        show: bool,
    },
    /// Destroys the window `label`.
    Close { label: String },
    /// Emits `name` with `payload` (JSON text) to the host's pages.
    Event { name: String, payload: String },
    /// The answer to the page's call `id`: its value, or the command's error.
    Reply {
        id: u64,
        ok: bool,
        value: serde_json::Value,
    },
    /// No window is left: the host ends.
    Exit,
}

/// What the window host tells the app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FromHost {
    /// A page called `command` with `args` (its JSON, keys as the page sent them).
    Invoke {
        id: u64,
        command: String,
        args: serde_json::Value,
    },
    /// The window `label` is gone (its close button, or the popover lost the focus).
    Destroyed { label: String },
}

/// Whether the app keeps its windows in a host process: on Linux, unless
/// `AGENT_TRAY_WINDOW_IN_PROCESS=1` asks for the old way (a debugging aid).
pub fn enabled(in_process: Option<&std::ffi::OsStr>) -> bool {
    cfg!(target_os = "linux") && in_process.is_none_or(|v| v != "1")
}

/// The app's side: the host now running (if any) and the windows it shows.
#[derive(Debug)]
pub struct WindowHost {
    link: Mutex<Option<Link>>,
    /// Kept after its last window closes (WebDriver drives it).
    keep_alive: bool,
    generation: std::sync::atomic::AtomicU64,
    /// The program and arguments of a host; `None`: this binary with [`HOST_FLAG`].
    program: Option<(std::path::PathBuf, Vec<String>)>,
}

#[derive(Debug)]
struct Link {
    generation: u64,
    to_host: SyncSender<ToHost>,
    /// The windows the host shows, and whether each was shown (a prewarmed one is not).
    windows: BTreeMap<String, bool>,
}

/// What a change of the host's windows leaves for the caller to do once the lock is released.
struct Started {
    generation: u64,
    messages: Receiver<ToHost>,
    to_host: SyncSender<ToHost>,
}

impl WindowHost {
    pub fn new(keep_alive: bool) -> Self {
        WindowHost {
            link: Mutex::new(None),
            keep_alive,
            generation: std::sync::atomic::AtomicU64::new(0),
            program: None,
        }
    }

    /// Starts `program` with `args` as the host instead of this binary (the tests' scripted
    /// hosts).
    pub fn with_program(mut self, program: std::path::PathBuf, args: Vec<String>) -> Self {
        self.program = Some((program, args));
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Link>> {
        // Plain data: still valid after a panic elsewhere.
        self.link.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the host shows the window `label`.
    pub fn exists(&self, label: &str) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|l| l.windows.contains_key(label))
    }

    /// Whether the window `label` exists and was shown.
    pub fn is_shown(&self, label: &str) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|l| l.windows.get(label) == Some(&true))
    }

    /// Whether any window is open in the host.
    pub fn any_window(&self) -> bool {
        self.lock().as_ref().is_some_and(|l| !l.windows.is_empty())
    }

    /// Opens the window `label` in the host (starting one if none runs); `scripts` is asked for
    /// only when the window does not exist yet. Whether it was created now.
    pub fn open<R: Runtime>(
        &self,
        app: &AppHandle<R>,
        label: &str,
        scripts: impl FnOnce() -> Vec<String>,
        show: bool,
    ) -> bool {
        let exists = self.exists(label);
        let scripts = if exists { Vec::new() } else { scripts() };
        let message = ToHost::Open {
            label: label.to_string(),
            scripts,
            show,
        };
        let started = {
            let mut link = self.lock();
            let started = match link.as_ref() {
                Some(_) => None,
                None => {
                    let generation = self
                        .generation
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        + 1;
                    let (to_host, messages) = sync_channel(QUEUE);
                    *link = Some(Link {
                        generation,
                        to_host: to_host.clone(),
                        windows: BTreeMap::new(),
                    });
                    Some(Started {
                        generation,
                        messages,
                        to_host,
                    })
                }
            };
            if let Some(link) = link.as_mut() {
                let shown = link.windows.get(label).copied().unwrap_or(false) || show;
                link.windows.insert(label.to_string(), shown);
                send(&link.to_host, message);
            }
            started
        };
        if let Some(started) = started {
            let generation = started.generation;
            if let Err(error) = spawn_host(app, self.program.as_ref(), started) {
                tracing::warn!(%error, "cannot start the window host");
                // No host: the next open tries again.
                self.ended(app, generation);
            }
        }
        note_presence(app, self.any_window());
        !exists
    }

    /// Closes the window `label`; the host ends with its last window.
    pub fn close<R: Runtime>(&self, app: &AppHandle<R>, label: &str) {
        {
            let mut link = self.lock();
            let Some(current) = link.as_mut() else {
                return;
            };
            if current.windows.remove(label).is_none() {
                return;
            }
            send(
                &current.to_host,
                ToHost::Close {
                    label: label.to_string(),
                },
            );
            self.end_if_empty(&mut link);
        }
        self.after_gone(app, label);
    }

    /// The host said the window `label` is gone.
    fn destroyed<R: Runtime>(&self, app: &AppHandle<R>, generation: u64, label: &str) {
        {
            let mut link = self.lock();
            match link.as_mut() {
                Some(current) if current.generation == generation => {
                    if current.windows.remove(label).is_none() {
                        return;
                    }
                }
                _ => return,
            }
            self.end_if_empty(&mut link);
        }
        self.after_gone(app, label);
    }

    /// The host's input ended (it exited or crashed): its windows are gone.
    fn ended<R: Runtime>(&self, app: &AppHandle<R>, generation: u64) {
        let had_main = {
            let mut link = self.lock();
            match link.as_ref() {
                Some(current) if current.generation == generation => {
                    let had_main = current.windows.contains_key(crate::window::MAIN);
                    *link = None;
                    had_main
                }
                _ => return,
            }
        };
        if had_main {
            self.after_gone(app, crate::window::MAIN);
        } else {
            note_presence(app, self.any_window());
        }
    }

    fn end_if_empty(&self, link: &mut Option<Link>) {
        let empty = link.as_ref().is_some_and(|l| l.windows.is_empty());
        if empty && !self.keep_alive {
            if let Some(ended) = link.take() {
                send(&ended.to_host, ToHost::Exit);
            }
        }
    }

    fn after_gone<R: Runtime>(&self, app: &AppHandle<R>, label: &str) {
        if label == crate::window::MAIN {
            if let Some(memory) = app.try_state::<crate::window::WindowMemoryStore>() {
                memory.not_listening();
            }
        }
        note_presence(app, self.any_window());
    }

    /// Hands `message` to the host now running, if any.
    fn send_current(&self, message: ToHost) {
        if let Some(link) = self.lock().as_ref() {
            send(&link.to_host, message);
        }
    }
}

fn note_presence<R: Runtime>(app: &AppHandle<R>, open: bool) {
    if let Some(presence) = app.try_state::<crate::window::WindowPresence>() {
        presence.set(open);
    }
}

/// Queues `message` for the writer; a host that stopped reading loses it (and says so in the
/// log) rather than blocking the app.
fn send(to_host: &SyncSender<ToHost>, message: ToHost) {
    match to_host.try_send(message) {
        Ok(()) | Err(TrySendError::Disconnected(_)) => {}
        Err(TrySendError::Full(message)) => {
            tracing::warn!(?message, "the window host is not reading; message dropped");
        }
    }
}

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

fn spawn_host<R: Runtime>(
    app: &AppHandle<R>,
    program: Option<&(std::path::PathBuf, Vec<String>)>,
    started: Started,
) -> std::io::Result<()> {
    let (ours, theirs) = UnixStream::pair()?;
    let (program, args) = match program {
        Some((program, args)) => (program.clone(), args.clone()),
        None => (std::env::current_exe()?, vec![HOST_FLAG.to_string()]),
    };
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            theirs,
        )))
        .stdout(std::process::Stdio::null())
        .spawn()?;
    tracing::info!(pid = child.id(), "window_host_started");
    let writer = ours.try_clone()?;
    let Started {
        generation,
        messages,
        to_host,
    } = started;
    std::thread::Builder::new()
        .name("window-host-writer".into())
        .spawn(move || write_lines(writer, messages))?;
    let handle = app.clone();
    std::thread::Builder::new()
        .name("window-host-reader".into())
        .spawn(move || {
            read_host(&handle, generation, ours, &to_host);
            drop(to_host);
            if let Some(host) = handle.try_state::<Arc<WindowHost>>() {
                host.ended(&handle, generation);
            }
            reap(&mut child);
        })?;
    Ok(())
}

/// Waits for the host that closed its end (it is exiting); one still running 5 s later is
/// killed, so none outlives its link.
fn reap(child: &mut std::process::Child) {
    for _ in 0..50 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn write_lines<T: Serialize>(mut stream: UnixStream, messages: Receiver<T>) {
    for message in messages {
        let line = match serde_json::to_string(&message) {
            Ok(line) => line,
            Err(error) => {
                tracing::warn!(%error, "cannot encode a window host message");
                continue;
            }
        };
        if stream
            .write_all(line.as_bytes())
            .and_then(|()| stream.write_all(b"\n"))
            .is_err()
        {
            return;
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

fn read_host<R: Runtime>(
    app: &AppHandle<R>,
    generation: u64,
    stream: UnixStream,
    to_host: &SyncSender<ToHost>,
) {
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let message = match serde_json::from_str::<FromHost>(&line) {
            Ok(message) => message,
            Err(error) => {
                tracing::warn!(%error, "the window host sent what is not a message");
                continue;
            }
        };
        match message {
            FromHost::Invoke { id, command, args } => {
                let handle = app.clone();
                let to_host = to_host.clone();
                tauri::async_runtime::spawn(async move {
                    let (ok, value) = match dispatch(&handle, &command, args).await {
                        Ok(value) => (true, value),
                        Err(error) => (false, error_value(&error)),
                    };
                    send(&to_host, ToHost::Reply { id, ok, value });
                });
            }
            FromHost::Destroyed { label } => {
                if let Some(host) = app.try_state::<Arc<WindowHost>>() {
                    host.destroyed(app, generation, &label);
                }
            }
        }
    }
}

fn error_value(error: &CommandError) -> serde_json::Value {
    serde_json::to_value(error).unwrap_or_else(|e| serde_json::Value::String(e.to_string()))
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
        .spawn(move || write_lines(writer, messages))
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
        } => host_open(app, side, &label, &scripts, show),
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
) {
    let window = match app.get_webview_window(label) {
        Some(window) => window,
        None => match host_create(app, side, label, scripts) {
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
        if label == crate::popover::POPOVER {
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
    let is_popover = label == crate::popover::POPOVER;
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
            if crate::popover::closes_on_focus_loss(had) {
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
