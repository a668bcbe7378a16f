//! Starting every agent's file feeds: the loop over the adapters that the feeds' kit
//! (`crate::feeds`: tailing, watching, the sink) must not hold, since the adapters are built
//! from that kit. Each adapter starts its own feeds ([`crate::agents::AgentAdapter::spawn_feeds`]) in the
//! folders given for it.

use crate::agents::{AgentKnowledge, REGISTERED};
use crate::feeds::{FeedConfig, FeedContext, FeedDirs, FeedSink, NamedTask};
use tokio_util::sync::CancellationToken;

/// The folders this process's environment names: each registered agent's configuration folder
/// ([`crate::agents::AgentAdapter::config_dir`]).
pub fn dirs_from_env() -> FeedDirs {
    REGISTERED.iter().fold(FeedDirs::default(), |dirs, &agent| {
        dirs.with(agent, agent.adapter().config_dir().into_iter().collect())
    })
}

/// Starts every registered agent's file feeds ([`crate::agents::AgentAdapter::spawn_feeds`]); each runs until
/// `token` is cancelled. Must be called from within a tokio runtime.
pub fn spawn_all(sink: FeedSink, config: FeedConfig, token: CancellationToken) -> Vec<NamedTask> {
    REGISTERED
        .iter()
        .flat_map(|&agent| {
            agent.adapter().spawn_feeds(&FeedContext {
                sink: &sink,
                dirs: config.dirs.of(agent),
                config: &config,
                token: &token,
            })
        })
        .collect()
}
