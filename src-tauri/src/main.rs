// Keep a console window from appearing beside the app in Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(answer) = agent_tray_desktop::answer_without_starting(&args) {
        print!("{answer}");
        return;
    }
    // Before any thread exists: the arenas are set when a thread first allocates.
    agent_tray_desktop::at_rest::limit_arenas();
    // The app's window host (its child, see `window_host`): no instance lock, no engine; the
    // environment set below was set by the app that started it.
    #[cfg(unix)]
    if args
        .iter()
        .skip(1)
        .any(|a| a == agent_tray_desktop::window_host::HOST_FLAG)
    {
        std::process::exit(agent_tray_desktop::run_window_host());
    }
    // One app per environment: a second launch has the running app open its window and is done
    // before any GUI library initialises; the first holds the lock for its life (see
    // `second_launch`).
    use agent_tray_desktop::second_launch::{self, Launch};
    let _instance = match second_launch::claim_for_this_launch() {
        Ok(Some(Launch::HandedOver)) => return,
        Ok(Some(Launch::First(lock))) => Some(lock),
        Ok(None) => None,
        Err(error @ second_launch::SecondLaunchError::NotAnswering { .. }) => {
            eprintln!("agent-tray-desktop: {error}");
            std::process::exit(1);
        }
        // The lock cannot be taken (a read-only runtime folder): starting is still better than
        // not, and the engine reports a folder it cannot use.
        Err(error) => {
            eprintln!("agent-tray-desktop: {error}; starting without the one-app check");
            None
        }
    };
    // Linux: WebKitGTK's compositing mode renders the page through OpenGL; with no GPU (a VM, a
    // remote display, Xvfb) that is Mesa's software GL, and each repaint of the window (the row
    // clocks' once a second) costs it most of a core and some 150 MB more in the web process
    // (benches/at_rest.sh: 87 % of a core and 480 MB open and visible, against 18 % and 330 MB
    // without it). A list of rows needs no compositor, so it is off unless the user chose
    // otherwise. Set here, before any thread exists, because WebKit reads it from the
    // environment when its web process starts.
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").is_none() {
        std::env::set_var("WEBKIT_DISABLE_COMPOSITING_MODE", "1");
    }
    // WebKit's UI-process memory-pressure monitor reads /proc/meminfo on a thread of its own
    // every 5 s from the first window on, for the app's whole life (0.6 ms each: a fifth of
    // the app's CPU once the window has closed, benches/at_rest.sh THREAD_BREAKDOWN=1). It
    // exists to tell web processes to drop caches; the app has at most one small page, and
    // none while the window is closed.
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR").is_none() {
        std::env::set_var("WEBKIT_DISABLE_MEMORY_PRESSURE_MONITOR", "1");
    }
    // With compositing off nothing in the app draws through OpenGL, yet GTK opens GLX when it
    // opens the display, which loads Mesa and, for software GL, LLVM: ~24 MB of the app's
    // 64 MB at rest (see `at_rest::gl_disabled_by_default`).
    #[cfg(target_os = "linux")]
    if agent_tray_desktop::at_rest::gl_disabled_by_default(
        std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE").as_deref(),
        std::env::var_os("GDK_GL").as_deref(),
    ) {
        std::env::set_var("GDK_GL", "disable");
    }
    agent_tray_desktop::run();
}
