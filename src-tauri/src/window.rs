//! The main window: created when it is opened, destroyed when it is closed.
//!
//! A tray app spends its day with the window closed. A hidden webview still costs its WebKit
//! processes (over 200 MB) and wakes for the page's timers, so the window is not hidden but
//! destroyed on close, and created again, from the configuration's `main` entry, whenever the
//! tray menu, an alert or a second launch opens it. Nothing else depends on it existing: the
//! engine, the tray and the alerts run without it, and an event emitted while it is gone reaches
//! nobody.
//!
//! What the user had in it (filters, selection, scroll) would die with the webview, so the UI
//! saves it here as it changes ([`WindowMemoryStore`]) and reads it back when it starts.
//!
//! Opening fast: the window is created with the current snapshot and that saved state in it
//! ([`boot_script`]), so the page paints its rows without waiting for an IPC round trip.

use std::path::PathBuf;
use std::sync::Mutex;

use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewWindow, WebviewWindowBuilder};

use agent_tray::model::SessionKey;

use crate::ipc::{
    FocusSession, InstallReport, Snapshot, WindowMemory, EVENT_FOCUS, EVENT_INSTALL_RESULT,
    EVENT_OPEN_SETTINGS,
};

pub const MAIN: &str = "main";

/// Whether the main window exists now: what the event bridge waits on while it does not, so a
/// closed window costs no wakeups (see `events`). False until the window is created.
#[derive(Debug)]
pub struct WindowPresence(tokio::sync::watch::Sender<bool>);

impl Default for WindowPresence {
    fn default() -> Self {
        WindowPresence(tokio::sync::watch::channel(false).0)
    }
}

impl WindowPresence {
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<bool> {
        self.0.subscribe()
    }

    pub fn set(&self, open: bool) {
        self.0
            .send_if_modified(|was| std::mem::replace(was, open) != open);
    }
}

/// Notes that `window` (the main one or the popover) exists, and that it is gone once destroyed
/// (by [`close`], or by the window manager's close button).
pub fn note_presence<R: Runtime>(app: &AppHandle<R>, window: &WebviewWindow<R>) {
    let Some(presence) = app.try_state::<WindowPresence>() else {
        return;
    };
    presence.set(true);
    let app = app.clone();
    let label = window.label().to_string();
    window.on_window_event(move |event| {
        if matches!(event, tauri::WindowEvent::Destroyed) {
            if let Some(presence) = app.try_state::<WindowPresence>() {
                presence.set(any_window_but(&app, &label));
            }
            if label == MAIN {
                if let Some(memory) = app.try_state::<WindowMemoryStore>() {
                    memory.not_listening();
                }
            }
        }
    });
}

/// Whether a window other than `label` exists (the main window and the popover both show the
/// sessions: the event bridge runs while either does).
fn any_window_but<R: Runtime>(app: &AppHandle<R>, label: &str) -> bool {
    app.webview_windows().keys().any(|l| l != label)
}

/// The window's state while it is closed (and while it is open: the UI saves every change), and
/// whether the page of the window now open hears events yet.
#[derive(Debug, Default)]
pub struct WindowMemoryStore(Mutex<MemorySlot>);

#[derive(Debug, Default)]
struct MemorySlot {
    memory: WindowMemory,
    /// The current window's page has set its listeners and caught up ([`Self::take_listening`]):
    /// a request reaches it as an event. Before that (a page still starting, or no window), an
    /// event would reach nobody, so the request is kept as a one-shot the page reads instead.
    listening: bool,
}

impl WindowMemoryStore {
    /// What a window starting now restores; the one-shot requests are handed over once.
    pub fn take(&self) -> WindowMemory {
        take_from(&mut self.lock())
    }

    /// The page's catch-up once its listeners are set: the requests made while it was starting
    /// (the one-shots, handed over once), after which requests reach it as events. One lock, so
    /// no request falls between the two.
    pub fn take_listening(&self) -> WindowMemory {
        let mut slot = self.lock();
        slot.listening = true;
        take_from(&mut slot)
    }

    /// A new window's page is starting, or the window is gone: requests are kept until a page
    /// catches up.
    pub fn not_listening(&self) {
        self.lock().listening = false;
    }

    /// Applies `keep` (a request as a one-shot) unless the page listens; whether it listens (the
    /// caller then sends the request as an event). One lock: a page catching up meanwhile either
    /// takes the one-shot or hears the event, never neither.
    pub fn keep_unless_listening(&self, keep: impl FnOnce(&mut WindowMemory)) -> bool {
        let mut slot = self.lock();
        if !slot.listening {
            keep(&mut slot.memory);
        }
        slot.listening
    }

    /// What the UI saves: its filters, selection and scroll (the one-shots stay the shell's).
    pub fn set(&self, saved: WindowMemory) {
        let mut slot = self.lock();
        let memory = &mut slot.memory;
        *memory = WindowMemory {
            open_settings: memory.open_settings,
            install_report: memory.install_report.take(),
            focus: memory.focus.take(),
            focus_reply: std::mem::take(&mut memory.focus_reply),
            ..saved
        };
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemorySlot> {
        // Plain data: still valid after a panic elsewhere.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn take_from(slot: &mut MemorySlot) -> WindowMemory {
    let taken = slot.memory.clone();
    slot.memory.open_settings = false;
    slot.memory.install_report = None;
    slot.memory.focus = None;
    slot.memory.focus_reply = false;
    taken
}

/// A request to show `session` (host and id): no filter hides it, it is selected, and the page
/// is told to show it (the one-shot).
fn focus_in(memory: &mut WindowMemory, session: SessionKey, reply: bool) {
    memory.filter_text.clear();
    memory.filter_agent = None;
    memory.selected = Some(session.clone());
    memory.focus = Some(session);
    memory.focus_reply = reply;
}

/// What the page finds in `window.__agentTrayBoot` when it starts: the snapshot and the saved
/// window state as they are when the window is created.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Boot {
    pub snapshot: Snapshot,
    pub memory: WindowMemory,
}

/// The initialization script that hands `boot` to the page before its own scripts run, so its
/// first paint waits for no IPC round trip (each one goes through the main thread; the first
/// paint used to wait for seven in a row). JSON is a JavaScript expression, and the script is
/// the shell's own code (a user script, outside the page's CSP), so session text in it is data.
pub fn boot_script(boot: &Boot) -> Result<String, serde_json::Error> {
    Ok(format!(
        "window.__agentTrayBoot = {};",
        serde_json::to_string(boot)?
    ))
}

/// The boot data now: the snapshot, and the saved state (taking its one-shot requests).
fn boot<R: Runtime>(app: &AppHandle<R>) -> Option<Boot> {
    let source = app.try_state::<std::sync::Arc<crate::sessions::SessionsSource>>()?;
    let settings = app.try_state::<crate::settings::SettingsStore>()?;
    let engine = app.try_state::<crate::ipc::EngineStatus>()?;
    let memory = app.try_state::<WindowMemoryStore>()?;
    Some(Boot {
        snapshot: crate::snapshot::snapshot(app, &source, &settings, &engine),
        memory: memory.take(),
    })
}

/// The popover's boot data: the snapshot now, and no window state (the popover keeps none, and
/// the window's one-shot requests stay for the window).
pub fn snapshot_boot_script<R: Runtime>(app: &AppHandle<R>) -> Option<String> {
    let source = app.try_state::<std::sync::Arc<crate::sessions::SessionsSource>>()?;
    let settings = app.try_state::<crate::settings::SettingsStore>()?;
    let engine = app.try_state::<crate::ipc::EngineStatus>()?;
    let boot = Boot {
        snapshot: crate::snapshot::snapshot(app, &source, &settings, &engine),
        memory: WindowMemory::default(),
    };
    boot_script(&boot).ok()
}

/// The window host, where the app keeps its windows in a child process (Linux, see
/// `window_host`); `None`: the windows are the app's own.
pub fn host<R: Runtime>(app: &AppHandle<R>) -> Option<std::sync::Arc<WindowHost>> {
    app.try_state::<std::sync::Arc<WindowHost>>()
        .map(|h| h.inner().clone())
}

/// The app's side of the window host (see `window_host`, which runs the host's side): the
/// messages, the host now running and the windows it shows, its start, its link and its end.
/// Here, beside the window, because the window and the popover open and close through it.
#[cfg(unix)]
mod link {
    use std::collections::BTreeMap;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde::{Deserialize, Serialize};
    use tauri::{AppHandle, Manager, Runtime};

    use crate::ipc::{CommandError, ErrorCode};

    /// The command-line flag that makes the binary a window host.
    pub const HOST_FLAG: &str = "--window-host";

    /// How many messages may wait for a writer before one is dropped (a host that stopped
    /// reading).
    pub const QUEUE: usize = 1024;

    /// A page call's answer, on its way: the command's value or its error.
    pub type PageAnswer = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<serde_json::Value, CommandError>> + Send>,
    >;

    /// What answers a page's call in the app: the shell's commands (`window_host::dispatch`),
    /// managed by the app; the window knows no command itself.
    pub struct PageCalls<R: Runtime>(pub fn(AppHandle<R>, String, serde_json::Value) -> PageAnswer);

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
            /// Behaves as the popover: placed at the screen's top right corner, closed when it
            /// loses the focus it had.
            popover: bool,
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
            popover: bool,
        ) -> bool {
            let exists = self.exists(label);
            let scripts = if exists { Vec::new() } else { scripts() };
            let message = ToHost::Open {
                label: label.to_string(),
                scripts,
                show,
                popover,
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
                        let had_main = current.windows.contains_key(super::MAIN);
                        *link = None;
                        had_main
                    }
                    _ => return,
                }
            };
            if had_main {
                self.after_gone(app, super::MAIN);
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
            if label == super::MAIN {
                if let Some(memory) = app.try_state::<super::WindowMemoryStore>() {
                    memory.not_listening();
                }
            }
            note_presence(app, self.any_window());
        }

        /// Hands `message` to the host now running, if any.
        pub fn send_current(&self, message: ToHost) {
            if let Some(link) = self.lock().as_ref() {
                send(&link.to_host, message);
            }
        }
    }

    fn note_presence<R: Runtime>(app: &AppHandle<R>, open: bool) {
        if let Some(presence) = app.try_state::<super::WindowPresence>() {
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
            .spawn(move || write_lines(writer, messages, |m| matches!(m, ToHost::Exit)))?;
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

    /// Waits for the host whose link ended (it closed its end, or the app closed the link after
    /// `exit`); one still running 5 s later is killed, so none outlives its link: a host stuck in
    /// WebKit, or one that ignores `exit`, does not keep its memory.
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

    /// Writes `messages` as JSON lines until they end, then closes the writing half. A message
    /// that `ends_link` says is the last one closes the whole link once written: the reader on
    /// this side then sees the end too and reaps the other process, killing one that ignored it.
    pub fn write_lines<T: Serialize>(
        mut stream: UnixStream,
        messages: Receiver<T>,
        ends_link: impl Fn(&T) -> bool,
    ) {
        for message in messages {
            let last = ends_link(&message);
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
            if last {
                let _ = stream.shutdown(std::net::Shutdown::Both);
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
                        let calls = handle.try_state::<PageCalls<R>>().map(|c| c.0);
                        let answered = match calls {
                            Some(call) => call(handle.clone(), command, args).await,
                            None => Err(CommandError::new(
                                ErrorCode::BadRequest,
                                "the app takes no page calls",
                            )),
                        };
                        let (ok, value) = match answered {
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
}

#[cfg(unix)]
pub use link::*;

/// Windows keeps its windows in the app: WebView2 already runs each webview's renderer, and
/// the browser process that holds its memory, in processes of its own, which end with the
/// window's controller (see `docs/benchmarks.md`). No value of this type exists.
#[cfg(not(unix))]
#[derive(Debug)]
pub enum WindowHost {}

#[cfg(not(unix))]
impl WindowHost {
    pub fn exists(&self, _label: &str) -> bool {
        match *self {}
    }
    pub fn is_shown(&self, _label: &str) -> bool {
        match *self {}
    }
    pub fn open<R: Runtime>(
        &self,
        _app: &AppHandle<R>,
        _label: &str,
        _scripts: impl FnOnce() -> Vec<String>,
        _show: bool,
        _popover: bool,
    ) -> bool {
        match *self {}
    }
    pub fn close<R: Runtime>(&self, _app: &AppHandle<R>, _label: &str) {
        match *self {}
    }
}

/// The scripts a main window starts with: the boot data (taking the one-shot requests: the new
/// page will read them) and the desktop's font.
fn main_scripts<R: Runtime>(app: &AppHandle<R>) -> Vec<String> {
    // A new page: requests wait for it to listen.
    if let Some(memory) = app.try_state::<WindowMemoryStore>() {
        memory.not_listening();
    }
    boot(app)
        .and_then(|b| boot_script(&b).ok())
        .into_iter()
        .chain(font_script(app))
        .collect()
}

/// Creates the main window from the configuration's `main` entry (created hidden; [`show`]
/// shows it), with the boot data in it.
fn create<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == MAIN)
        .cloned()
        .ok_or_else(|| tauri::Error::WindowNotFound)?;
    let mut builder = WebviewWindowBuilder::from_config(app, &config)?;
    // Without the boot data (state not managed, or not serialisable) the page asks over IPC.
    for script in main_scripts(app) {
        builder = builder.initialization_script(&script);
    }
    builder.build()
}

/// The script naming the desktop's UI font to the page (see `ui_font`), if there is one.
pub fn font_script<R: Runtime>(app: &AppHandle<R>) -> Option<String> {
    crate::ui_font::script_for(app.try_state::<crate::ui_font::DesktopFont>()?.inner())
}

/// Creates the main window hidden, if it is closed, for a click that may come (the tray menu is
/// open, see `menu_prewarm`): [`show`] then shows it already loaded.
pub fn prewarm<R: Runtime>(app: &AppHandle<R>) {
    if exists(app) {
        return;
    }
    if let Some(host) = host(app) {
        host.open(app, MAIN, || main_scripts(app), false, false);
        tracing::info!("window_prewarmed");
        return;
    }
    match create(app) {
        Ok(window) => {
            tracing::info!("window_prewarmed");
            note_presence(app, &window);
        }
        Err(error) => tracing::warn!(%error, "cannot create the window"),
    }
}

/// Destroys the main window if it was created but never shown (a prewarmed window nobody chose).
pub fn drop_if_hidden<R: Runtime>(app: &AppHandle<R>) {
    if let Some(host) = host(app) {
        if host.exists(MAIN) && !host.is_shown(MAIN) {
            host.close(app, MAIN);
            tracing::info!("prewarmed_window_dropped");
        }
        return;
    }
    if let Some(window) = app.get_webview_window(MAIN) {
        if !window.is_visible().unwrap_or(true) && window.destroy().is_ok() {
            tracing::info!("prewarmed_window_dropped");
        }
    }
}

/// Shows, unminimises and focuses the main window, creating it first if it is closed.
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    if let Some(host) = host(app) {
        if host.open(app, MAIN, || main_scripts(app), true, false) {
            tracing::info!("window_created");
        }
        return;
    }
    let window = match app.get_webview_window(MAIN) {
        Some(window) => window,
        None => match create(app) {
            Ok(window) => {
                tracing::info!("window_created");
                note_presence(app, &window);
                window
            }
            Err(error) => {
                tracing::warn!(%error, "cannot create the window");
                return;
            }
        },
    };
    let _ = window.unminimize();
    let _ = window.show();
    let _ = window.set_focus();
}

/// macOS: a menu-bar app (`Accessory`: no Dock icon, not in the app switcher), except while
/// Settings is open (`Regular`, so the window can be found again with Cmd-Tab). Elsewhere there
/// is no such notion and this does nothing.
pub fn menu_bar_app<R: Runtime>(app: &AppHandle<R>, accessory: bool) {
    #[cfg(target_os = "macos")]
    {
        let policy = if accessory {
            tauri::ActivationPolicy::Accessory
        } else {
            tauri::ActivationPolicy::Regular
        };
        if let Err(error) = app.set_activation_policy(policy) {
            tracing::warn!(%error, "cannot set the activation policy");
        }
    }
    #[cfg(not(target_os = "macos"))]
    let _ = (app, accessory);
}

/// The main window gone however it was closed (its close button too): back to a menu-bar app.
pub fn on_window_event<R: Runtime>(window: &tauri::Window<R>, event: &tauri::WindowEvent) {
    if matches!(event, tauri::WindowEvent::Destroyed) && window.label() == MAIN {
        menu_bar_app(window.app_handle(), true);
    }
}

/// Closes the main window for good: its webview and WebKit processes go with it.
pub fn close<R: Runtime>(app: &AppHandle<R>) {
    menu_bar_app(app, true);
    if let Some(host) = host(app) {
        host.close(app, MAIN);
        tracing::info!("window_destroyed");
        return;
    }
    if let Some(window) = app.get_webview_window(MAIN) {
        if let Err(error) = window.destroy() {
            tracing::warn!(%error, "cannot close the window");
        } else {
            tracing::info!("window_destroyed");
            if let Some(presence) = app.try_state::<WindowPresence>() {
                presence.set(any_window_but(app, MAIN));
            }
        }
    }
}

fn exists<R: Runtime>(app: &AppHandle<R>) -> bool {
    match host(app) {
        Some(host) => host.exists(MAIN),
        None => app.get_webview_window(MAIN).is_some(),
    }
}

/// Hands a request to the main window and shows it: as an event (`send`) when its page listens,
/// else kept in the memory (`keep`) for the page to read when it starts or catches up (a window
/// created now, or one whose page is still starting: an event would reach nobody).
fn request<R: Runtime>(
    app: &AppHandle<R>,
    keep: impl FnOnce(&mut WindowMemory),
    send: impl FnOnce(&AppHandle<R>) -> tauri::Result<()>,
) {
    let listening = app
        .try_state::<WindowMemoryStore>()
        .is_some_and(|store| store.keep_unless_listening(keep));
    show(app);
    if listening {
        if let Err(error) = send(app) {
            tracing::warn!(%error, "cannot send the window its request");
        }
    }
}

/// The tray's "Settings": the window with its settings panel open (see [`request`]).
pub fn open_settings<R: Runtime>(app: &AppHandle<R>) {
    menu_bar_app(app, false);
    request(
        app,
        |m| m.open_settings = true,
        |app| app.emit(EVENT_OPEN_SETTINGS, ()),
    );
}

/// The installer ran from the tray: the window shows its report (see [`request`]).
pub fn show_install_report<R: Runtime>(app: &AppHandle<R>, report: InstallReport) {
    let sent = report.clone();
    request(
        app,
        |m| m.install_report = Some(report),
        |app| app.emit(EVENT_INSTALL_RESULT, sent),
    );
}

/// Shows the window on one session: the tray menu's rows and a click on an alert both end here
/// (see [`request`]; the page selects the row, clearing its filters).
pub fn focus_session<R: Runtime>(app: &AppHandle<R>, session: SessionKey) {
    focus_session_to(app, session, false);
}

/// Shows the window on one session with the keyboard in its reply field: an alert's Reply
/// where the notification server takes no typed reply itself.
pub fn focus_reply<R: Runtime>(app: &AppHandle<R>, session: SessionKey) {
    focus_session_to(app, session, true);
}

fn focus_session_to<R: Runtime>(app: &AppHandle<R>, session: SessionKey, reply: bool) {
    let sent = FocusSession {
        session_id: session.session_id.clone(),
        host: session.host.clone(),
        reply,
    };
    request(
        app,
        |m| focus_in(m, session, reply),
        |app| app.emit(EVENT_FOCUS, sent),
    );
}

/// Whether the app opens its window at start. Without `--background` it does; with it (launch
/// at login) only when the window has something to say: the engine is down, or this is a first
/// run (no sessions, no hooks, the installer never shown) that needs the installer.
pub fn opens_at_start(
    background: bool,
    engine_down: bool,
    has_sessions: bool,
    hooks_found: bool,
    installer_shown_before: bool,
) -> bool {
    !background || engine_down || (!has_sessions && !hooks_found && !installer_shown_before)
}

/// Whether an agent's hooks file mentions Agent Tray (`files`: each registered agent's, from
/// `agent_tray::agents::hook_files_from_env`). A text search, not `doctor`'s full check: it only
/// decides whether a first run should show the installer.
pub fn hooks_found(files: &[PathBuf]) -> bool {
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .any(|text| text.contains("agent-tray"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(host: Option<&str>, id: &str) -> SessionKey {
        SessionKey {
            host: host.map(String::from),
            session_id: id.into(),
        }
    }

    #[test]
    fn background_opens_the_window_only_when_it_has_something_to_say() {
        // (background, engine down, sessions, hooks, installer shown before)
        assert!(
            opens_at_start(false, false, true, true, true),
            "a plain launch"
        );
        assert!(
            !opens_at_start(true, false, true, true, false),
            "login with work"
        );
        assert!(
            !opens_at_start(true, false, false, true, false),
            "hooks in place"
        );
        assert!(
            opens_at_start(true, false, false, false, false),
            "first run: the installer"
        );
        assert!(
            !opens_at_start(true, false, false, false, true),
            "only once"
        );
        assert!(
            opens_at_start(true, true, true, true, true),
            "the engine is down"
        );
    }

    #[test]
    fn hooks_are_found_in_either_agents_settings() {
        let home = tempfile::tempdir().unwrap();
        let claude = home.path().join("claude");
        let codex = home.path().join("codex");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::create_dir_all(&codex).unwrap();
        let files = [claude.join("settings.json"), codex.join("hooks.json")];
        assert!(!hooks_found(&files));
        std::fs::write(claude.join("settings.json"), "{}").unwrap();
        assert!(!hooks_found(&files));
        std::fs::write(
            codex.join("hooks.json"),
            r#"{"command":"/usr/bin/agent-tray hook"}"#,
        )
        .unwrap();
        assert!(hooks_found(&files));
        assert!(!hooks_found(&files[..1]));
    }

    #[test]
    fn the_boot_script_hands_the_page_its_snapshot_and_saved_state_as_data() {
        // Session text is the agents' (titles, paths): in the script it stays a JSON string.
        let mut session = agent_tray::model::Session::new(
            "evil",
            agent_tray::model::Agent::Claude,
            agent_tray::model::SessionState::Working,
            chrono::Utc::now(),
        );
        session.title = Some("\"; window.__pwned = 1; //</script>\u{2028}".into());
        let boot = Boot {
            snapshot: Snapshot {
                seq: 7,
                sessions: vec![agent_tray::tray_model::SessionView::of(&session)],
                engine: crate::ipc::EngineStatus::Running {
                    socket: "/run/agent-tray.sock".into(),
                },
                settings: crate::ipc::AppSettings::default(),
                version: "1.2.3".into(),
                remotes: Vec::new(),
                limits: Vec::new(),
            },
            memory: WindowMemory {
                selected: Some(key(None, "evil")),
                open_settings: true,
                ..WindowMemory::default()
            },
        };
        let script = boot_script(&boot).unwrap();
        let json = script
            .strip_prefix("window.__agentTrayBoot = ")
            .and_then(|rest| rest.strip_suffix(';'))
            .unwrap();
        let back: Boot = serde_json::from_str(json).unwrap();
        assert_eq!(back.snapshot, boot.snapshot);
        assert_eq!(back.memory, boot.memory);
    }

    #[test]
    fn focusing_a_session_clears_the_filters_that_could_hide_it() {
        let store = WindowMemoryStore::default();
        store.set(WindowMemory {
            filter_text: "api".into(),
            filter_agent: Some(agent_tray::model::Agent::Codex),
            selected: Some(key(None, "a")),
            scroll_top: 120.0,
            ..WindowMemory::default()
        });
        // A remote's session: the window is told its host too, so it never selects a local
        // session with the same id.
        let b = key(Some("devbox"), "b");
        assert!(!store.keep_unless_listening(|m| focus_in(m, b.clone(), false)));
        let memory = store.take();
        assert_eq!(memory.selected, Some(b.clone()));
        assert_eq!(memory.focus, Some(b));
        assert_eq!(memory.filter_text, "");
        assert_eq!(memory.filter_agent, None);
        assert_eq!(memory.scroll_top, 120.0);
    }

    #[test]
    fn requests_for_a_window_not_yet_created_are_handed_over_once_and_survive_its_saves() {
        let store = WindowMemoryStore::default();
        store.lock().memory.open_settings = true;
        store.set(WindowMemory {
            filter_text: "x".into(),
            ..WindowMemory::default()
        });
        let first = store.take();
        assert!(
            first.open_settings,
            "a save from the UI does not drop the request"
        );
        assert_eq!(first.filter_text, "x");
        assert!(!store.take().open_settings, "handed over once");
    }

    #[test]
    fn a_request_waits_for_a_page_still_starting_and_is_an_event_once_it_listens() {
        let store = WindowMemoryStore::default();
        // A window created (or prewarmed) a moment ago: its page has no listener yet.
        assert!(!store.keep_unless_listening(|m| focus_in(m, key(None, "b"), false)));
        // The page saves its state as it starts: the request survives it.
        store.set(WindowMemory {
            selected: Some(key(None, "a")),
            ..WindowMemory::default()
        });
        // It catches up once its listeners are set, and gets the request once.
        let caught_up = store.take_listening();
        assert_eq!(caught_up.focus, Some(key(None, "b")));
        assert_eq!(store.take().focus, None, "handed over once");
        // From then on a request is an event: nothing is kept for a later window.
        assert!(store.keep_unless_listening(|m| m.open_settings = true));
        assert!(!store.take().open_settings);
        // The window is gone: the next request waits for the next page.
        store.not_listening();
        assert!(!store.keep_unless_listening(|m| m.open_settings = true));
        assert!(store.take().open_settings);
    }
}
