//! The signal that the tray's menu is about to open. A module of its own because both the tray
//! (whose renderer waits on it) and the hook-drift watch (which wakes the renderer when the
//! hooks' health changes) use it, and neither should depend on the other for it.

/// Wakes the tray's renderer when its menu is about to open (a click or hover on the icon, on
/// the platforms whose tray reports one), so the times it shows are current when read.
#[derive(Debug, Default)]
pub struct MenuOpening(tokio::sync::Notify);

impl MenuOpening {
    pub fn notify(&self) {
        self.0.notify_one();
    }

    /// Completes at the next [`notify`](Self::notify) (or at once for one already given).
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.notified()
    }
}
