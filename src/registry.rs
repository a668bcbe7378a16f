//! `SessionsRegistry`: the one writer of session state.
//!
//! Every feed hands it [`Observation`]s; it applies them through the pure rules of
//! [`crate::transition`] under one short lock, reaps sessions by TTL, and publishes what people
//! would see change on a bounded, typed stream. Nothing else mutates sessions.
//!
//! Why the pieces are shaped this way:
//! - **The lock is a plain mutex held only around in-memory work.** No I/O, no `.await`, no
//!   channel send that can block happens under it: changes are collected under the lock and
//!   published after it is released.
//! - **The change stream is a `tokio::sync::broadcast`**: bounded, and a subscriber that falls
//!   behind is told how many changes it missed (`Lagged`) instead of slowing the registry down. A
//!   lagging consumer re-reads [`SessionsRegistry::list`]; nothing is lost that a snapshot cannot
//!   give back. Changes are published only when something people see changes, never for
//!   `last_seen` alone, so a busy session does not flood the UI.
//! - **Ended sessions are remembered after they leave the live list** (bounded), so a passive
//!   sighting of an old transcript cannot bring back a ghost, and a late event from a finished
//!   session stays ignored.
//! - **Every change gets a sequence number**, counted under the lock with the change itself, and
//!   [`SessionsRegistry::snapshot`] returns the number its contents are current to. A reader that
//!   gets both snapshots and changes (the desktop window) can then tell which of two is newer;
//!   [`SessionsRegistry::watch_change_seq`] tells it the latest number as changes happen.
//! - **The TTL never ends a session its live process vouches for.** A silent session that has a pid
//!   is not ended on the TTL alone: the reaper first asks the pid watcher's rule
//!   ([`crate::liveness::plan::plan`]) off the lock, with an injected probe, and spares the
//!   ones a live process with the same start token vouches for — whatever the TTL and the
//!   watcher's tick, even a TTL shorter than the tick.
//! - **The pid watcher and the feeds apply what they decided off the lock only to the process they
//!   saw** ([`SessionsRegistry::end_if_owned`], [`SessionsRegistry::vouch_if_owned`]): a resume
//!   that moved the session to another process between the decision and its application keeps it.
//! - **The TTL runs on a clock that stops while the machine sleeps** (see [`crate::clock`]). It
//!   can be changed while the registry runs ([`SessionsRegistry::set_session_ttl`], the desktop's
//!   Settings): it lives in an atomic beside the config, read by the reaper on each pass, so a
//!   change needs no restart and never waits on the session lock.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch};

pub mod answers;

use crate::clock::{Clock, SystemClock};
use crate::liveness::plan::{self, ConfirmedPids, Decision};
pub use crate::liveness::plan::{PidCandidate, PidOwner};
use crate::model::{EndReason, InvalidObservation, Observation, Session, SessionState};
use crate::process::PidProbe;
use crate::transition::{self, Applied, Ignored, SessionRecord};

/// A session with no signal for this long, and no pid confirmed alive, is ended.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(300);
/// How long an ended session stays in the live list.
pub const ENDED_TTL: Duration = Duration::from_secs(10);
/// At most this many live sessions; at the cap the one silent longest is evicted.
pub const MAX_LIVE_SESSIONS: usize = 512;
/// The shortest session TTL [`SessionsRegistry::set_session_ttl`] accepts.
pub const MIN_SESSION_TTL: Duration = Duration::from_secs(1);
/// Ended sessions remembered after they leave the live list.
const MAX_ENDED_REMEMBERED: usize = 2048;
/// Sequence ids remembered for de-duplicating replayed hook records, as 64-bit hashes (a false
/// match needs a 64-bit collision among this many: about 1e-14 per id). About 2.5 MB at the
/// bound; at a thousand hook events a second that is two minutes of them.
const MAX_SEQS_REMEMBERED: usize = 131_072;
/// Sequence ids that came live (the socket) and that the journal replay has not read yet, at
/// most this many (as 64-bit hashes: about 1.5 MB at the bound). The replay reads what the hooks
/// appended within a tick or two, so this stays small unless the journal is not being read.
const MAX_SEQS_PENDING: usize = 65_536;
/// Changes buffered per subscriber before it is told it lagged.
const CHANGE_BUFFER: usize = 1024;
/// Stamped changes buffered for the history store: deeper, because the store must not lose a
/// burst that the UI (which only needs the latest picture) can afford to skip.
const STAMPED_BUFFER: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryConfig {
    pub session_ttl: Duration,
    pub ended_ttl: Duration,
    pub max_live: usize,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            session_ttl: DEFAULT_SESSION_TTL,
            ended_ttl: ENDED_TTL,
            max_live: MAX_LIVE_SESSIONS,
        }
    }
}

impl RegistryConfig {
    /// The defaults, with `AGENT_TRAY_SESSION_TTL=<seconds>` applied when it is set; a value that
    /// is not a number of seconds within range is an error that says so.
    pub fn try_from_env() -> Result<Self, crate::env_knobs::KnobError> {
        use crate::env_knobs::{read_secs, MAX_SESSION_TTL, SESSION_TTL};
        let mut config = RegistryConfig::default();
        if let Some(ttl) = read_secs(SESSION_TTL, MIN_SESSION_TTL, MAX_SESSION_TTL)? {
            config.session_ttl = ttl;
        }
        Ok(config)
    }

    /// [`try_from_env`](Self::try_from_env), falling back to the defaults (with a warning) for
    /// a host that already reported the error and only needs a registry to show it in.
    pub fn from_env() -> Self {
        Self::try_from_env().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "using the default session TTL");
            RegistryConfig::default()
        })
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What people would see change. Serialised with a `kind` tag for the UI and `watch --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionChange {
    Added {
        session: Session,
    },
    Changed {
        old_state: SessionState,
        session: Session,
    },
    Removed {
        session_id: String,
        /// The remote the session ran on (absent for this machine's sessions): ids are unique
        /// per host, so a client that keys sessions by id alone may ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
}

impl SessionChange {
    pub fn session_id(&self) -> &str {
        match self {
            SessionChange::Added { session } | SessionChange::Changed { session, .. } => {
                &session.session_id
            }
            SessionChange::Removed { session_id, .. } => session_id,
        }
    }
}

/// A change and when it happened, for the history store ([`crate::store`]): the stamp of the
/// observation that caused it (never later than the registry's clock), or the registry's clock
/// for the ends it decides itself. The live stream carries no stamp, because the UI needs none.
#[derive(Debug, Clone, PartialEq)]
pub struct StampedChange {
    pub at: DateTime<Utc>,
    pub change: SessionChange,
}

/// What the registry did with one observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObserveOutcome {
    /// Something people see changed (a change was published).
    Changed,
    /// Accepted as a sign of life; nothing visible moved.
    Quiet,
    /// Already applied (same sequence id): a replayed journal record.
    Duplicate,
    Ignored(Ignored),
}

#[derive(Default)]
struct Inner {
    live: HashMap<String, SessionRecord>,
    ended: HashMap<String, SessionRecord>,
    ended_order: VecDeque<String>,
    seqs: HashSet<u64>,
    seq_order: VecDeque<u64>,
    applied_seqs: AppliedSeqs,
    /// Hashes of ids applied live and not yet read back from the journal: kept until the
    /// replay reads them, however many other ids it applies meanwhile (a replay of a long
    /// backlog at start applies far more than [`MAX_SEQS_REMEMBERED`] in one pass).
    seqs_pending: HashSet<u64>,
    seqs_pending_order: VecDeque<u64>,
    /// How many changes have been published (the last change's sequence number).
    change_seq: u64,
    /// Each remote's sessions, by remote name then session id: a mirror of what its link last
    /// heard ([`crate::remote`]), never touched by the rules, the TTL or the pid watcher here.
    remote: HashMap<String, HashMap<String, Session>>,
    /// The permission requests the sessions wait on ([`answers`]).
    answers: answers::Answers,
}

/// How many observations carrying a sequence id were applied (not de-duplicated away), and an
/// order-free digest of those ids. A test compares it with the ids in the journal to prove that
/// each event was applied exactly once: a double and a miss cannot cancel out in the digest.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedSeqs {
    pub count: u64,
    /// The wrapping sum of each id's 64-bit FNV-1a hash.
    pub digest: u64,
}

impl AppliedSeqs {
    pub fn add(&mut self, seq: &str) {
        self.count += 1;
        self.digest = self.digest.wrapping_add(seq_hash(seq));
    }
}

/// 64-bit FNV-1a of a sequence id.
fn seq_hash(seq: &str) -> u64 {
    seq.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The sessions at one moment, with the sequence number of the last change they include.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistrySnapshot {
    pub seq: u64,
    /// Live sessions (ended ones during their linger included), oldest first.
    pub live: Vec<Session>,
    /// Ended sessions that left the live list, the most recently ended first.
    pub ended: Vec<Session>,
}

pub struct SessionsRegistry {
    inner: Mutex<Inner>,
    clock: Arc<dyn Clock>,
    config: RegistryConfig,
    /// The session TTL in milliseconds: `config.session_ttl` at start, then whatever
    /// [`SessionsRegistry::set_session_ttl`] last set.
    session_ttl_ms: AtomicU64,
    changes: broadcast::Sender<SessionChange>,
    /// The sequence number of the last published change. A watch, not a queue: a slow reader
    /// skips to the latest number and never lags.
    change_seq: watch::Sender<u64>,
    /// The same changes with their stamps; sent only while someone (the store) subscribes.
    stamped: broadcast::Sender<StampedChange>,
}

impl std::fmt::Debug for SessionsRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionsRegistry")
            .field("config", &self.config())
            .finish_non_exhaustive()
    }
}

impl Default for SessionsRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionsRegistry {
    /// A registry on the real clocks with the default limits.
    pub fn new() -> Self {
        Self::with_config(RegistryConfig::default(), Arc::new(SystemClock))
    }

    pub fn with_config(config: RegistryConfig, clock: Arc<dyn Clock>) -> Self {
        let (changes, _) = broadcast::channel(CHANGE_BUFFER);
        let (stamped, _) = broadcast::channel(STAMPED_BUFFER);
        SessionsRegistry {
            inner: Mutex::new(Inner::default()),
            clock,
            config,
            session_ttl_ms: AtomicU64::new(duration_ms(config.session_ttl)),
            changes,
            change_seq: watch::channel(0).0,
            stamped,
        }
    }

    /// Replaces what is known of the remote `host`'s sessions with `sessions` (its link's whole
    /// picture, every session's `host` set to `host`) and publishes the difference. An empty
    /// picture forgets the remote. Only the live stream hears of it: the history store keeps
    /// this machine's sessions (a remote keeps its own history).
    pub fn set_remote_sessions(&self, host: &str, sessions: Vec<Session>) {
        let (changes, seq) = {
            let mut inner = self.lock();
            let old = inner.remote.remove(host).unwrap_or_default();
            let mut new: HashMap<String, Session> = HashMap::with_capacity(sessions.len());
            let mut changes = Vec::new();
            for session in sessions {
                if let Some(change) = remote_change(old.get(&session.session_id), &session) {
                    changes.push(change);
                }
                new.insert(session.session_id.clone(), session);
            }
            for id in old.keys().filter(|id| !new.contains_key(*id)) {
                changes.push(SessionChange::Removed {
                    session_id: id.clone(),
                    host: Some(host.to_string()),
                });
            }
            if !new.is_empty() {
                inner.remote.insert(host.to_string(), new);
            }
            let seq = stamp(&mut inner, &changes);
            (changes, seq)
        };
        self.publish_live(changes, seq);
    }

    /// Applies some of the remote `host`'s sessions (`upserts`, each with `host` set) and the
    /// ids it dropped (`removed`), and publishes the difference: the cost is that of what
    /// changed, not of the remote's whole picture, so a busy remote holds the lock that local
    /// hooks need for as little as its news takes.
    pub fn update_remote_sessions(&self, host: &str, upserts: Vec<Session>, removed: &[String]) {
        let (changes, seq) = {
            let mut inner = self.lock();
            let mut changes = Vec::new();
            let picture = inner.remote.entry(host.to_string()).or_default();
            for session in upserts {
                if let Some(change) = remote_change(picture.get(&session.session_id), &session) {
                    changes.push(change);
                }
                picture.insert(session.session_id.clone(), session);
            }
            for id in removed {
                if picture.remove(id).is_some() {
                    changes.push(SessionChange::Removed {
                        session_id: id.clone(),
                        host: Some(host.to_string()),
                    });
                }
            }
            if picture.is_empty() {
                inner.remote.remove(host);
            }
            let seq = stamp(&mut inner, &changes);
            (changes, seq)
        };
        self.publish_live(changes, seq);
    }

    /// Publishes a remote's changes on the live stream only (see [`Self::set_remote_sessions`]).
    fn publish_live(&self, changes: Vec<SessionChange>, seq: u64) {
        if changes.is_empty() {
            return;
        }
        for change in changes {
            let _ = self.changes.send(change);
        }
        self.change_seq.send_if_modified(|latest| {
            let newer = seq > *latest;
            if newer {
                *latest = seq;
            }
            newer
        });
    }

    /// The configuration in force now (the session TTL as last set).
    pub fn config(&self) -> RegistryConfig {
        RegistryConfig {
            session_ttl: self.session_ttl(),
            ..self.config
        }
    }

    /// How long a session may stay silent (no pid confirmed alive) before the reaper ends it.
    pub fn session_ttl(&self) -> Duration {
        Duration::from_millis(self.session_ttl_ms.load(Ordering::Relaxed))
    }

    /// Changes the session TTL from the next reap on. Sessions already ended by the old TTL stay
    /// ended; a longer TTL only spares those still live. Clamped to at least one second, so a
    /// zero from a bad setting cannot end every session on the next pass.
    pub fn set_session_ttl(&self, ttl: Duration) {
        let ttl = ttl.max(MIN_SESSION_TTL);
        let old = self
            .session_ttl_ms
            .swap(duration_ms(ttl), Ordering::Relaxed);
        if old != duration_ms(ttl) {
            tracing::info!(
                ttl_secs = ttl.as_secs_f64(),
                old_ttl_secs = old as f64 / 1000.0,
                "session_ttl_changed"
            );
        }
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Subscribes to changes from now on. Take a [`list`](Self::list) after subscribing to start
    /// from a consistent picture.
    pub fn subscribe(&self) -> broadcast::Receiver<SessionChange> {
        self.changes.subscribe()
    }

    /// The sequence number of the last change, now and after every change.
    pub fn watch_change_seq(&self) -> watch::Receiver<u64> {
        self.change_seq.subscribe()
    }

    /// The live sessions and up to `ended_limit` of the ended ones (the most recently ended
    /// first), taken under one lock with the sequence number of the last change they include.
    pub fn snapshot(&self, ended_limit: usize) -> RegistrySnapshot {
        let inner = self.lock();
        let seq = inner.change_seq;
        let mut live: Vec<Session> = inner.live.values().map(|r| r.session.clone()).collect();
        live.extend(inner.remote.values().flat_map(|m| m.values().cloned()));
        // By when they ended, not by when they left the live list: one reap moves many at once,
        // in no particular order.
        let mut ended: Vec<&Session> = inner.ended.values().map(|r| &r.session).collect();
        ended.sort_by(|a, b| {
            b.state_since
                .cmp(&a.state_since)
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        let ended = ended.into_iter().take(ended_limit).cloned().collect();
        drop(inner);
        live.sort_by(|a, b| {
            a.started_at
                .cmp(&b.started_at)
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        RegistrySnapshot { seq, live, ended }
    }

    /// Subscribes to changes with their stamps (what the history store records). Bounded like
    /// [`subscribe`](Self::subscribe): a receiver that falls behind is told it lagged.
    pub fn subscribe_stamped(&self) -> broadcast::Receiver<StampedChange> {
        self.stamped.subscribe()
    }

    /// Whether this machine's session `session_id` is known, live or recently ended (what a
    /// usage report must name to be kept).
    pub fn knows(&self, session_id: &str) -> bool {
        let inner = self.lock();
        inner.live.contains_key(session_id) || inner.ended.contains_key(session_id)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock can only come from a bug in pure code; the data is
        // still a valid map of records, so keep serving rather than poisoning every later call.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes changes numbered under the lock by [`stamp`] (`seq` is the last one's number),
    /// stamped `at` for the history store.
    fn publish(&self, changes: Vec<SessionChange>, seq: u64, at: DateTime<Utc>) {
        if changes.is_empty() {
            return;
        }
        for change in changes {
            if self.stamped.receiver_count() > 0 {
                let _ = self.stamped.send(StampedChange {
                    at,
                    change: change.clone(),
                });
            }
            // No receivers is fine: nobody is looking. Receivers that lag learn it on recv.
            let _ = self.changes.send(change);
        }
        // Two writers may publish out of order after their locks: keep the highest number.
        self.change_seq.send_if_modified(|latest| {
            let newer = seq > *latest;
            if newer {
                *latest = seq;
            }
            newer
        });
    }

    /// The sequence ids applied since this registry was made (see [`AppliedSeqs`]).
    pub fn applied_seqs(&self) -> AppliedSeqs {
        self.lock().applied_seqs
    }

    /// Applies one observation as it arrives live (the socket, the feeds).
    pub fn observe(&self, obs: Observation) -> Result<ObserveOutcome, InvalidObservation> {
        self.observe_from(obs, false)
    }

    /// Applies one observation read back from the hook journal: the same hook record may have
    /// come live already, and is then a [`ObserveOutcome::Duplicate`] however long ago.
    pub fn observe_journaled(
        &self,
        obs: Observation,
    ) -> Result<ObserveOutcome, InvalidObservation> {
        self.observe_from(obs, true)
    }

    fn observe_from(
        &self,
        obs: Observation,
        journaled: bool,
    ) -> Result<ObserveOutcome, InvalidObservation> {
        self.observe_then(obs, journaled, |_, _, _| ())
            .map(|(outcome, ())| outcome)
    }

    /// Applies an observation and then, under the same lock and before the changes are
    /// numbered and published, runs `then` (an `ask` opens its request there, so the alert for
    /// the new wait already carries the request). `then` runs for a duplicate too; not for a
    /// `doctor` probe.
    fn observe_then<T: Default>(
        &self,
        obs: Observation,
        journaled: bool,
        then: impl FnOnce(&mut Inner, transition::Now, &mut Vec<SessionChange>) -> T,
    ) -> Result<(ObserveOutcome, T), InvalidObservation> {
        let obs = obs.admit()?;
        // A `doctor` probe sent as an ordinary event (by an older hook binary, or replayed from
        // its journal) is still a probe: never a session. The socket records it in the delivery
        // ledger, which the engine keeps beside the sessions.
        if crate::model::is_probe_id(&obs.session_id) {
            return Ok((ObserveOutcome::Quiet, T::default()));
        }
        let now = self.clock.now();
        let mut changes = Vec::new();
        let (outcome, extra, change_seq) = {
            let mut inner = self.lock();
            let mut duplicate = false;
            if let Some(seq) = obs.seq.as_deref() {
                let hash = seq_hash(seq);
                let pending = if journaled {
                    inner.seqs_pending.remove(&hash)
                } else {
                    inner.seqs_pending.contains(&hash)
                };
                if pending || inner.seqs.contains(&hash) {
                    duplicate = true;
                } else {
                    remember_seq(&mut inner, hash);
                    if !journaled {
                        remember_pending(&mut inner, hash);
                    }
                    inner.applied_seqs.add(seq);
                }
            }
            let outcome = if duplicate {
                ObserveOutcome::Duplicate
            } else {
                self.observe_locked(&mut inner, &obs, now, &mut changes)
            };
            answers::settle_locked(&mut inner, now.wall, &mut changes);
            let extra = then(&mut inner, now, &mut changes);
            (outcome, extra, stamp(&mut inner, &changes))
        };
        // Every observation and what became of it: what a post-mortem of a wrong state needs
        // (a quiet or ignored one leaves no other trace).
        tracing::debug!(
            session_id = %obs.session_id,
            event = %obs.event,
            source = ?obs.source,
            at = %obs.at.format("%H:%M:%S%.3f"),
            status = ?obs.status,
            ?outcome,
            "observed"
        );
        self.publish(changes, change_seq, obs.at.min(now.wall));
        Ok((outcome, extra))
    }

    fn observe_locked(
        &self,
        inner: &mut Inner,
        obs: &Observation,
        now: transition::Now,
        changes: &mut Vec<SessionChange>,
    ) -> ObserveOutcome {
        if let Some(record) = inner.live.get_mut(&obs.session_id) {
            let old_state = record.session.state;
            return match transition::apply(record, obs, now) {
                Ok(Applied::Visible) => {
                    log_transition(&record.session, old_state, obs);
                    changes.push(SessionChange::Changed {
                        old_state,
                        session: record.session.clone(),
                    });
                    ObserveOutcome::Changed
                }
                Ok(Applied::Quiet) => ObserveOutcome::Quiet,
                Err(why) => ObserveOutcome::Ignored(why),
            };
        }

        // Not live: maybe a session that ended and left the list, which only a new beginning
        // brings back.
        let record = match inner.ended.remove(&obs.session_id) {
            Some(mut record) => match transition::apply(&mut record, obs, now) {
                Ok(_) if record.own_state != SessionState::Ended => record,
                Ok(_) => {
                    inner.ended.insert(obs.session_id.clone(), record);
                    return ObserveOutcome::Quiet;
                }
                Err(why) => {
                    inner.ended.insert(obs.session_id.clone(), record);
                    return ObserveOutcome::Ignored(why);
                }
            },
            None => match transition::create(obs, now) {
                Ok(record) => record,
                Err(why) => return ObserveOutcome::Ignored(why),
            },
        };
        inner.ended_order.retain(|id| id != &obs.session_id);
        self.make_room(inner, changes);
        tracing::info!(
            session_id = %record.session.session_id,
            agent = %record.session.agent,
            state = %record.session.state,
            event = %obs.event,
            source = ?obs.source,
            "session_added"
        );
        changes.push(SessionChange::Added {
            session: record.session.clone(),
        });
        inner.live.insert(obs.session_id.clone(), record);
        ObserveOutcome::Changed
    }

    /// At the cap, evicts the live session silent longest so the new one fits.
    fn make_room(&self, inner: &mut Inner, changes: &mut Vec<SessionChange>) {
        while inner.live.len() >= self.config.max_live.max(1) {
            let Some(victim) = inner
                .live
                .values()
                .min_by_key(|r| r.last_signal)
                .map(|r| r.session.session_id.clone())
            else {
                return;
            };
            if let Some(mut record) = inner.live.remove(&victim) {
                tracing::warn!(
                    session_id = %victim,
                    agent = %record.session.agent,
                    cap = self.config.max_live,
                    reason = "live_session_cap",
                    "session_evicted"
                );
                transition::end(&mut record, EndReason::Evicted, self.clock.now());
                remember_ended(inner, record);
                changes.push(SessionChange::Removed {
                    session_id: victim,
                    host: None,
                });
            }
        }
    }

    /// Ends a live session for a reason no observation carries (the pid watcher).
    pub fn end(&self, session_id: &str, reason: EndReason) -> bool {
        self.end_where(session_id, reason, None)
    }

    /// The pid watcher vouches that this session's process is alive: refresh `last_seen` so the
    /// TTL never ends a live idle session, and keep the process identity token.
    pub fn confirm_pid_liveness(&self, session_id: &str, pid_start: &str) -> bool {
        let now = self.clock.now();
        let mut inner = self.lock();
        let Some(record) = inner.live.get_mut(session_id) else {
            return false;
        };
        vouch_locked(record, pid_start, now)
    }

    /// Ends a live session for a reason no observation carries, only while it still belongs to
    /// `owner` (checked and applied under one lock). The pid watcher and the feeds decide off the
    /// lock; a resume that moved the session to another process meanwhile keeps it.
    pub fn end_if_owned(&self, session_id: &str, owner: &PidOwner, reason: EndReason) -> bool {
        self.end_where(session_id, reason, Some(owner))
    }

    /// Ends a live session (if `owner` is given, only while it still belongs to that process)
    /// and publishes the change.
    fn end_where(&self, session_id: &str, reason: EndReason, owner: Option<&PidOwner>) -> bool {
        let now = self.clock.now();
        let (change, seq) = {
            let mut inner = self.lock();
            let Some(record) = inner.live.get_mut(session_id) else {
                return false;
            };
            if let Some(owner) = owner.filter(|o| !o.owns(&record.session)) {
                tracing::debug!(session_id, pid = owner.pid, reason = ?reason, "end_skipped_session_moved_on");
                return false;
            }
            let Some(change) = end_locked(record, reason, now) else {
                return false;
            };
            let mut change = vec![change];
            answers::settle_locked(&mut inner, now.wall, &mut change);
            let seq = stamp(&mut inner, &change);
            (change, seq)
        };
        self.publish(change, seq, now.wall);
        true
    }

    /// The pid watcher (or the reaper) vouches that `owner`, alive with identity `token`, is this
    /// session's process: refresh `last_seen` so the TTL never ends a live idle session, and keep
    /// the token. Nothing happens if the session has moved to another process since it was seen.
    pub fn vouch_if_owned(&self, session_id: &str, owner: &PidOwner, token: &str) -> bool {
        let now = self.clock.now();
        let mut inner = self.lock();
        let Some(record) = inner.live.get_mut(session_id) else {
            return false;
        };
        if !owner.owns(&record.session) {
            tracing::debug!(
                session_id,
                pid = owner.pid,
                "vouch_skipped_session_moved_on"
            );
            return false;
        }
        vouch_locked(record, token, now)
    }

    /// Every live, not-ended session with a pid: what the pid watcher probes.
    pub fn pid_liveness_candidates(&self) -> Vec<PidCandidate> {
        candidates_locked(&self.lock()).collect()
    }

    /// Ends sessions silent for the TTL and drops ended ones whose linger is over. A silent
    /// session with a pid is first judged by the pid watcher's rule against the real process
    /// table, off the lock (a `kill(0)` and a `/proc` read per distinct pid): the engine calls
    /// this about once a second, on a blocking thread.
    pub fn reap(&self) {
        self.reap_with(crate::process::probe_pid);
    }

    /// How long until [`reap`](Self::reap) could next change anything: the earliest end of an
    /// ended session's linger or of a live one's silence past the TTL (`None`: no live session).
    /// The engine's reaper sleeps until then instead of waking every second.
    pub fn next_reap_in(&self) -> Option<Duration> {
        let now = self.clock.now().mono;
        let session_ttl = self.session_ttl();
        let inner = self.lock();
        inner
            .live
            .values()
            .map(|record| match record.ended_at {
                Some(ended_at) => (ended_at + self.config.ended_ttl).saturating_sub(now),
                None => (record.last_signal + session_ttl).saturating_sub(now),
            })
            .min()
    }

    /// [`reap`](Self::reap) with the process probe injected (tests script it). `probe` is called
    /// off the lock, once per distinct pid among the silent sessions.
    pub fn reap_with(&self, probe: impl FnMut(u32) -> PidProbe) {
        let now = self.clock.now();
        let session_ttl = self.session_ttl();
        let mut changes = Vec::new();
        let mut silent_with_pid: Vec<String> = Vec::new();
        let mut candidates: Vec<PidCandidate> = Vec::new();
        let seq = {
            let mut inner = self.lock();
            let mut leaving = Vec::new();
            for record in inner.live.values_mut() {
                if let Some(ended_at) = record.ended_at {
                    if now.mono.saturating_sub(ended_at) >= self.config.ended_ttl {
                        leaving.push(record.session.session_id.clone());
                    }
                    continue;
                }
                if now.mono.saturating_sub(record.last_signal) < session_ttl {
                    continue;
                }
                if record.session.pid.is_some() && record.own_state != SessionState::Ended {
                    // Its process may vouch for it: judged below, off the lock.
                    silent_with_pid.push(record.session.session_id.clone());
                    continue;
                }
                if let Some(change) = end_locked(record, EndReason::Ttl, now) {
                    changes.push(change);
                }
            }
            for id in leaving {
                if let Some(record) = inner.live.remove(&id) {
                    remember_ended(&mut inner, record);
                    changes.push(SessionChange::Removed {
                        session_id: id,
                        host: None,
                    });
                }
            }
            if !silent_with_pid.is_empty() {
                // The rule looks at every session sharing a pid (only the most recently active
                // one is vouched for), so those come along.
                let pids: HashSet<u32> = silent_with_pid
                    .iter()
                    .filter_map(|id| inner.live.get(id).and_then(|r| r.session.pid))
                    .collect();
                candidates = candidates_locked(&inner)
                    .filter(|c| pids.contains(&c.pid))
                    .collect();
            }
            answers::settle_locked(&mut inner, now.wall, &mut changes);
            stamp(&mut inner, &changes)
        };
        self.publish(changes, seq, now.wall);
        if silent_with_pid.is_empty() {
            return;
        }

        // A fresh memory of confirmed pids: a pid never seen alive ends nothing here, so a dead
        // one falls back on the TTL (its death is the watcher's to report).
        let verdicts = plan::plan(&candidates, &mut ConfirmedPids::default(), probe);
        let now = self.clock.now();
        let session_ttl = self.session_ttl();
        let mut changes = Vec::new();
        let seq = {
            let mut inner = self.lock();
            for id in &silent_with_pid {
                let Some(seen) = candidates.iter().find(|c| &c.session_id == id) else {
                    continue;
                };
                let owner = seen.owner();
                let Some(record) = inner.live.get_mut(id) else {
                    continue;
                };
                // Moved to another process, or heard from, since the first look: not ours to end.
                if !owner.owns(&record.session)
                    || now.mono.saturating_sub(record.last_signal) < session_ttl
                {
                    continue;
                }
                let verdict = verdicts.iter().find(|d| d.session_id() == id.as_str());
                match verdict {
                    Some(Decision::Vouch { token, .. }) => {
                        vouch_locked(record, token, now);
                    }
                    Some(Decision::End { reason, .. }) => {
                        if let Some(change) = end_locked(record, *reason, now) {
                            changes.push(change);
                        }
                    }
                    None => {
                        if let Some(change) = end_locked(record, EndReason::Ttl, now) {
                            changes.push(change);
                        }
                    }
                }
            }
            answers::settle_locked(&mut inner, now.wall, &mut changes);
            stamp(&mut inner, &changes)
        };
        self.publish(changes, seq, now.wall);
    }

    /// The live sessions (ended ones during their linger included), oldest first.
    pub fn list(&self) -> Vec<Session> {
        let inner = self.lock();
        let mut sessions: Vec<Session> = inner.live.values().map(|r| r.session.clone()).collect();
        sessions.extend(inner.remote.values().flat_map(|m| m.values().cloned()));
        drop(inner);
        sessions.sort_by(|a, b| {
            a.started_at
                .cmp(&b.started_at)
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        sessions
    }

    /// Ended sessions that have left the live list, newest first, at most `limit`.
    pub fn history(&self, limit: usize) -> Vec<Session> {
        let inner = self.lock();
        inner
            .ended_order
            .iter()
            .rev()
            .filter_map(|id| inner.ended.get(id))
            .take(limit)
            .map(|r| r.session.clone())
            .collect()
    }

    /// This machine's live session `session_id`. Never a remote's: a remote chooses its own ids,
    /// and one announcing the id of a local session must not stand in for it. Callers that were
    /// handed a row use [`get_on`](Self::get_on) with the row's host.
    pub fn get(&self, session_id: &str) -> Option<Session> {
        self.get_on(None, session_id)
    }

    /// The live session `session_id` on `host` (`None`: this machine), and only there.
    pub fn get_on(&self, host: Option<&str>, session_id: &str) -> Option<Session> {
        let inner = self.lock();
        match host {
            None => inner.live.get(session_id).map(|r| r.session.clone()),
            Some(host) => inner
                .remote
                .get(host)
                .and_then(|m| m.get(session_id))
                .cloned(),
        }
    }

    pub fn live_count(&self) -> usize {
        self.lock().live.len()
    }
}

/// Numbers `changes` (under the lock, with the state they describe); returns the last number.
/// What replacing a remote's session `before` with `session` tells the stream, if anything.
fn remote_change(before: Option<&Session>, session: &Session) -> Option<SessionChange> {
    match before {
        None => Some(SessionChange::Added {
            session: session.clone(),
        }),
        Some(before) if before != session => Some(SessionChange::Changed {
            old_state: before.state,
            session: session.clone(),
        }),
        Some(_) => None,
    }
}

fn stamp(inner: &mut Inner, changes: &[SessionChange]) -> u64 {
    inner.change_seq += changes.len() as u64;
    inner.change_seq
}

fn candidates_locked(inner: &Inner) -> impl Iterator<Item = PidCandidate> + '_ {
    inner
        .live
        .values()
        .filter(|r| r.own_state != SessionState::Ended)
        .filter_map(|r| {
            Some(PidCandidate {
                session_id: r.session.session_id.clone(),
                pid: r.session.pid?,
                pid_start: r.session.pid_start.clone(),
                prompted: r.session.prompted,
                streamed: r.session.streamed,
                last_seen: r.session.last_seen,
            })
        })
}

/// Refreshes a session its live process vouches for and keeps the process's token; refuses a
/// token that differs from the one stored (another process).
fn vouch_locked(record: &mut SessionRecord, token: &str, now: transition::Now) -> bool {
    if record.own_state == SessionState::Ended {
        return false;
    }
    match record.session.pid_start.as_deref() {
        Some(stored) if stored != token => return false,
        Some(_) => {}
        None => record.session.pid_start = Some(token.to_string()),
    }
    record.session.last_seen = record.session.last_seen.max(now.wall);
    record.last_signal = now.mono;
    true
}

/// Ends a session (under the lock) and says so in the log; the change to publish, if it ended.
fn end_locked(
    record: &mut SessionRecord,
    reason: EndReason,
    now: transition::Now,
) -> Option<SessionChange> {
    let old_state = record.session.state;
    if !transition::end(record, reason, now) {
        return None;
    }
    tracing::info!(
        session_id = %record.session.session_id,
        agent = %record.session.agent,
        from = %old_state,
        reason = ?reason,
        pid = record.session.pid,
        "session_ended"
    );
    Some(SessionChange::Changed {
        old_state,
        session: record.session.clone(),
    })
}

fn remember_ended(inner: &mut Inner, record: SessionRecord) {
    let id = record.session.session_id.clone();
    if inner.ended.insert(id.clone(), record).is_none() {
        inner.ended_order.push_back(id);
    }
    while inner.ended_order.len() > MAX_ENDED_REMEMBERED {
        if let Some(old) = inner.ended_order.pop_front() {
            inner.ended.remove(&old);
        }
    }
}

fn remember_pending(inner: &mut Inner, hash: u64) {
    inner.seqs_pending.insert(hash);
    inner.seqs_pending_order.push_back(hash);
    while inner.seqs_pending_order.len() > MAX_SEQS_PENDING {
        if let Some(old) = inner.seqs_pending_order.pop_front() {
            inner.seqs_pending.remove(&old);
        }
    }
}

fn remember_seq(inner: &mut Inner, hash: u64) {
    inner.seqs.insert(hash);
    inner.seq_order.push_back(hash);
    while inner.seq_order.len() > MAX_SEQS_REMEMBERED {
        if let Some(old) = inner.seq_order.pop_front() {
            inner.seqs.remove(&old);
        }
    }
}

fn log_transition(session: &Session, old_state: SessionState, obs: &Observation) {
    if session.state != old_state {
        tracing::info!(
            session_id = %session.session_id,
            agent = %session.agent,
            from = %old_state,
            to = %session.state,
            event = %obs.event,
            source = ?obs.source,
            "session_state"
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::model::{Agent, EventKind, Source};

    fn setup(config: RegistryConfig) -> (Arc<ManualClock>, SessionsRegistry) {
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let registry = SessionsRegistry::with_config(config, clock.clone());
        (clock, registry)
    }

    fn obs(clock: &ManualClock, id: &str, event: EventKind) -> Observation {
        Observation::new(id, Agent::Claude, event, clock.wall())
    }

    #[test]
    fn changes_are_published_for_what_people_see_and_not_for_last_seen() {
        let (clock, reg) = setup(RegistryConfig::default());
        let mut rx = reg.subscribe();
        reg.observe(obs(&clock, "s1", EventKind::SessionStart))
            .unwrap();
        clock.advance(Duration::from_secs(1));
        reg.observe(obs(&clock, "s1", EventKind::UserPromptSubmit))
            .unwrap();
        clock.advance(Duration::from_secs(1));
        assert_eq!(
            reg.observe(obs(&clock, "s1", EventKind::UserPromptSubmit))
                .unwrap(),
            ObserveOutcome::Quiet
        );
        match rx.try_recv().unwrap() {
            SessionChange::Added { session } => assert_eq!(session.state, SessionState::Starting),
            other => panic!("expected Added, got {other:?}"),
        }
        match rx.try_recv().unwrap() {
            SessionChange::Changed { old_state, session } => {
                assert_eq!(old_state, SessionState::Starting);
                assert_eq!(session.state, SessionState::Working);
            }
            other => panic!("expected Changed, got {other:?}"),
        }
        assert!(
            rx.try_recv().is_err(),
            "a quiet observation publishes nothing"
        );
    }

    #[test]
    fn a_probe_sent_as_an_ordinary_event_is_never_a_session() {
        let (clock, reg) = setup(RegistryConfig::default());
        let probe = format!("{}claude-1", crate::model::PROBE_PREFIX);
        for journaled in [false, true] {
            let o = obs(&clock, &probe, EventKind::SessionStart);
            let outcome = if journaled {
                reg.observe_journaled(o)
            } else {
                reg.observe(o)
            };
            assert_eq!(outcome.unwrap(), ObserveOutcome::Quiet);
        }
        assert!(reg.list().is_empty());
        assert!(reg.history(10).is_empty());
        // Positive control: the same event with an ordinary id is a session.
        reg.observe(obs(&clock, "s1", EventKind::SessionStart))
            .unwrap();
        assert_eq!(reg.list().len(), 1);
    }

    #[test]
    fn a_silent_session_is_ended_after_the_ttl_and_removed_after_the_linger() {
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "s1", EventKind::UserPromptSubmit))
            .unwrap();
        clock.advance(DEFAULT_SESSION_TTL - Duration::from_secs(1));
        reg.reap();
        assert_eq!(reg.list()[0].state, SessionState::Working);
        clock.advance(Duration::from_secs(1));
        reg.reap();
        let s = &reg.list()[0];
        assert_eq!(s.state, SessionState::Ended);
        assert_eq!(s.end_reason, Some(EndReason::Ttl));
        clock.advance(ENDED_TTL);
        reg.reap();
        assert!(reg.list().is_empty());
        assert_eq!(reg.history(10)[0].session_id, "s1");
    }

    #[test]
    fn a_ttl_changed_at_run_time_applies_from_the_next_reap() {
        // The user raises the TTL in Settings while a session sits silent, then lowers it: no
        // restart, and the reaper follows each value as it is set.
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "s1", EventKind::UserPromptSubmit))
            .unwrap();
        reg.set_session_ttl(Duration::from_secs(600));
        assert_eq!(reg.config().session_ttl, Duration::from_secs(600));
        clock.advance(DEFAULT_SESSION_TTL + Duration::from_secs(60));
        reg.reap();
        assert_eq!(
            reg.list()[0].state,
            SessionState::Working,
            "silent for 360 s, under the raised TTL of 600 s: still live"
        );
        reg.set_session_ttl(Duration::from_secs(120));
        reg.reap();
        let s = &reg.list()[0];
        assert_eq!(
            s.state,
            SessionState::Ended,
            "360 s is past the lowered TTL"
        );
        assert_eq!(s.end_reason, Some(EndReason::Ttl));
        reg.set_session_ttl(Duration::ZERO);
        assert_eq!(
            reg.session_ttl(),
            MIN_SESSION_TTL,
            "a zero TTL would end every session on the next pass; it is clamped"
        );
    }

    #[test]
    fn a_machine_asleep_for_longer_than_the_ttl_ends_nothing() {
        // The lid closed for an hour: the awake clock did not move.
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "s1", EventKind::Stop)).unwrap();
        clock.sleep_machine(Duration::from_secs(3600));
        reg.reap();
        assert_eq!(reg.list()[0].state, SessionState::Idle);
    }

    #[test]
    fn a_confirmed_live_pid_keeps_an_idle_session_past_the_ttl() {
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "s1", EventKind::Stop).with_pid(Some(42)))
            .unwrap();
        for _ in 0..60 {
            clock.advance(Duration::from_secs(10));
            assert!(reg.confirm_pid_liveness("s1", "tok"));
            reg.reap();
        }
        assert_eq!(reg.list()[0].state, SessionState::Idle);
        assert_eq!(reg.list()[0].pid_start.as_deref(), Some("tok"));
        assert!(
            !reg.confirm_pid_liveness("s1", "other"),
            "a different token vouches for nothing"
        );
    }

    #[test]
    fn a_passive_sighting_of_a_session_that_left_the_list_is_no_ghost() {
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "s1", EventKind::SessionStart))
            .unwrap();
        reg.observe(obs(&clock, "s1", EventKind::SessionEnd))
            .unwrap();
        clock.advance(ENDED_TTL);
        reg.reap();
        assert!(reg.list().is_empty());
        clock.advance(Duration::from_secs(1));
        let sighting = obs(&clock, "s1", EventKind::Sighting).with_source(Source::Transcript);
        assert_eq!(
            reg.observe(sighting).unwrap(),
            ObserveOutcome::Ignored(Ignored::EndedSession)
        );
        assert!(reg.list().is_empty());
        // A real resume does bring it back.
        reg.observe(obs(&clock, "s1", EventKind::UserPromptSubmit))
            .unwrap();
        assert_eq!(reg.list()[0].state, SessionState::Working);
    }

    #[test]
    fn at_the_cap_the_session_silent_longest_is_evicted() {
        let (clock, reg) = setup(RegistryConfig {
            max_live: 3,
            ..RegistryConfig::default()
        });
        for id in ["a", "b", "c"] {
            reg.observe(obs(&clock, id, EventKind::SessionStart))
                .unwrap();
            clock.advance(Duration::from_secs(1));
        }
        // `a` speaks again, so `b` is now the one silent longest.
        reg.observe(obs(&clock, "a", EventKind::UserPromptSubmit))
            .unwrap();
        let mut rx = reg.subscribe();
        reg.observe(obs(&clock, "d", EventKind::SessionStart))
            .unwrap();
        let ids: Vec<String> = reg.list().into_iter().map(|s| s.session_id).collect();
        assert_eq!(ids.len(), 3);
        assert!(!ids.contains(&"b".to_string()), "{ids:?}");
        assert_eq!(
            rx.try_recv().unwrap(),
            SessionChange::Removed {
                session_id: "b".into(),
                host: None,
            }
        );
    }

    #[test]
    fn a_hook_record_is_applied_once_however_many_others_the_replay_applies_meanwhile() {
        // Live first, then read back from the journal after a flood of backlog records (a
        // long backlog at start), and the other way round: both copies make one application.
        let registry = SessionsRegistry::new();
        let obs = |id: &str, seq: String| {
            let mut o =
                Observation::new(id, Agent::Claude, EventKind::UserPromptSubmit, Utc::now());
            o.seq = Some(seq);
            o
        };
        registry.observe(obs("live", "live-1".into())).unwrap();
        registry
            .observe_journaled(obs("journaled", "journaled-1".into()))
            .unwrap();
        for i in 0..40_000 {
            registry
                .observe_journaled(obs("backlog", format!("b-{i}")))
                .unwrap();
        }
        assert_eq!(
            registry
                .observe_journaled(obs("live", "live-1".into()))
                .unwrap(),
            ObserveOutcome::Duplicate
        );
        assert_eq!(
            registry
                .observe(obs("journaled", "journaled-1".into()))
                .unwrap(),
            ObserveOutcome::Duplicate
        );
        assert_eq!(registry.applied_seqs().count, 40_002);
    }

    #[test]
    fn a_replayed_record_with_a_seen_sequence_id_is_applied_once() {
        let (clock, reg) = setup(RegistryConfig::default());
        let mut o = obs(&clock, "s1", EventKind::UserPromptSubmit);
        o.seq = Some("123-1".into());
        assert_eq!(reg.observe(o.clone()).unwrap(), ObserveOutcome::Changed);
        assert_eq!(reg.observe(o).unwrap(), ObserveOutcome::Duplicate);
    }

    #[test]
    fn an_observation_without_a_session_id_is_refused() {
        let (clock, reg) = setup(RegistryConfig::default());
        assert_eq!(
            reg.observe(obs(&clock, " ", EventKind::Stop)),
            Err(InvalidObservation::EmptySessionId)
        );
    }

    #[test]
    fn every_change_is_numbered_and_a_snapshot_says_which_changes_it_includes() {
        let (clock, reg) = setup(RegistryConfig::default());
        let latest = reg.watch_change_seq();
        assert_eq!(reg.snapshot(10).seq, 0);
        reg.observe(obs(&clock, "s1", EventKind::SessionStart))
            .unwrap();
        reg.observe(obs(&clock, "s1", EventKind::UserPromptSubmit))
            .unwrap();
        assert_eq!(*latest.borrow(), 2, "one number per published change");
        // Nothing people see changed: no number taken.
        reg.observe(obs(&clock, "s1", EventKind::UserPromptSubmit))
            .unwrap();
        let snap = reg.snapshot(10);
        assert_eq!(snap.seq, 2);
        assert_eq!(snap.live[0].state, SessionState::Working);
        assert!(reg.end("s1", EndReason::ProcessGone));
        clock.advance(ENDED_TTL);
        reg.reap();
        let snap = reg.snapshot(10);
        assert_eq!(snap.seq, 4, "the end, then the removal after the linger");
        assert!(snap.live.is_empty());
        assert_eq!(snap.ended[0].session_id, "s1");
        assert_eq!(*latest.borrow(), 4);
        assert!(reg.snapshot(0).ended.is_empty());
    }

    #[test]
    fn a_snapshot_lists_ended_sessions_by_when_they_ended() {
        // One reap moves many sessions out of the live list at once; the snapshot's limit must
        // still keep the most recent endings.
        let (clock, reg) = setup(RegistryConfig::default());
        for n in 0..30 {
            let id = format!("s{n:02}");
            reg.observe(obs(&clock, &id, EventKind::SessionStart))
                .unwrap();
            reg.observe(obs(&clock, &id, EventKind::SessionEnd))
                .unwrap();
            clock.advance(Duration::from_secs(1));
        }
        clock.advance(ENDED_TTL);
        reg.reap();
        let ids: Vec<String> = reg
            .snapshot(3)
            .ended
            .into_iter()
            .map(|s| s.session_id)
            .collect();
        assert_eq!(ids, ["s29", "s28", "s27"]);
    }

    #[test]
    fn ending_a_session_publishes_the_change_once() {
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "s1", EventKind::Stop).with_pid(Some(9)))
            .unwrap();
        let mut rx = reg.subscribe();
        assert!(reg.end("s1", EndReason::ProcessGone));
        assert!(!reg.end("s1", EndReason::ProcessGone));
        assert!(matches!(rx.try_recv(), Ok(SessionChange::Changed { .. })));
        assert!(rx.try_recv().is_err());
        assert!(
            reg.pid_liveness_candidates().is_empty(),
            "ended sessions are not probed"
        );
    }

    fn dead_pid() -> u32 {
        let mut child = crate::test_support::spawn_sleeper(0);
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn a_ttl_shorter_than_the_watchers_tick_never_ends_a_session_its_live_process_vouches_for() {
        // TTL 1 s, and no pid-watcher tick at all: the reaper itself must ask the process. This
        // test's own process stands for the agent; a reaped child for one that is gone.
        let (clock, reg) = setup(RegistryConfig {
            session_ttl: Duration::from_secs(1),
            ..RegistryConfig::default()
        });
        let me = std::process::id();
        reg.observe(obs(&clock, "alive", EventKind::Stop).with_pid(Some(me)))
            .unwrap();
        reg.observe(obs(&clock, "gone", EventKind::Stop).with_pid(Some(dead_pid())))
            .unwrap();
        reg.observe(obs(&clock, "nopid", EventKind::Stop)).unwrap();
        for _ in 0..5 {
            clock.advance(Duration::from_secs(2));
            reg.reap();
        }
        let s = reg.get("alive").unwrap();
        assert_eq!(
            (s.state, s.end_reason),
            (SessionState::Idle, None),
            "a live process vouches for its session whatever the TTL"
        );
        assert_eq!(s.pid_start, crate::process::start_token(me));
        // Positive controls: the reaper did run, and ends what nobody vouches for.
        for id in ["gone", "nopid"] {
            let s = reg
                .get(id)
                .or_else(|| reg.history(10).into_iter().find(|s| s.session_id == id));
            assert_eq!(s.map(|s| s.end_reason), Some(Some(EndReason::Ttl)), "{id}");
        }
    }

    #[test]
    fn the_reaper_spares_only_what_the_watchers_rule_vouches_for() {
        let (clock, reg) = setup(RegistryConfig {
            session_ttl: Duration::from_secs(1),
            ..RegistryConfig::default()
        });
        reg.observe(obs(&clock, "kept", EventKind::Stop).with_pid(Some(10)))
            .unwrap();
        reg.observe(obs(&clock, "recycled", EventKind::Stop).with_pid(Some(20)))
            .unwrap();
        assert!(reg.confirm_pid_liveness("recycled", "old"));
        // Never prompted (a pre-warmed process): a live pid is no proof anyone uses it.
        reg.observe(obs(&clock, "unprompted", EventKind::SessionStart).with_pid(Some(30)))
            .unwrap();
        clock.advance(Duration::from_secs(5));
        let mut probed = Vec::new();
        reg.reap_with(|pid| {
            probed.push(pid);
            PidProbe::Alive {
                token: Some(if pid == 20 { "new" } else { "t" }.into()),
            }
        });
        probed.sort_unstable();
        assert_eq!(probed, [10, 20, 30], "each silent pid probed once");
        let reason = |id: &str| reg.get(id).unwrap().end_reason;
        assert_eq!(reason("kept"), None);
        assert_eq!(reason("recycled"), Some(EndReason::PidRecycled));
        assert_eq!(reason("unprompted"), Some(EndReason::Ttl));
        assert_eq!(reg.get("kept").unwrap().pid_start.as_deref(), Some("t"));
        // Vouched for now means silent again only after another TTL: no probe before that.
        let mut calls = 0;
        reg.reap_with(|_| {
            calls += 1;
            PidProbe::Gone
        });
        assert_eq!(calls, 0);
        clock.advance(Duration::from_secs(1));
        reg.reap_with(|_| PidProbe::Gone);
        assert_eq!(
            reason("kept"),
            Some(EndReason::Ttl),
            "gone: the TTL applies"
        );
    }

    #[test]
    fn owned_applies_refuse_a_session_that_moved_to_another_process() {
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "s1", EventKind::Stop).with_pid(Some(100)))
            .unwrap();
        let seen = |pid, tok: Option<&str>| PidOwner {
            pid,
            pid_start: tok.map(String::from),
        };
        assert!(
            !reg.vouch_if_owned("s1", &seen(99, None), "t"),
            "another pid"
        );
        assert!(reg.vouch_if_owned("s1", &seen(100, None), "t"));
        assert!(
            !reg.vouch_if_owned("s1", &seen(100, Some("t")), "u"),
            "another token"
        );
        assert!(
            !reg.end_if_owned("s1", &seen(100, Some("other")), EndReason::ProcessGone),
            "the same pid, another process"
        );
        assert!(!reg.end_if_owned("s1", &seen(7, Some("t")), EndReason::ProcessGone));
        assert_eq!(reg.get("s1").unwrap().end_reason, None);
        assert!(reg.end_if_owned("s1", &seen(100, Some("t")), EndReason::ProcessGone));
        assert!(!reg.end_if_owned("s1", &seen(100, Some("t")), EndReason::ProcessGone));
        assert_eq!(
            reg.get("s1").unwrap().end_reason,
            Some(EndReason::ProcessGone)
        );
    }
    #[test]
    fn a_remote_picture_is_mirrored_beside_local_sessions_and_never_reaped_here() {
        // A dev box's sessions arrive through its link; the TTL and the pid rule here are not
        // theirs to apply (the remote runs its own).
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "same", EventKind::SessionStart))
            .unwrap();
        let mut rx = reg.subscribe();
        let remote = |id: &str, state: SessionState| {
            let mut s = Session::new(id, Agent::Claude, state, clock.wall());
            s.host = Some("devbox".into());
            s.pid = Some(1);
            s
        };
        reg.set_remote_sessions(
            "devbox",
            vec![
                remote("same", SessionState::Working),
                remote("r2", SessionState::Idle),
            ],
        );
        assert_eq!(reg.list().len(), 3, "same id on two hosts: two sessions");
        assert!(matches!(
            rx.try_recv().unwrap(),
            SessionChange::Added { .. }
        ));
        assert!(matches!(
            rx.try_recv().unwrap(),
            SessionChange::Added { .. }
        ));
        // Unchanged picture: nothing published.
        reg.set_remote_sessions(
            "devbox",
            vec![
                remote("same", SessionState::Working),
                remote("r2", SessionState::Idle),
            ],
        );
        assert!(rx.try_recv().is_err());
        clock.advance(DEFAULT_SESSION_TTL * 3);
        reg.reap_with(|_| PidProbe::Gone);
        let remote_states: Vec<SessionState> = reg
            .list()
            .into_iter()
            .filter(|s| s.host.is_some())
            .map(|s| s.state)
            .collect();
        assert_eq!(remote_states.len(), 2);
        assert!(
            !remote_states.contains(&SessionState::Ended),
            "not reaped here"
        );
        // Positive control: the local one, silent as long, is ended by the TTL.
        let local = reg.list().into_iter().find(|s| s.host.is_none()).unwrap();
        assert_eq!(local.state, SessionState::Ended);
        while rx.try_recv().is_ok() {}
        reg.set_remote_sessions("devbox", vec![remote("same", SessionState::Idle)]);
        let mut seen = Vec::new();
        while let Ok(change) = rx.try_recv() {
            seen.push(change);
        }
        assert!(seen.iter().any(|c| matches!(c, SessionChange::Changed { old_state: SessionState::Working, session } if session.host.as_deref() == Some("devbox"))));
        assert!(seen.contains(&SessionChange::Removed {
            session_id: "r2".into(),
            host: Some("devbox".into())
        }));
        reg.set_remote_sessions("devbox", Vec::new());
        assert!(reg.list().iter().all(|s| s.host.is_none()), "forgotten");
    }

    // A remote's news is applied by what changed: an unchanged session tells nothing, a changed
    // one tells its change, a dropped one its removal (with the host), and the rest of the
    // remote's picture is neither touched nor re-announced.
    #[test]
    fn a_remote_update_tells_only_what_changed() {
        let reg = SessionsRegistry::new();
        let remote = |id: &str, state: SessionState| {
            let mut s = Session::new(id, Agent::Claude, state, Utc::now());
            s.host = Some("devbox".into());
            s
        };
        reg.set_remote_sessions(
            "devbox",
            vec![
                remote("a", SessionState::Working),
                remote("b", SessionState::Working),
                remote("c", SessionState::Idle),
            ],
        );
        let mut rx = reg.subscribe();
        let a = reg
            .list()
            .into_iter()
            .find(|s| s.session_id == "a")
            .unwrap();
        let mut b = reg
            .list()
            .into_iter()
            .find(|s| s.session_id == "b")
            .unwrap();
        b.state = SessionState::Idle;
        reg.update_remote_sessions("devbox", vec![a, b], &["c".to_string(), "nope".to_string()]);
        let mut seen = Vec::new();
        while let Ok(change) = rx.try_recv() {
            seen.push(change);
        }
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(
            matches!(&seen[0], SessionChange::Changed { old_state: SessionState::Working, session } if session.session_id == "b")
        );
        assert_eq!(
            seen[1],
            SessionChange::Removed {
                session_id: "c".into(),
                host: Some("devbox".into())
            }
        );
        let ids: Vec<String> = reg.list().into_iter().map(|s| s.session_id).collect();
        assert_eq!(ids.len(), 2);
        reg.update_remote_sessions("devbox", Vec::new(), &["a".to_string(), "b".to_string()]);
        assert!(reg.list().is_empty(), "an emptied remote is forgotten");
    }

    #[test]
    fn a_session_is_found_on_its_own_host_and_a_remote_with_the_same_id_never_stands_in_for_a_local_one(
    ) {
        // A dev box announces a session whose id is that of a session on this machine (ids are
        // the remote's to choose). Jump, Transcript and answers act on what the lookup returns:
        // the local row must find the local session, the remote row the remote one.
        let (clock, reg) = setup(RegistryConfig::default());
        reg.observe(obs(&clock, "same", EventKind::SessionStart))
            .unwrap();
        let mut far = Session::new("same", Agent::Claude, SessionState::Working, clock.wall());
        far.host = Some("devbox".into());
        far.cwd = Some("/far".into());
        let mut only_far = far.clone();
        only_far.session_id = "only-far".into();
        reg.set_remote_sessions("devbox", vec![far, only_far]);

        let local = reg.get_on(None, "same").unwrap();
        assert_eq!(local.host, None, "the local row finds the local session");
        assert_ne!(local.cwd.as_deref(), Some("/far"));
        let remote = reg.get_on(Some("devbox"), "same").unwrap();
        assert_eq!(remote.host.as_deref(), Some("devbox"));
        assert_eq!(
            remote.cwd.as_deref(),
            Some("/far"),
            "the remote row finds the remote one"
        );
        assert_eq!(reg.get("same").unwrap().host, None);
        assert!(
            reg.get("only-far").is_none(),
            "a local lookup never answers with a remote's session"
        );
        assert!(reg.get_on(Some("elsewhere"), "same").is_none());
        assert!(reg.get_on(None, "only-far").is_none());
    }
}
