//! Asking each node for its rails (`rails` request) over its control session.

use crate::control::agents::{lend, Agents};
use crate::control::drive::{Actions, Conversation, Job};
use crate::control::hub::LinkId;
use crate::control::protocol::{Reply, Request};
use crate::error::Failure;
use crate::gpu::rails::SharedUplink;
use crate::model::rails::{Rail, RailSpec, MAX_RAILS};
use crate::outcome::loss::Loss;
use crate::outcome::loss::{LossKind, Step};
use std::time::{Duration, Instant};

/// How long a node may take to list its ports and read its PCI tree.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// What a node says of its rails: them, in rail order, and the PCIe uplinks they share.
pub type NodeRails = (Vec<Rail>, Vec<SharedUplink>);

/// One node's answer.
pub struct Ask {
    label: String,
    spec: RailSpec,
    deadline: Option<Instant>,
    pub answer: Option<Result<NodeRails, Loss>>,
}

impl Conversation for Ask {
    fn start(&mut self, now: Instant, act: &mut Actions) {
        act.send(0, Request::Rails { spec: self.spec.clone() });
        self.deadline = Some(crate::sys::time::deadline(now, DEADLINE));
    }

    fn on_reply(&mut self, _side: usize, reply: Reply, _now: Instant, act: &mut Actions) {
        let answer = match reply {
            Reply::Rails { rails, .. } if rails.is_empty() || rails.len() > MAX_RAILS => {
                Err(Loss::new(&self.label, LossKind::Protocol(format!("answered {} rails (1 to {MAX_RAILS} expected)", rails.len()))))
            }
            Reply::Rails { rails, shared } => Ok((rails, shared)),
            Reply::Error { cause, remedy } => Err(Loss::new(&self.label, LossKind::Refused { step: Step::Rails, cause, remedy })),
            other => {
                act.discard.push(0);
                Err(Loss::new(&self.label, LossKind::Protocol(format!("unexpected reply {other:?} to rails"))))
            }
        };
        self.answer = Some(answer);
        self.deadline = None;
    }

    fn on_lost(&mut self, _side: usize, loss: Loss, _now: Instant, _act: &mut Actions) {
        self.answer = Some(Err(loss));
        self.deadline = None;
    }

    fn on_deadline(&mut self, _now: Instant, act: &mut Actions) {
        act.discard.push(0);
        self.answer = Some(Err(Loss::new(&self.label, LossKind::Timeout { step: Step::Rails, waited: DEADLINE })));
        self.deadline = None;
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn is_done(&self) -> bool {
        self.answer.is_some()
    }
}

/// Both nodes' rails and the uplinks their rails share, asked at once. The first node that
/// cannot say is the error (exit 2).
pub fn rails(fleet: &mut dyn Agents, links: [LinkId; 2], labels: &[String; 2], spec: &RailSpec) -> Result<[NodeRails; 2], Failure> {
    let mut out = each(fleet, &links, labels, spec)?.into_iter();
    let a = out.next().expect("two answers").map_err(Failure::from)?;
    let b = out.next().expect("two answers").map_err(Failure::from)?;
    Ok([a, b])
}

/// Every node's answer, asked at once (`mesh --rails` asks each of its hosts), in the order of
/// `links`: a node that cannot say is its own error.
pub fn each(fleet: &mut dyn Agents, links: &[LinkId], labels: &[String], spec: &RailSpec) -> Result<Vec<Result<NodeRails, Loss>>, Failure> {
    let mut jobs: Vec<Job<Ask>> = links
        .iter()
        .zip(labels)
        .map(|(&link, label)| Job { links: vec![link], conversation: Ask { label: label.clone(), spec: spec.clone(), deadline: None, answer: None } })
        .collect();
    fleet.drive(&mut lend(&mut jobs), links.len().max(1))?;
    Ok(jobs
        .into_iter()
        .map(|Job { conversation: Ask { label, answer, .. }, .. }| {
            answer.unwrap_or_else(|| Err(Loss::new(label, LossKind::Internal("no answer to rails".into()))))
        })
        .collect())
}
