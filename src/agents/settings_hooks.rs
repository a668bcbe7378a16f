//! The install and `doctor` of an agent whose hooks live in a JSON settings file in Claude
//! Code's shape (`hooks.<Event>: [{matcher, hooks: [entry]}]`), the shape several agents copied
//! (Qoder CLI, Auggie): which events, which entry and which flag are the adapter's; the byte-safe
//! edit is [`crate::install::hooks_json`]'s and the checks are [`crate::doctor::findings`]'.
//!
//! Why a kit beside the adapters: each such agent's plan and doctor were the same twenty lines
//! with a different name; keeping them once means a fix to one is a fix to all.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::doctor::findings::{hook_findings, Finding, HookCheck};
use crate::install::hooks_json::{self, parse_json, HookSpec};
use crate::install::{read_optional, Action, InstallError, Plan};
use crate::model::Agent;

/// One agent's hooks in its settings file.
pub struct SettingsHooks {
    pub agent: Agent,
    /// (event, whether it takes a tool matcher: then `*`).
    pub events: &'static [(&'static str, bool)],
    /// Our entry for an event, given the command line.
    pub entry: fn(&str, String) -> Value,
    /// What `doctor` tells to run to fix them ("agent-tray install --qoder").
    pub fix: &'static str,
}

impl SettingsHooks {
    /// Our hooks as the editor takes them.
    pub fn spec<'a>(&self, bin: &'a Path) -> HookSpec<'a> {
        HookSpec::for_events(self.agent, bin, self.events, self.entry)
    }

    /// The pure plan for the settings file given its current text.
    pub fn plan_text(
        &self,
        path: &Path,
        old: Option<&str>,
        bin: &Path,
        action: Action,
    ) -> Result<Plan, InstallError> {
        hooks_json::plan_text(path, old, &self.spec(bin), action).map(|(plan, _)| plan)
    }

    /// The plan for the file at `path`, read now.
    pub fn plan(&self, path: &Path, bin: &Path, action: Action) -> Result<Plan, InstallError> {
        let old = read_optional(path)?;
        self.plan_text(path, old.as_deref(), bin, action)
    }

    /// `doctor`'s findings on the file at `path` (`None`: the folder could not be found, and
    /// `missing_folder` says what to set).
    pub fn doctor(&self, path: Option<PathBuf>, missing_folder: &str, bin: &Path) -> HookCheck {
        let name = crate::catalogue::entry(self.agent).product_name;
        let Some(path) = path else {
            return (
                vec![Finding::Problem(format!(
                    "cannot find {name}'s folder: {missing_folder}"
                ))],
                None,
            );
        };
        let doc = match read_optional(&path).and_then(|t| parse_json(&path, t.as_deref())) {
            Ok(doc) => doc,
            Err(e) => return (vec![Finding::Problem(e.to_string())], None),
        };
        let events: Vec<&str> = self.events.iter().map(|(e, _)| *e).collect();
        hook_findings(name, &path, &doc, &events, bin, self.agent, self.fix)
    }
}
