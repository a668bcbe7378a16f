//! Desktop alerts over the XDG notification interface on the session bus (Linux and the BSDs),
//! with the user's choice taken only from the notification server that showed the alert.
//!
//! Why not notify-rust's own handle: it listens for `ActionInvoked` from any connection on the
//! bus, at any object path. Every program of the user's can emit that signal, so
//! `ActionInvoked(<id>, "allow")` from a script would have answered a permission request with no
//! click. Here the server is pinned first: the unique name that owns
//! `org.freedesktop.Notifications` is asked once, the alert is sent to that unique name (not to
//! the well-known name, which another program could take meanwhile), and the signals are
//! subscribed with that name as their sender, so the bus itself delivers no other program's.
//! Each signal is still checked ([`from_server`], pure and tested) against the sender and the
//! object path the bus stamped on it: the bus sets a message's sender itself, so it cannot be
//! forged.
//!
//! A typed reply: a server that lists the `inline-reply` capability (KDE Plasma's extension)
//! shows a text field for the action named `inline-reply` and sends what was typed as the
//! `NotificationReplied(id, text)` signal, heard here like `ActionInvoked`: from the pinned
//! server only.
//!
//! Every call has a deadline ([`CALL_TIMEOUT`]): a server that hangs costs an alert, never the
//! alert thread.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::time::Duration;

use futures_lite::StreamExt;
use zbus::names::OwnedUniqueName;
use zbus::{Connection, MatchRule, MessageStream};

/// The well-known name, object path and interface of the XDG notification server.
pub const SERVER_NAME: &str = "org.freedesktop.Notifications";
pub const SERVER_PATH: &str = "/org/freedesktop/Notifications";
pub const SERVER_INTERFACE: &str = "org.freedesktop.Notifications";

/// How long a call to the bus or the server may take before the alert is given up.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Signals from the server queued for one alert's waiter before the connection's reader waits
/// for it. The waiter reads every signal as it comes (most are about other alerts and are
/// skipped), so the queue fills only while the waiter is not yet reading; the bus delivers only
/// the pinned server's signals, so no other program can fill it.
const QUEUED_SIGNALS: usize = 64;

/// Why an alert could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum AlertBusError {
    #[error("session bus: {0}")]
    Bus(#[from] zbus::Error),
    #[error("no notification server owns {SERVER_NAME}")]
    NoServer,
    #[error("the notification server did not answer within {CALL_TIMEOUT:?}")]
    Timeout,
}

/// What the server reported about an alert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlertResponse {
    /// One of its actions was chosen (`default`: a click on its body).
    Action(String),
    /// Text typed into its inline reply field (`NotificationReplied`).
    Replied(String),
    /// It was closed (expired, dismissed, or closed by the app).
    Closed,
}

/// Whether a signal came from the notification server that showed the alert: sent by the
/// connection `server` (its unique name, as the bus stamps every message's sender) at the
/// interface's own object path. Anything else (another program's `ActionInvoked`, a signal at
/// another path) is not a choice the user made on that alert.
pub fn from_server(sender: Option<&str>, path: Option<&str>, server: &str) -> bool {
    sender == Some(server) && path == Some(SERVER_PATH)
}

/// What a signal from the server means for alert `id`: a choice or a close of that alert, or
/// nothing (a signal about another alert, or one this module does not know).
pub fn response_to(
    member: &str,
    about: u32,
    action: Option<&str>,
    id: u32,
) -> Option<AlertResponse> {
    if about != id {
        return None;
    }
    match (member, action) {
        ("ActionInvoked", Some(action)) => Some(AlertResponse::Action(action.to_string())),
        ("NotificationReplied", Some(text)) => Some(AlertResponse::Replied(text.to_string())),
        ("NotificationClosed", _) => Some(AlertResponse::Closed),
        _ => None,
    }
}

/// A connection to the session bus with the notification server pinned by its unique name.
pub struct AlertBus {
    connection: Connection,
    server: OwnedUniqueName,
}

async fn within<T>(
    call: impl std::future::Future<Output = Result<T, zbus::Error>>,
) -> Result<T, AlertBusError> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(result) => result.map_err(AlertBusError::from),
        Err(_) => Err(AlertBusError::Timeout),
    }
}

impl AlertBus {
    /// Connects to the session bus and finds the server that owns [`SERVER_NAME`] now.
    pub async fn connect() -> Result<Self, AlertBusError> {
        let connection = within(Connection::session()).await?;
        let reply = within(connection.call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "GetNameOwner",
            &(SERVER_NAME,),
        ))
        .await
        .map_err(|_| AlertBusError::NoServer)?;
        let owner: String = reply.body().deserialize()?;
        let server = OwnedUniqueName::try_from(owner).map_err(|_| AlertBusError::NoServer)?;
        Ok(AlertBus { connection, server })
    }

    /// The pinned server's unique name.
    pub fn server(&self) -> &str {
        self.server.as_str()
    }

    /// The server's capabilities (`actions`, `body-markup`, …).
    pub async fn capabilities(&self) -> Result<Vec<String>, AlertBusError> {
        let reply = within(self.connection.call_method(
            Some(self.server.as_str()),
            SERVER_PATH,
            Some(SERVER_INTERFACE),
            "GetCapabilities",
            &(),
        ))
        .await?;
        Ok(reply.body().deserialize()?)
    }

    /// Shows an alert with `actions` (key, label) and string `hints` (name, value), and starts
    /// listening for what the user does with it. The subscription is made before the alert is
    /// sent, so no choice can come before it.
    pub async fn show(
        self,
        app_name: &str,
        summary: &str,
        body: &str,
        actions: &[(&str, &str)],
        string_hints: &[(&str, &str)],
    ) -> Result<ShownAlert, AlertBusError> {
        let rule = MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .sender(self.server.as_str())
            .interface(SERVER_INTERFACE)
            .path(SERVER_PATH)
            .build()?;
        let signals = within(MessageStream::for_match_rule(
            rule,
            &self.connection,
            NonZeroUsize::new(QUEUED_SIGNALS),
        ))
        .await?;
        let flat: Vec<&str> = actions.iter().flat_map(|(k, l)| [*k, *l]).collect();
        let hints: HashMap<&str, zbus::Variant<'_>> = string_hints
            .iter()
            .map(|(name, value)| (*name, zbus::Variant::from(*value)))
            .collect();
        let reply = within(self.connection.call_method(
            Some(self.server.as_str()),
            SERVER_PATH,
            Some(SERVER_INTERFACE),
            "Notify",
            &(app_name, 0u32, "", summary, body, flat, hints, -1i32),
        ))
        .await?;
        let id: u32 = reply.body().deserialize()?;
        Ok(ShownAlert {
            bus: self,
            id,
            signals: tokio::sync::Mutex::new(signals),
        })
    }
}

/// An alert on screen: its id at the server that shows it, and the server's signals about it.
pub struct ShownAlert {
    bus: AlertBus,
    id: u32,
    signals: tokio::sync::Mutex<MessageStream>,
}

impl ShownAlert {
    /// The alert's id at its server.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Waits for the user's choice on this alert, or its close; `None` if the connection ends
    /// first. Signals from any other sender or path, and those about other alerts, are skipped.
    pub async fn response(&self) -> Option<AlertResponse> {
        let mut signals = self.signals.lock().await;
        while let Some(message) = signals.next().await {
            let Ok(message) = message else { continue };
            let header = message.header();
            let sender = header.sender().map(|s| s.as_str());
            let path = header.path().map(|p| p.as_str());
            if !from_server(sender, path, self.bus.server()) {
                tracing::warn!(
                    ?sender,
                    ?path,
                    "ignored a notification signal not sent by the server that showed the alert"
                );
                continue;
            }
            let Some(member) = header.member().map(|m| m.as_str().to_string()) else {
                continue;
            };
            let response = match member.as_str() {
                "ActionInvoked" | "NotificationReplied" => {
                    message.body().deserialize::<(u32, String)>().ok().and_then(
                        |(about, action)| response_to(&member, about, Some(&action), self.id),
                    )
                }
                "NotificationClosed" => message
                    .body()
                    .deserialize::<(u32, u32)>()
                    .ok()
                    .and_then(|(about, _reason)| response_to(&member, about, None, self.id)),
                _ => None,
            };
            if response.is_some() {
                return response;
            }
        }
        None
    }

    /// Withdraws the alert (the server's `CloseNotification`).
    pub async fn close(&self) {
        let closed = within(self.bus.connection.call_method(
            Some(self.bus.server()),
            SERVER_PATH,
            Some(SERVER_INTERFACE),
            "CloseNotification",
            &(self.id,),
        ))
        .await;
        if let Err(error) = closed {
            tracing::debug!(%error, id = self.id, "alert not withdrawn");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_server_that_showed_the_alert_at_its_own_path_is_heard() {
        // dunst answering on its own connection, at the interface's path: the user's choice.
        assert!(from_server(Some(":1.7"), Some(SERVER_PATH), ":1.7"));
        // Another program of the user's emitting ActionInvoked(id, "allow"): not a click.
        assert!(!from_server(Some(":1.42"), Some(SERVER_PATH), ":1.7"));
        // The server's own connection, but at another object path: not its notification API.
        assert!(!from_server(
            Some(":1.7"),
            Some("/org/example/Fake"),
            ":1.7"
        ));
        // A message with no sender (only a peer-to-peer connection has none) or no path.
        assert!(!from_server(None, Some(SERVER_PATH), ":1.7"));
        assert!(!from_server(Some(":1.7"), None, ":1.7"));
    }

    #[test]
    fn a_signal_answers_only_its_own_alert() {
        assert_eq!(
            response_to("ActionInvoked", 5, Some("allow"), 5),
            Some(AlertResponse::Action("allow".into()))
        );
        assert_eq!(
            response_to("NotificationClosed", 5, None, 5),
            Some(AlertResponse::Closed)
        );
        // Another alert's choice or close, or a signal this module does not read: nothing.
        assert_eq!(response_to("ActionInvoked", 6, Some("allow"), 5), None);
        assert_eq!(response_to("NotificationClosed", 6, None, 5), None);
        assert_eq!(response_to("ActivationToken", 5, Some("x"), 5), None);
        // KDE's inline reply: the text typed into the alert, for that alert only.
        assert_eq!(
            response_to("NotificationReplied", 5, Some("go on\nand test"), 5),
            Some(AlertResponse::Replied("go on\nand test".into()))
        );
        assert_eq!(response_to("NotificationReplied", 6, Some("x"), 5), None);
    }
}
