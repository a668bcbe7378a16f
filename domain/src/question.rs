//! An agent's question to the user (Claude Code's `AskUserQuestion`, and the question tools of
//! other agents): what is asked, what may be answered, and the check an answer passes before it
//! is sent.
//!
//! Why the check is here, pure, and strict: the agent receives exactly what the user picked, so
//! an answer the agent did not offer (a label it never showed, two choices where it wants one,
//! free text where it allows none, an answer left out) is refused whole, with a sentence, and
//! nothing reaches the agent. Every place that answers (the CLI, the window, the popover, the
//! alert) goes through [`check_answers`], so none of them can send what another would refuse.

use serde::{Deserialize, Serialize};

/// The most questions one request may hold and still be offered for an answer here; more is
/// not a question a person reads in a tray (the agent asks it in its terminal).
pub const MAX_QUESTIONS: usize = 16;
/// The most options one question may offer and still be offered for an answer here.
pub const MAX_OPTIONS: usize = 32;

/// One choice a question offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionOption {
    /// What the user picks, and what the agent receives.
    pub label: String,
    /// What the agent says the choice means.
    #[serde(default)]
    pub description: Option<String>,
}

/// One question, as the agent asked it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Question {
    /// The question's text.
    pub question: String,
    /// The agent's short title for it (Claude's `header`).
    #[serde(default)]
    pub header: Option<String>,
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen.
    pub multi_select: bool,
    /// Whether the user may answer in words of their own ("Other").
    pub allows_other: bool,
}

/// The user's answer to one question: the labels chosen and, where the question allows it,
/// text of their own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionAnswer {
    #[serde(default)]
    pub choices: Vec<String>,
    #[serde(default)]
    pub text: Option<String>,
}

/// Why an answer to a question was refused. The `Display` text ends the CLI's sentence.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerProblem {
    #[error("it asks {asked} question(s) and {given} were answered; answer each of them (question numbers start at 1)")]
    Count { asked: usize, given: usize },
    #[error("question {number} offers no {label:?}; its choices are {offered}")]
    NotOffered {
        number: usize,
        label: String,
        offered: String,
    },
    #[error("question {number} takes one choice, and {given} were given")]
    OneChoiceOnly { number: usize, given: usize },
    #[error(
        "question {number} takes no answer in your own words, only one of its choices: {offered}"
    )]
    NoFreeText { number: usize, offered: String },
    #[error("question {number} has no answer: choose one of {offered}")]
    Empty { number: usize, offered: String },
    #[error("question {number} was given {label:?} twice")]
    Repeated { number: usize, label: String },
}

/// The labels of a question as a sentence lists them: `"Red", "Blue"`.
pub fn offered(question: &Question) -> String {
    question
        .options
        .iter()
        .map(|o| format!("{:?}", o.label))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `answers` answers `questions` exactly as they allow: one answer per question, in
/// order; each choice one of the question's labels, at most one unless it is multi-select; text
/// only where the question allows it; no question left without an answer.
pub fn check_answers(
    questions: &[Question],
    answers: &[QuestionAnswer],
) -> Result<(), AnswerProblem> {
    if answers.len() != questions.len() {
        return Err(AnswerProblem::Count {
            asked: questions.len(),
            given: answers.len(),
        });
    }
    for (index, (question, answer)) in questions.iter().zip(answers).enumerate() {
        let number = index + 1;
        for (at, label) in answer.choices.iter().enumerate() {
            if !question.options.iter().any(|o| &o.label == label) {
                return Err(AnswerProblem::NotOffered {
                    number,
                    label: label.clone(),
                    offered: offered(question),
                });
            }
            if answer.choices[..at].contains(label) {
                return Err(AnswerProblem::Repeated {
                    number,
                    label: label.clone(),
                });
            }
        }
        let text = answer.text.as_deref().filter(|t| !t.trim().is_empty());
        if answer.text.is_some() && !question.allows_other {
            return Err(AnswerProblem::NoFreeText {
                number,
                offered: offered(question),
            });
        }
        let given = answer.choices.len() + usize::from(text.is_some());
        if given == 0 {
            return Err(AnswerProblem::Empty {
                number,
                offered: offered(question),
            });
        }
        if !question.multi_select && given > 1 {
            return Err(AnswerProblem::OneChoiceOnly { number, given });
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn question(text: &str, labels: &[&str], multi: bool, other: bool) -> Question {
        Question {
            question: text.into(),
            header: None,
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: multi,
            allows_other: other,
        }
    }

    fn choose(labels: &[&str]) -> QuestionAnswer {
        QuestionAnswer {
            choices: labels.iter().map(|l| (*l).to_string()).collect(),
            text: None,
        }
    }

    #[test]
    fn an_answer_the_question_offers_passes() {
        let qs = [
            question("Which?", &["Red", "Blue"], false, true),
            question("Which caches?", &["Redis", "Memcached"], true, false),
        ];
        check_answers(&qs, &[choose(&["Blue"]), choose(&["Redis", "Memcached"])]).unwrap();
        let own = QuestionAnswer {
            choices: vec![],
            text: Some("Green".into()),
        };
        check_answers(&qs, &[own, choose(&["Memcached"])]).unwrap();
    }

    #[test]
    fn every_answer_the_agent_did_not_offer_is_refused_with_why() {
        let single = [question("Which?", &["Red", "Blue"], false, false)];
        assert!(matches!(
            check_answers(&single, &[choose(&["Green"])]),
            Err(AnswerProblem::NotOffered { number: 1, .. })
        ));
        assert_eq!(
            check_answers(&single, &[choose(&["Red", "Blue"])]),
            Err(AnswerProblem::OneChoiceOnly {
                number: 1,
                given: 2
            })
        );
        let text = QuestionAnswer {
            choices: vec![],
            text: Some("Green".into()),
        };
        assert!(matches!(
            check_answers(&single, &[text]),
            Err(AnswerProblem::NoFreeText { number: 1, .. })
        ));
        assert!(matches!(
            check_answers(&single, &[choose(&[])]),
            Err(AnswerProblem::Empty { number: 1, .. })
        ));
        assert_eq!(
            check_answers(&single, &[]),
            Err(AnswerProblem::Count { asked: 1, given: 0 })
        );
        let multi = [question("Which?", &["Red", "Blue"], true, false)];
        assert!(matches!(
            check_answers(&multi, &[choose(&["Red", "Red"])]),
            Err(AnswerProblem::Repeated { number: 1, .. })
        ));
        // A label differing only in case is another label: the agent receives what it offered.
        assert!(check_answers(&multi, &[choose(&["red"])]).is_err());
    }

    #[test]
    fn a_single_choice_question_with_other_takes_a_choice_or_text_not_both() {
        let qs = [question("Which?", &["Red", "Blue"], false, true)];
        let both = QuestionAnswer {
            choices: vec!["Red".into()],
            text: Some("and green".into()),
        };
        assert_eq!(
            check_answers(&qs, &[both]),
            Err(AnswerProblem::OneChoiceOnly {
                number: 1,
                given: 2
            })
        );
        let blank = QuestionAnswer {
            choices: vec![],
            text: Some("  ".into()),
        };
        assert!(matches!(
            check_answers(&qs, &[blank]),
            Err(AnswerProblem::Empty { number: 1, .. })
        ));
    }
}
