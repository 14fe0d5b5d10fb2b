//! Why the controller lost an agent, or never had it: a typed value (issue #26 item 4), kept
//! typed to the printers (0.4): `pair`, `mesh` and `--rails` carry the [`Loss`] itself, not
//! its words, so analysis and retests act on the kind (retry a timeout, blame a host that is
//! unreachable, stop on a protocol error) without parsing prose.
//!
//! The controller's hub, links, `drive` and `reach` say what happened; they choose no words.
//! The cause and remedy a person reads are written in `report::loss`.

use std::process::ExitStatus;
use std::time::Duration;

/// A lost (or never reached) agent: which one, and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Loss {
    /// The agent as the user named it (its label in the hub); empty where no agent is meant.
    pub agent: String,
    pub kind: LossKind,
    /// What was under way when it happened, in words (`running write_bw a->b 65536 B`): a test's
    /// step, where the loss was met in one.
    pub during: Option<String>,
}

/// The step of a conversation that was under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Hello,
    Inventory,
    /// Asking a node for its rails (`pair`/`mesh --rails`).
    Rails,
    /// A test's step (preparing, connecting, running, stopping, finishing it): `Loss::during`
    /// says which.
    Test,
}

/// How the agent was started or reached: what a remedy for a start or an exit must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carrier {
    /// A child of this process (`localhost`).
    Local,
    /// `ssh LOGIN fabcheck agent` (`LOGIN`: `host` or `user@host`).
    Ssh { login: String },
    /// `srun --nodelist=NODE ... fabcheck agent` inside a Slurm allocation.
    Srun { node: String },
    /// `kubectl exec -i POD -- fabcheck agent` in the DaemonSet's pod on NODE.
    Kubectl { node: String },
    /// A running `fabcheck serve` over TCP.
    Tcp,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LossKind {
    /// `--launcher srun` with `user@host`: srun starts agents as the caller.
    SrunWithUser,
    /// `--remote-fabcheck` is not a plain path.
    BadRemotePath(String),
    /// This fabcheck's own binary (for a local agent) cannot be found.
    NoOwnBinary(String),
    /// The agent, ssh or srun could not be started.
    NotStarted { carrier: Carrier, detail: String },
    /// The agent's pipes could not be set up (`None`: it has none).
    Pipes(Option<String>),
    /// A `tcp://` agent's name does not resolve (`None`: to no address).
    Unresolved(Option<String>),
    /// No address of a `tcp://` agent answered.
    Unreachable { port: u16, detail: String },
    /// The agent, or the ssh or srun carrying it, exited. `tail`: its last stderr line.
    Exited { carrier: Carrier, status: ExitStatus, tail: String },
    /// The channel ended or failed, without an exit status to explain it.
    Gone { why: String, tail: String },
    /// The agent broke the protocol (a bad message, an impossible figure, an unexpected reply).
    Protocol(String),
    /// The agent answered with an error, in its own words (a wrong token, a busy serve, a
    /// refused test); during `step`.
    Refused { step: Step, cause: String, remedy: String },
    /// No answer within `waited` during `step`.
    Timeout { step: Step, waited: Duration },
    /// Ctrl-C or SIGTERM: the agents were told to stop.
    Interrupted,
    /// A bug in fabcheck.
    Internal(String),
}

/// Why an endpoint could not be reached: typed until the document says it (`report::loss`).
#[derive(Debug, Clone, PartialEq)]
pub enum Unreached {
    /// Its agent was lost, or never had: the hub's loss.
    Lost(Loss),
    /// `--rails`: its host could not say its rails, so none of its rail endpoints is reached.
    RailsUnknown(Loss),
}

impl Loss {
    pub fn new(agent: impl Into<String>, kind: LossKind) -> Loss {
        Loss { agent: agent.into(), kind, during: None }
    }

    /// The loss, met while doing `what`.
    pub fn during(self, what: impl Into<String>) -> Loss {
        Loss { during: Some(what.into()), ..self }
    }

    /// Whether trying the same agent again may help: the agent or the path to it went away or
    /// was slow, rather than being refused or misconfigured.
    pub fn is_transient(&self) -> bool {
        matches!(self.kind, LossKind::Unreachable { .. } | LossKind::Exited { .. } | LossKind::Gone { .. } | LossKind::Timeout { .. })
    }
}
