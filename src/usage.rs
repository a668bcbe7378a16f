//! Token usage and what it is estimated to cost.
//!
//! Why it is shaped this way:
//! - **One shape for every agent** ([`TokenUsage`]): fresh input, output, cache reads and cache
//!   writes, each counted once. Claude's `usage` blocks already count them apart; OpenAI's
//!   `input_tokens` *include* the cached ones, so a Codex figure is brought to this shape by
//!   [`TokenUsage::from_openai`] before it goes anywhere.
//! - **Two kinds of report** ([`UsageKind`]): a *delta* names what it counts (Claude's message id,
//!   a response id), so reading the same line twice, or a later line repeating a message's usage
//!   with its final figures, replaces rather than adds; a *thread total* (Codex's rollout
//!   `token_count`, the app-server's `thread/tokenUsage/updated`) says what the whole session has
//!   used so far, and the store records only what it adds to what is already known. Two sources
//!   telling the same totals (the rollout and the app-server) therefore never count twice.
//! - **Feeds report, the store decides**: a feed returns
//!   [`FeedOutput::Usage`](crate::feeds::FeedOutput::Usage), which goes into the engine's
//!   [`UsageStream`] when the registry knows the session; the history store subscribes. Not
//!   session state, so not the registry's. Nothing here does I/O except [`PriceTable::load`].
//! - **Cost is an estimate, computed when asked** from a price table shipped in the binary
//!   (`data/prices.json`, dated) that a user may override with `<data>/prices.json`. Prices are
//!   never stored beside the tokens: a corrected table re-prices all history. Every field that
//!   carries money is named `cost_estimate_usd`, and an unknown model's cost is `null`, never 0.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::Agent;

/// Tokens, each kind counted once (cache reads and writes are not part of `input`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct TokenUsage {
    /// Input tokens read fresh (neither from nor into the prompt cache).
    #[ts(type = "number")]
    pub input: u64,
    /// Output tokens, reasoning included.
    #[ts(type = "number")]
    pub output: u64,
    /// Input tokens read from the prompt cache.
    #[ts(type = "number")]
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    #[ts(type = "number")]
    pub cache_write: u64,
}

impl TokenUsage {
    /// All four added up.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }

    /// An OpenAI-shaped figure, whose `input_tokens` include the cached ones.
    pub fn from_openai(input: u64, cached_input: u64, cache_write: u64, output: u64) -> Self {
        TokenUsage {
            input: input.saturating_sub(cached_input.saturating_add(cache_write)),
            output,
            cache_read: cached_input,
            cache_write,
        }
    }

    /// What `self` has that `before` had not, kind by kind (never below zero: a total that went
    /// down, after a thread was compacted or restarted, adds nothing).
    pub fn beyond(&self, before: &TokenUsage) -> TokenUsage {
        TokenUsage {
            input: self.input.saturating_sub(before.input),
            output: self.output.saturating_sub(before.output),
            cache_read: self.cache_read.saturating_sub(before.cache_read),
            cache_write: self.cache_write.saturating_sub(before.cache_write),
        }
    }
}

impl std::ops::AddAssign for TokenUsage {
    fn add_assign(&mut self, other: TokenUsage) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
    }
}

impl std::ops::Add for TokenUsage {
    type Output = TokenUsage;
    fn add(mut self, other: TokenUsage) -> TokenUsage {
        self += other;
        self
    }
}

/// How a report's figures relate to what came before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageKind {
    /// The usage of one thing named `key` (a message id, a response id): reported again, it
    /// replaces the earlier figure for that key.
    Delta { key: String },
    /// Everything the session has used so far.
    ThreadTotal,
}

/// One usage report from a feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageReport {
    pub session_id: String,
    pub agent: Agent,
    /// When the usage happened (the line's or the notification's time).
    pub at: DateTime<Utc>,
    /// The turn it belongs to (Claude's `promptId`, Codex's `turn_id`), when known.
    pub turn_id: Option<String>,
    /// The model that used the tokens, when known (else the session's model prices it).
    pub model: Option<String>,
    pub kind: UsageKind,
    pub usage: TokenUsage,
}

/// The longest session id, turn id, key or model name a report may carry (longer is dropped:
/// they are names, and a bound keeps a hostile file from growing the store).
pub const MAX_NAME_BYTES: usize = 256;

impl UsageReport {
    /// Whether the report is worth keeping: ids present and bounded, figures not all zero.
    pub fn is_valid(&self) -> bool {
        let bounded = |s: &str| !s.is_empty() && s.len() <= MAX_NAME_BYTES;
        let key_ok = match &self.kind {
            UsageKind::Delta { key } => bounded(key),
            UsageKind::ThreadTotal => true,
        };
        bounded(&self.session_id)
            && key_ok
            && self.turn_id.as_deref().is_none_or(bounded)
            && self.model.as_deref().is_none_or(bounded)
    }
}

/// Token usage reports buffered for the history store. When full, the oldest reports are
/// dropped for a slow store (it logs how many): a lost delta is lost cost, a lost thread total is
/// repaired by the next one, and the agents and the feeds never wait on the store.
const USAGE_BUFFER: usize = 4096;

/// The engine's stream of usage reports, from the feeds to the history store. Bounded and
/// never blocking (see [`USAGE_BUFFER`]); a report is sent only while someone subscribes.
#[derive(Debug)]
pub struct UsageStream {
    sender: tokio::sync::broadcast::Sender<UsageReport>,
}

impl Default for UsageStream {
    fn default() -> Self {
        UsageStream {
            sender: tokio::sync::broadcast::channel(USAGE_BUFFER).0,
        }
    }
}

impl UsageStream {
    /// The reports sent from now on (the history store's input).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<UsageReport> {
        self.sender.subscribe()
    }

    /// Passes `report` on when it is valid, says something (all zeros is nothing, except a
    /// thread total) and someone listens; true when it was passed on. The caller checks that
    /// the session is one the registry knows.
    pub fn send(&self, report: UsageReport) -> bool {
        let worth_sending =
            report.is_valid() && (!report.usage.is_zero() || report.kind == UsageKind::ThreadTotal);
        worth_sending && self.sender.receiver_count() > 0 && self.sender.send(report).is_ok()
    }
}

/// The price of one model, in US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// A model matches when its name starts with this (the longest match wins).
    #[serde(rename = "match")]
    pub prefix: String,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// A price table: when its prices were taken, and the prices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    /// The date the prices were read from the vendors (YYYY-MM-DD).
    pub as_of: String,
    pub models: Vec<ModelPrice>,
}

/// The table shipped in the binary.
const SHIPPED_PRICES: &str = include_str!("../data/prices.json");

#[derive(Debug, thiserror::Error)]
pub enum PriceTableError {
    #[error("price table {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("price table {path} is not a price table: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

impl PriceTable {
    /// The table shipped with this build.
    pub fn shipped() -> PriceTable {
        serde_json::from_str(SHIPPED_PRICES).unwrap_or(PriceTable {
            as_of: String::new(),
            models: Vec::new(),
        })
    }

    /// Where a user's own table is read from.
    pub fn override_path(data_dir: &Path) -> PathBuf {
        data_dir.join("prices.json")
    }

    /// The shipped table with a user's entries (`<data>/prices.json`, same shape) laid over it:
    /// an entry with the same `match` replaces the shipped one, others are added, and the user's
    /// `as_of` is the table's. A missing file is no error; a broken one is (and the shipped
    /// table is returned beside it, so figures still come out).
    pub fn load(data_dir: &Path) -> (PriceTable, Option<PriceTableError>) {
        let shipped = PriceTable::shipped();
        let path = PriceTable::override_path(data_dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (shipped, None),
            Err(source) => return (shipped, Some(PriceTableError::Read { path, source })),
        };
        match serde_json::from_str::<PriceTable>(&text) {
            Ok(user) => (shipped.overlaid(user), None),
            Err(source) => (shipped, Some(PriceTableError::Parse { path, source })),
        }
    }

    /// `self` with `user`'s entries over it.
    pub fn overlaid(mut self, user: PriceTable) -> PriceTable {
        for price in user.models {
            self.models.retain(|p| p.prefix != price.prefix);
            self.models.push(price);
        }
        if !user.as_of.is_empty() {
            self.as_of = user.as_of;
        }
        self
    }

    /// The price of `model`: the entry with the longest prefix of its name (case-insensitive).
    pub fn price_of(&self, model: &str) -> Option<&ModelPrice> {
        // Any case, and without allocating: `stats` prices every usage row of its window.
        let starts_with = |prefix: &str| {
            model
                .as_bytes()
                .get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
        };
        self.models
            .iter()
            .filter(|p| !p.prefix.is_empty() && starts_with(&p.prefix))
            .max_by_key(|p| p.prefix.len())
    }

    /// What `usage` by `model` is estimated to cost, in US dollars; `None` for a model the table
    /// does not know (or no model).
    pub fn cost_estimate_usd(&self, model: Option<&str>, usage: &TokenUsage) -> Option<f64> {
        let price = self.price_of(model?)?;
        let per = |tokens: u64, dollars_per_million: f64| tokens as f64 * dollars_per_million / 1e6;
        Some(
            per(usage.input, price.input)
                + per(usage.output, price.output)
                + per(usage.cache_read, price.cache_read)
                + per(usage.cache_write, price.cache_write),
        )
    }
}

/// Adds an optional cost to a running one: unknown stays unknown only while nothing is known.
pub fn add_cost(sum: &mut Option<f64>, cost: Option<f64>) {
    if let Some(c) = cost {
        *sum = Some(sum.unwrap_or(0.0) + c);
    }
}

/// Money rounded to a millionth of a dollar, for output (sums of many small products carry float
/// noise that would make scripted figures differ in the last digits).
pub fn round_usd(v: f64) -> f64 {
    (v * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses_is_dated_and_prices_cache_apart() {
        let table = PriceTable::shipped();
        assert_eq!(table.as_of.len(), 10, "YYYY-MM-DD: {}", table.as_of);
        assert!(table.models.len() > 5);
        let usage = TokenUsage {
            input: 1_000_000,
            output: 1_000_000,
            cache_read: 1_000_000,
            cache_write: 1_000_000,
        };
        // Sonnet: 3 + 15 + 0.30 + 3.75.
        let cost = table
            .cost_estimate_usd(Some("claude-sonnet-4-5-20250929"), &usage)
            .unwrap();
        assert!((cost - 22.05).abs() < 1e-9, "{cost}");
        assert_eq!(table.cost_estimate_usd(Some("llama-7b"), &usage), None);
        assert_eq!(table.cost_estimate_usd(None, &usage), None);
    }

    #[test]
    fn every_shipped_price_names_its_source_and_newer_models_are_not_priced_as_older_ones() {
        let raw: serde_json::Value = serde_json::from_str(SHIPPED_PRICES).unwrap();
        for entry in raw["models"].as_array().unwrap() {
            let source = entry["source"].as_str().unwrap_or("");
            assert!(!source.is_empty(), "no source for {entry}");
        }
        let table = PriceTable::shipped();
        let usage = TokenUsage {
            input: 1_000_000,
            output: 1_000_000,
            cache_read: 0,
            cache_write: 0,
        };
        let cost = |model| table.cost_estimate_usd(Some(model), &usage).unwrap();
        // Anthropic's model pages: Sonnet 5 and 5.5 at $2 / $10, Opus 5.5 at $4 / $20 (a
        // catch-all `claude-sonnet` or `claude-opus` entry priced them as $3 / $15, $5 / $25).
        assert!((cost("claude-sonnet-5-20260101") - 12.0).abs() < 1e-9);
        assert!((cost("claude-sonnet-5-5") - 12.0).abs() < 1e-9);
        assert!((cost("claude-opus-5-5") - 24.0).abs() < 1e-9);
        assert!((cost("claude-opus-5") - 30.0).abs() < 1e-9);
        assert!((cost("claude-opus-4-20250514") - 90.0).abs() < 1e-9);
    }

    #[test]
    fn the_longest_prefix_wins_and_a_user_table_overrides_and_adds() {
        let table = PriceTable::shipped();
        assert_eq!(
            table.price_of("gpt-5-mini-2025").unwrap().prefix,
            "gpt-5-mini"
        );
        assert_eq!(table.price_of("GPT-5-codex").unwrap().prefix, "gpt-5");
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            PriceTable::override_path(tmp.path()),
            r#"{"as_of": "2030-01-01", "models": [
                {"match": "gpt-5", "input": 1, "output": 1, "cache_read": 0, "cache_write": 0},
                {"match": "local-", "input": 0, "output": 0, "cache_read": 0, "cache_write": 0}]}"#,
        )
        .unwrap();
        let (user, err) = PriceTable::load(tmp.path());
        assert!(err.is_none());
        assert_eq!(user.as_of, "2030-01-01");
        let usage = TokenUsage {
            input: 2_000_000,
            output: 1_000_000,
            ..Default::default()
        };
        assert_eq!(user.cost_estimate_usd(Some("gpt-5"), &usage), Some(3.0));
        assert_eq!(
            user.cost_estimate_usd(Some("local-qwen"), &usage),
            Some(0.0)
        );
        std::fs::write(PriceTable::override_path(tmp.path()), "{broken").unwrap();
        let (fallback, err) = PriceTable::load(tmp.path());
        assert!(err.unwrap().to_string().contains("prices.json"));
        assert_eq!(fallback, PriceTable::shipped());
    }

    #[test]
    fn openai_input_includes_the_cache_ours_does_not() {
        let u = TokenUsage::from_openai(100, 60, 0, 10);
        assert_eq!(
            u,
            TokenUsage {
                input: 40,
                output: 10,
                cache_read: 60,
                cache_write: 0
            }
        );
        assert_eq!(u.total(), 110);
        let later = TokenUsage::from_openai(300, 100, 0, 30);
        assert_eq!(
            later.beyond(&u),
            TokenUsage {
                input: 160,
                output: 20,
                cache_read: 40,
                cache_write: 0
            }
        );
        assert!(
            u.beyond(&later).is_zero(),
            "a total that went down adds nothing"
        );
    }
}
