//! The agents a run talks to, as one seam: `pair`, `mesh` and `collective` add their hosts,
//! reach them and drive their conversations through [`Agents`], never through the hub itself.
//! [`HubAgents`] is the real one (every launcher, one thread); the run's logic above it sees
//! only the trait, so it is driven the same way whatever carries the channels.

use super::drive::{drive, Conversation, Job};
use super::endpoint::HostSpec;
use super::hub::{Hub, LinkId};
use super::link::LaunchOptions;
use super::reach::{reach_all, token_for, Reach};
use crate::outcome::loss::Loss;

/// A conversation lent to [`Agents::drive`]: the caller keeps it, and reads it once driven.
pub type LentJob<'a> = Job<&'a mut dyn Conversation>;

/// Owned jobs, their conversations lent to [`Agents::drive`]: the caller reads them afterwards.
pub fn lend<C: Conversation>(jobs: &mut [Job<C>]) -> Vec<LentJob<'_>> {
    jobs.iter_mut().map(|j| Job { links: j.links.clone(), conversation: &mut j.conversation as &mut dyn Conversation }).collect()
}

/// The agents of one run.
pub trait Agents {
    /// A channel to the agent on `host`, called `label` in every message; nothing starts
    /// until it is reached.
    fn add(&mut self, host: &HostSpec, label: String) -> LinkId;
    /// Reaches `links` (hello with each host's token; with `inventory`, the node's inventory
    /// too), `window` handshakes at a time: one finished [`Reach`] per link, in order. `Err`
    /// only on Ctrl-C or SIGTERM.
    fn reach(&mut self, links: &[LinkId], labels: &[String], inventory: bool, window: usize) -> Result<Vec<Reach>, Loss>;
    /// Runs every job to its end, at most `window` at once (see [`drive`]).
    fn drive(&mut self, jobs: &mut [LentJob<'_>], window: usize) -> Result<(), Loss>;
    /// Tells every agent goodbye and closes every channel: nothing is left running on any node.
    /// A link used again afterwards starts its agent afresh.
    fn close_all(&mut self);
}

/// The agents over one [`Hub`]: ssh, srun, kubectl, a local child or `fabcheck serve` over TCP.
pub struct HubAgents {
    hub: Hub,
    /// The hello token, given only to agents reached over TCP ([`token_for`]).
    token: Option<String>,
    /// Each link's host, for its token.
    hosts: Vec<HostSpec>,
}

impl HubAgents {
    /// Agents launched with `launch`. From here on SIGINT, SIGTERM and SIGHUP end
    /// a run between wake-ups (the caller then closes every channel) instead of killing fabcheck
    /// with its agents still running.
    pub fn new(launch: LaunchOptions) -> HubAgents {
        crate::sys::os::catch_termination();
        HubAgents { token: launch.token.clone(), hub: Hub::new(launch), hosts: Vec::new() }
    }
}

impl Agents for HubAgents {
    fn add(&mut self, host: &HostSpec, label: String) -> LinkId {
        self.hosts.push(host.clone());
        self.hub.add(host, label)
    }

    fn reach(&mut self, links: &[LinkId], labels: &[String], inventory: bool, window: usize) -> Result<Vec<Reach>, Loss> {
        let tokens: Vec<Option<String>> = links.iter().map(|&l| token_for(&self.hosts[l], &self.token)).collect();
        reach_all(&mut self.hub, links, labels, &tokens, inventory, window)
    }

    fn drive(&mut self, jobs: &mut [LentJob<'_>], window: usize) -> Result<(), Loss> {
        drive(&mut self.hub, jobs, window)
    }

    fn close_all(&mut self) {
        self.hub.close_all();
    }
}
