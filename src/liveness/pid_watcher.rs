//! The pid-liveness watcher: notices that an agent's process died, and keeps a live, idle
//! session from being reaped.
//!
//! Hooks say nothing when an agent is killed (`kill -9` fires no SessionEnd), and a session idle
//! at its prompt sends nothing for hours. On hooks alone a tracker either keeps ghosts for the
//! whole TTL or drops live sessions after it. This watcher asks the processes themselves, every
//! [`WATCH_INTERVAL`]:
//!
//! - **A pid this watcher itself once saw alive is gone** → the session ends now, through the
//!   same short linger as a clean SessionEnd.
//! - **A pid is alive but its identity token differs from the one captured** → the kernel gave the
//!   number to another process; ours is gone → the session ends.
//! - **A pid is alive** → it is remembered as confirmed; and if the session was prompted, is not
//!   streamed, and is the most recently active (by `last_seen`) of the sessions sharing that pid,
//!   its `last_seen` is refreshed and its token captured, so the TTL never ends it.
//!
//! **Why a pid must be seen alive before its death counts.** A hook run under `sh -c` may report
//! the shell's pid, which is gone a millisecond later. Ending sessions on "pid is gone now" would
//! end every such session after each hook. A pid this watcher never caught alive (and a shell
//! that lives milliseconds is never caught by a 10 s poll) never ends anything: the TTL handles it.
//! A real agent, alive for the whole session, is caught on the first tick.
//!
//! **Why only the newest session of a shared pid is kept alive.** `/clear` starts a new session id
//! in the same process without ending the old one; a resumed old id can become active again. Only
//! the one most recently active (`last_seen`, not creation order) is vouched for; the abandoned
//! one ages out on the TTL.
//!
//! **Why streamed and unprompted sessions are not vouched for.** A streamed session's wrapper (an
//! editor extension) keeps a process per chat, not per visible tab, and a never-prompted process
//! may be pre-warmed by a desktop app: a live pid is no proof that anyone is using them. Their
//! deaths are still caught.
//!
//! **Why every decision carries the process it was about.** The plan is made off the lock, from a
//! snapshot; a `claude --resume` can move the session to a new process before it is applied.
//! Ending it then would end the resumed session, and vouching would hand it the old process's
//! start token (and a false "process died" on the next tick). So a decision is applied only while
//! the session still has the pid and token the plan saw ([`SessionsRegistry::end_if_owned`],
//! [`SessionsRegistry::vouch_if_owned`]).
//!
//! **The reaper asks the same rule.** A TTL shorter than this watcher's tick would otherwise end
//! a live idle session between two vouches; the registry's reaper runs [`plan`] itself (with a
//! fresh memory) on the silent sessions that have a pid before ending them.
//!
//! Cost: the candidates are copied under the registry lock with no I/O; the probes run off the
//! lock on a blocking thread, once per distinct pid ([`TickProbe`]). A pid the watcher holds an
//! exit event for is answered from one `poll(2)` over all those events and the start token read
//! when its event was opened: the event refers to that one process, so while it has not fired the
//! process is alive and still the same one. Any other pid, and a pid whose event fired, is asked
//! directly (one `/proc/<pid>/stat` read, or a `ps` on macOS).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::exit_event::{not_exited, ExitHandle, ExitWatchError};
pub use super::plan::{plan, plan_exit, ConfirmedPids, Decision, PidCandidate, PidOwner};
pub use crate::process::{probe_pid, PidProbe};
use crate::registry::{SessionChange, SessionsRegistry};

/// How often the watcher looks.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(10);

impl Decision {
    /// Carries the decision out on the registry, only while the session still belongs to the
    /// process the plan saw. True when it was applied.
    pub fn apply(self, registry: &SessionsRegistry) -> bool {
        match self {
            Decision::End {
                session_id,
                owner,
                reason,
            } => {
                let ended = registry.end_if_owned(&session_id, &owner, reason);
                if ended {
                    tracing::info!(%session_id, pid = owner.pid, reason = ?reason, source = "pid_watcher", "session_process_ended");
                }
                ended
            }
            Decision::Vouch {
                session_id,
                owner,
                token,
            } => registry.vouch_if_owned(&session_id, &owner, &token),
        }
    }
}

/// A process the watcher holds an exit event for, with the start token its probe read right after
/// the event was opened (so the token is that process's).
#[derive(Debug, Clone)]
pub struct HeldExit {
    pub pid: u32,
    pub exit: ExitHandle,
    pub token: Option<String>,
}

/// The tick's probe: [`TickProbe::begin`] asks every held exit event at once, then
/// [`TickProbe::probe`] answers each pid, reading `/proc` only for those it cannot answer from
/// the events.
#[derive(Debug, Default)]
pub struct TickProbe {
    stat: crate::process::StatProbe,
    /// Pids whose exit event has not fired this tick, with their tokens.
    running: HashMap<u32, Option<String>>,
    /// Pids asked directly since the last `begin`.
    asked_directly: usize,
}

impl TickProbe {
    /// Starts a tick: one `poll(2)` over `held`. A failed poll leaves every pid to be asked
    /// directly.
    pub fn begin(&mut self, held: &[HeldExit]) {
        self.running.clear();
        self.asked_directly = 0;
        let handles: Vec<&ExitHandle> = held.iter().map(|h| &h.exit).collect();
        match not_exited(&handles) {
            Ok(answers) => {
                for (h, running) in held.iter().zip(answers) {
                    if running {
                        self.running.insert(h.pid, h.token.clone());
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "exit events could not be asked; probing"),
        }
    }

    /// Answers one pid: alive with its held token while its exit event has not fired, or else
    /// what the process itself says. A fired event is not taken as "gone" on its own: the number
    /// may already belong to a new process another session reported.
    pub fn probe(&mut self, pid: u32) -> PidProbe {
        match self.running.get(&pid) {
            Some(token) => PidProbe::Alive {
                token: token.clone(),
            },
            None => {
                self.asked_directly += 1;
                self.stat.probe(pid)
            }
        }
    }

    /// How many pids this tick asked directly rather than from their events.
    pub fn asked_directly(&self) -> usize {
        self.asked_directly
    }
}

/// How long a pid first seen in a change must have lived before an early tick confirms it: a
/// hook run under `sh -c` may report the shell, alive while the hook runs and gone right after;
/// confirming it at once would end its session with the shell.
pub const CONFIRM_AFTER: Duration = Duration::from_secs(2);

/// Opens a process's exit event: [`ExitHandle::open`], or what a test puts in its place to stand
/// for a system that cannot.
pub type ExitOpener = Arc<dyn Fn(u32) -> Result<ExitHandle, ExitWatchError> + Send + Sync>;

/// How the watcher runs.
#[derive(Clone)]
pub struct WatchOptions {
    /// The safety-net tick ([`WATCH_INTERVAL`] in the engine).
    pub interval: Duration,
    /// The delay from a pid's first sighting in a change to the early tick that confirms it.
    pub confirm_after: Duration,
    /// Where exit events come from; `None` runs on the tick alone.
    pub exit_events: Option<ExitOpener>,
}

impl WatchOptions {
    /// The engine's watcher: kernel exit events, confirmed after [`CONFIRM_AFTER`].
    pub fn with_interval(interval: Duration) -> Self {
        WatchOptions {
            interval,
            confirm_after: CONFIRM_AFTER,
            exit_events: Some(Arc::new(ExitHandle::open)),
        }
    }
}

/// Runs the watcher until `token` is cancelled, with kernel exit events and the tick every
/// `interval`. Must be called inside a tokio runtime.
pub fn spawn(
    registry: Arc<SessionsRegistry>,
    interval: Duration,
    token: CancellationToken,
) -> JoinHandle<()> {
    spawn_with(registry, WatchOptions::with_interval(interval), token)
}

/// A pid with a live exit-event task: the token stops the task, the handle and start token
/// answer the tick.
struct Watched {
    stop: CancellationToken,
    held: HeldExit,
}

/// Runs the watcher until `token` is cancelled: a tick at once, then every `interval`; an early
/// tick `confirm_after` a new pid shows up in a change; and, between ticks, an end as soon as a
/// confirmed pid's exit event fires. Must be called inside a tokio runtime.
///
/// Every tick opens an exit event for each candidate pid not yet watched BEFORE probing it, so a
/// probe that then confirms the pid (alive, expected start token) vouches for the very process
/// the event is about. A pid whose event cannot be opened stays on the tick alone.
pub fn spawn_with(
    registry: Arc<SessionsRegistry>,
    options: WatchOptions,
    token: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = registry.subscribe();
        // Exit events land here from one small task per watched pid. Bounded by design: a full
        // channel makes those tasks wait (nothing is dropped), and there is at most one message
        // per watched pid anyway.
        let (exits_tx, mut exits_rx) = tokio::sync::mpsc::channel::<u32>(64);
        let mut confirmed = ConfirmedPids::default();
        let mut tick_probe = TickProbe::default();
        // Pids with a live exit-event task, and pids that could not get one.
        let mut watched: HashMap<u32, Watched> = HashMap::new();
        let mut unwatchable: HashSet<u32> = HashSet::new();
        let mut next_tick = tokio::time::Instant::now();
        let mut early_tick: Option<tokio::time::Instant> = None;
        loop {
            let tick_due = tokio::select! {
                biased;
                () = token.cancelled() => break,
                Some(pid) = exits_rx.recv() => {
                    watched.remove(&pid);
                    let candidates = registry.pid_liveness_candidates();
                    for decision in plan_exit(&candidates, pid, &mut confirmed) {
                        decision.apply(&registry);
                    }
                    false
                }
                () = tokio::time::sleep_until(next_tick) => true,
                () = sleep_until_some(early_tick) => true,
                change = changes.recv() => {
                    let new_pid = match change {
                        Ok(SessionChange::Added { session } | SessionChange::Changed { session, .. }) => {
                            session.pid.filter(|p| !confirmed.contains(*p) && !unwatchable.contains(p))
                        }
                        Ok(SessionChange::Removed { .. }) => None,
                        // Missed changes may have held new pids: look at them all.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Some(0),
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    };
                    if new_pid.is_some() && early_tick.is_none() {
                        early_tick = Some(tokio::time::Instant::now() + options.confirm_after);
                    }
                    false
                }
            };
            if !tick_due {
                continue;
            }
            early_tick = None;
            next_tick = tokio::time::Instant::now() + options.interval;

            let candidates = registry.pid_liveness_candidates();
            let to_open: HashSet<u32> = match &options.exit_events {
                Some(_) => candidates
                    .iter()
                    .map(|c| c.pid)
                    .filter(|p| !watched.contains_key(p) && !unwatchable.contains(p))
                    .collect(),
                None => HashSet::new(),
            };
            let opener = options.exit_events.clone();
            let held: Vec<HeldExit> = watched.values().map(|w| w.held.clone()).collect();
            let carried = std::mem::take(&mut confirmed);
            let mut probe = std::mem::take(&mut tick_probe);
            let tick = tokio::task::spawn_blocking(move || {
                let mut carried = carried;
                let mut opened: Vec<HeldExit> = Vec::new();
                let mut refused: Vec<u32> = Vec::new();
                probe.begin(&held);
                drop(held);
                let decisions = plan(&candidates, &mut carried, |pid| {
                    let exit = match (to_open.contains(&pid), opener.as_ref()) {
                        (true, Some(open)) => match open(pid) {
                            Ok(handle) => Some(handle),
                            Err(ExitWatchError::Gone { .. }) => None,
                            Err(e @ ExitWatchError::Unsupported { .. }) => {
                                tracing::debug!(error = %e, "pid stays on the tick");
                                refused.push(pid);
                                None
                            }
                        },
                        _ => None,
                    };
                    // Probed after the event was opened: a token read now is that process's.
                    let found = probe.probe(pid);
                    if let (Some(exit), PidProbe::Alive { token }) = (exit, &found) {
                        opened.push(HeldExit {
                            pid,
                            exit,
                            token: token.clone(),
                        });
                    }
                    found
                });
                (carried, probe, decisions, opened, refused)
            });
            let decisions = match tick.await {
                Ok((carried, probe, decisions, opened, refused)) => {
                    confirmed = carried;
                    tick_probe = probe;
                    unwatchable.extend(refused);
                    for held in opened {
                        // Only a pid this tick confirmed is the session's process; any other
                        // handle is closed here.
                        if confirmed.contains(held.pid) {
                            let stop = token.child_token();
                            tokio::spawn(wait_for_exit(
                                held.pid,
                                held.exit.clone(),
                                exits_tx.clone(),
                                stop.clone(),
                            ));
                            watched.insert(held.pid, Watched { stop, held });
                        }
                    }
                    decisions
                }
                Err(e) => {
                    // A panic in a probe loses one tick's memory of confirmed pids: the next
                    // tick re-confirms live ones, and deaths meanwhile fall back on the TTL.
                    tracing::error!(error = %e, "pid watcher tick failed");
                    Vec::new()
                }
            };
            for decision in decisions {
                decision.apply(&registry);
            }
            // Pids no longer confirmed (ended, recycled, no session left) stop being watched.
            watched.retain(|pid, w| {
                let keep = confirmed.contains(*pid);
                if !keep {
                    w.stop.cancel();
                }
                keep
            });
            let live: HashSet<u32> = registry
                .pid_liveness_candidates()
                .iter()
                .map(|c| c.pid)
                .collect();
            unwatchable.retain(|pid| live.contains(pid));
        }
        for w in watched.values() {
            w.stop.cancel();
        }
    })
}

/// Waits for one pid's exit event and reports it, until stopped.
async fn wait_for_exit(
    pid: u32,
    handle: ExitHandle,
    exits: tokio::sync::mpsc::Sender<u32>,
    stop: CancellationToken,
) {
    tokio::select! {
        () = stop.cancelled() => {}
        exited = handle.exited() => match exited {
            Ok(()) => {
                tokio::select! {
                    () = stop.cancelled() => {}
                    _ = exits.send(pid) => {}
                }
            }
            // The process's fate is unknown: the tick still probes it.
            Err(e) => tracing::debug!(pid, error = %e, "exit event unavailable"),
        },
    }
}

async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, EndReason, EventKind, Observation, SessionState};
    use chrono::Utc;

    fn candidate(id: &str, pid: u32, token: Option<&str>, prompted: bool) -> PidCandidate {
        PidCandidate {
            session_id: id.into(),
            pid,
            pid_start: token.map(String::from),
            prompted,
            streamed: false,
            last_seen: Utc::now(),
        }
    }

    fn alive(token: &str) -> PidProbe {
        PidProbe::Alive {
            token: Some(token.into()),
        }
    }

    fn scripted(table: Vec<(u32, PidProbe)>) -> impl FnMut(u32) -> PidProbe {
        let table: HashMap<u32, PidProbe> = table.into_iter().collect();
        move |pid| table.get(&pid).cloned().unwrap_or(PidProbe::Gone)
    }

    fn confirmed_with(pids: &[u32]) -> ConfirmedPids {
        ConfirmedPids(pids.iter().copied().collect())
    }

    /// What the tests' candidates are: pid 100 unless said otherwise, with the token given.
    fn end_of(id: &str, pid: u32, seen: Option<&str>, reason: EndReason) -> Decision {
        Decision::End {
            session_id: id.into(),
            owner: PidOwner {
                pid,
                pid_start: seen.map(String::from),
            },
            reason,
        }
    }

    fn vouch_of(id: &str, pid: u32, seen: Option<&str>, token: &str) -> Decision {
        Decision::Vouch {
            session_id: id.into(),
            owner: PidOwner {
                pid,
                pid_start: seen.map(String::from),
            },
            token: token.into(),
        }
    }

    #[test]
    fn a_hook_shell_pid_never_seen_alive_ends_nothing_when_gone() {
        // The hook reported its `sh -c` parent, gone before the first tick.
        let mut confirmed = ConfirmedPids::default();
        let d = plan(
            &[candidate("s1", 100, None, true)],
            &mut confirmed,
            scripted(vec![]),
        );
        assert!(d.is_empty());
        assert!(confirmed.is_empty());
    }

    #[test]
    fn an_agent_seen_alive_then_gone_ends_its_session_as_process_gone() {
        // `kill -9` of a claude this watcher had seen running.
        let mut confirmed = confirmed_with(&[100]);
        let d = plan(
            &[candidate("s1", 100, Some("t"), true)],
            &mut confirmed,
            scripted(vec![]),
        );
        assert_eq!(
            d,
            vec![end_of("s1", 100, Some("t"), EndReason::ProcessGone)]
        );
        assert!(!confirmed.contains(100));
    }

    #[test]
    fn every_session_of_a_dead_shared_pid_ends() {
        // Several Codex threads under one process: its death ends them all.
        let mut confirmed = confirmed_with(&[100]);
        let cands = [
            candidate("a", 100, None, true),
            candidate("b", 100, None, false),
        ];
        let d = plan(&cands, &mut confirmed, scripted(vec![]));
        assert_eq!(
            d,
            vec![
                end_of("a", 100, None, EndReason::ProcessGone),
                end_of("b", 100, None, EndReason::ProcessGone)
            ]
        );
    }

    #[test]
    fn a_live_prompted_session_is_vouched_for_and_remembered() {
        let mut confirmed = ConfirmedPids::default();
        let d = plan(
            &[candidate("s1", 100, Some("t"), true)],
            &mut confirmed,
            scripted(vec![(100, alive("t"))]),
        );
        assert_eq!(d, vec![vouch_of("s1", 100, Some("t"), "t")]);
        assert!(confirmed.contains(100));
    }

    #[test]
    fn a_live_unprompted_session_is_watched_but_not_vouched_for() {
        // A pre-warmed process nobody typed into must not be kept forever.
        let mut confirmed = ConfirmedPids::default();
        let d = plan(
            &[candidate("s1", 100, Some("t"), false)],
            &mut confirmed,
            scripted(vec![(100, alive("t"))]),
        );
        assert!(d.is_empty());
        assert!(
            confirmed.contains(100),
            "its later death must still be caught"
        );
    }

    #[test]
    fn a_streamed_session_is_never_vouched_for_but_its_death_is_caught() {
        let mut streamed = candidate("s1", 100, Some("t"), true);
        streamed.streamed = true;
        let mut confirmed = ConfirmedPids::default();
        let d = plan(
            std::slice::from_ref(&streamed),
            &mut confirmed,
            scripted(vec![(100, alive("t"))]),
        );
        assert!(d.is_empty());
        let d = plan(&[streamed], &mut confirmed, scripted(vec![]));
        assert_eq!(
            d,
            vec![end_of("s1", 100, Some("t"), EndReason::ProcessGone)]
        );
    }

    #[test]
    fn only_the_most_recently_active_session_of_a_shared_pid_is_vouched_for() {
        // `/clear` made `new` in the same process; `old` was abandoned.
        let mut old = candidate("old", 100, Some("t"), true);
        old.last_seen -= chrono::Duration::seconds(100);
        let new = candidate("new", 100, Some("t"), true);
        let d = plan(
            &[old, new],
            &mut ConfirmedPids::default(),
            scripted(vec![(100, alive("t"))]),
        );
        assert_eq!(d, vec![vouch_of("new", 100, Some("t"), "t")]);
    }

    #[test]
    fn a_resumed_older_session_reclaims_the_vouching_by_activity_not_creation() {
        // `old` was `/resume`d after `new` went quiet: activity, not creation order, decides.
        let old = candidate("old", 100, Some("t"), true);
        let mut new = candidate("new", 100, Some("t"), true);
        new.last_seen -= chrono::Duration::seconds(100);
        let d = plan(
            &[old, new],
            &mut ConfirmedPids::default(),
            scripted(vec![(100, alive("t"))]),
        );
        assert_eq!(d, vec![vouch_of("old", 100, Some("t"), "t")]);
    }

    #[test]
    fn a_changed_token_on_a_live_pid_means_recycled_and_ends_the_session() {
        let mut confirmed = confirmed_with(&[100]);
        let d = plan(
            &[candidate("s1", 100, Some("old"), true)],
            &mut confirmed,
            scripted(vec![(100, alive("new"))]),
        );
        assert_eq!(
            d,
            vec![end_of("s1", 100, Some("old"), EndReason::PidRecycled)]
        );
        assert!(!confirmed.contains(100));
    }

    #[test]
    fn a_session_with_no_token_yet_captures_the_probed_one() {
        let d = plan(
            &[candidate("s1", 100, None, true)],
            &mut ConfirmedPids::default(),
            scripted(vec![(100, alive("first"))]),
        );
        assert_eq!(d, vec![vouch_of("s1", 100, None, "first")]);
    }

    #[test]
    fn an_unreadable_token_watches_the_pid_without_vouching() {
        let mut confirmed = ConfirmedPids::default();
        let d = plan(
            &[candidate("s1", 100, None, true)],
            &mut confirmed,
            scripted(vec![(100, PidProbe::Alive { token: None })]),
        );
        assert!(d.is_empty());
        assert!(confirmed.contains(100));
    }

    #[test]
    fn a_pid_is_probed_once_however_many_sessions_share_it() {
        let cands = [
            candidate("a", 100, None, true),
            candidate("b", 100, None, false),
            candidate("c", 200, None, false),
        ];
        let mut calls: Vec<u32> = Vec::new();
        plan(&cands, &mut ConfirmedPids::default(), |pid| {
            calls.push(pid);
            alive("t")
        });
        calls.sort_unstable();
        assert_eq!(calls, vec![100, 200]);
    }

    #[test]
    fn pids_no_longer_among_candidates_are_forgotten() {
        let mut confirmed = confirmed_with(&[100, 200]);
        plan(
            &[candidate("s2", 200, None, false)],
            &mut confirmed,
            scripted(vec![(200, alive("t"))]),
        );
        assert!(!confirmed.contains(100));
        assert!(confirmed.contains(200));
    }

    fn sleeper() -> std::process::Child {
        crate::test_support::spawn_sleeper(600)
    }

    fn held(pid: u32, exit: ExitHandle, token: &str) -> HeldExit {
        HeldExit {
            pid,
            exit,
            token: Some(token.into()),
        }
    }

    #[test]
    fn a_held_exit_event_answers_for_its_process_until_it_fires() {
        let mut child = sleeper();
        let pid = child.id();
        // The held token is not the process's real one: an answer carrying it was not read
        // from the process.
        let held = [held(pid, ExitHandle::open(pid).unwrap(), "held")];
        let mut probe = TickProbe::default();
        probe.begin(&held);
        assert_eq!(probe.probe(pid), alive("held"));
        assert_eq!(probe.asked_directly(), 0);
        // A pid with no event is asked directly, with its real token.
        let mut other = sleeper();
        assert_eq!(
            probe.probe(other.id()),
            PidProbe::Alive {
                token: crate::process::start_token(other.id())
            }
        );
        assert_eq!(probe.asked_directly(), 1);

        child.kill().unwrap();
        child.wait().unwrap();
        probe.begin(&held);
        assert_eq!(probe.probe(pid), PidProbe::Gone);
        assert_eq!(probe.asked_directly(), 1, "the fired event was asked about");
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    fn a_fired_event_is_checked_against_the_process_that_has_the_number_now() {
        // The held event's process died and (as the kernel may do) its number now names another
        // live process: that one answers, with its own token, not "gone".
        let mut dead = sleeper();
        let dead_exit = ExitHandle::open(dead.id()).unwrap();
        dead.kill().unwrap();
        dead.wait().unwrap();
        let mut now_there = sleeper();
        let pid = now_there.id();
        let mut probe = TickProbe::default();
        probe.begin(&[held(pid, dead_exit, "dead-process")]);
        let found = probe.probe(pid);
        assert_eq!(
            found,
            PidProbe::Alive {
                token: crate::process::start_token(pid)
            }
        );
        assert_ne!(found, alive("dead-process"));
        now_there.kill().unwrap();
        now_there.wait().unwrap();
    }

    fn prompted_session(registry: &SessionsRegistry, id: &str, pid: u32) {
        let obs = Observation::new(id, Agent::Claude, EventKind::UserPromptSubmit, Utc::now())
            .with_pid(Some(pid));
        registry.observe(obs).unwrap();
    }

    #[test]
    fn an_end_decision_ends_the_session_as_process_gone() {
        let registry = SessionsRegistry::new();
        prompted_session(&registry, "s1", 100);
        end_of("s1", 100, None, EndReason::ProcessGone).apply(&registry);
        let s = &registry.list()[0];
        assert_eq!(s.state, SessionState::Ended);
        assert_eq!(s.end_reason, Some(EndReason::ProcessGone));
    }

    #[test]
    fn a_vouch_decision_stores_the_identity_token() {
        let registry = SessionsRegistry::new();
        prompted_session(&registry, "s1", 100);
        vouch_of("s1", 100, None, "tok").apply(&registry);
        assert_eq!(
            registry.pid_liveness_candidates()[0].pid_start.as_deref(),
            Some("tok")
        );
    }

    fn resume_in_another_process(registry: &SessionsRegistry, id: &str, pid: u32) {
        // `claude --resume <id>`: a new process, its first hook carries its pid.
        let obs = Observation::new(
            id,
            Agent::Claude,
            EventKind::UserPromptSubmit,
            Utc::now() + chrono::Duration::seconds(1),
        )
        .with_pid(Some(pid));
        registry.observe(obs).unwrap();
    }

    #[test]
    fn a_resume_landing_between_plan_and_apply_is_not_ended() {
        let registry = SessionsRegistry::new();
        prompted_session(&registry, "s1", 100);
        let mut confirmed = confirmed_with(&[100]);
        // The old process died: the plan, made off the lock, ends s1.
        let decisions = plan(
            &registry.pid_liveness_candidates(),
            &mut confirmed,
            scripted(vec![]),
        );
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        // The takeover lands before the decision is applied.
        resume_in_another_process(&registry, "s1", 200);
        for d in decisions {
            let _ = d.apply(&registry);
        }
        let s = registry.get("s1").unwrap();
        assert_eq!(
            (s.state, s.pid, s.end_reason),
            (SessionState::Working, Some(200), None),
            "the resumed session was ended for its old process's death"
        );
    }

    #[test]
    fn a_resume_landing_between_plan_and_apply_does_not_get_the_old_token() {
        let registry = SessionsRegistry::new();
        prompted_session(&registry, "s1", 100);
        let mut confirmed = ConfirmedPids::default();
        let decisions = plan(
            &registry.pid_liveness_candidates(),
            &mut confirmed,
            scripted(vec![(100, alive("old-process"))]),
        );
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        resume_in_another_process(&registry, "s1", 200);
        for d in decisions {
            let _ = d.apply(&registry);
        }
        assert_eq!(
            registry.get("s1").unwrap().pid_start,
            None,
            "the new process was handed the old one's token"
        );
        // The next tick sees the new process as itself: no false "process died".
        let decisions = plan(
            &registry.pid_liveness_candidates(),
            &mut confirmed,
            scripted(vec![(200, alive("new-process"))]),
        );
        for d in decisions {
            let _ = d.apply(&registry);
        }
        let s = registry.get("s1").unwrap();
        assert_eq!((s.state, s.end_reason), (SessionState::Working, None));
        assert_eq!(s.pid_start.as_deref(), Some("new-process"));
    }

    #[test]
    fn decisions_still_apply_to_the_process_they_were_about() {
        // Positive control for the two tests above: without a takeover both decisions land.
        let registry = SessionsRegistry::new();
        prompted_session(&registry, "s1", 100);
        let d = plan(
            &registry.pid_liveness_candidates(),
            &mut ConfirmedPids::default(),
            scripted(vec![(100, alive("t"))]),
        );
        assert!(d.into_iter().all(|d| d.apply(&registry)));
        let d = plan(
            &registry.pid_liveness_candidates(),
            &mut confirmed_with(&[100]),
            scripted(vec![]),
        );
        assert!(d.into_iter().all(|d| d.apply(&registry)));
        assert_eq!(
            registry.get("s1").unwrap().end_reason,
            Some(EndReason::ProcessGone)
        );
    }
}
