//! One ssh login per host, shared by every agent session the controller opens there.
//!
//! `pair --rails` opens one agent session per rail on each node, and `mesh` one per endpoint,
//! several of which may sit on one host. Each as its own ssh login means a key exchange and an
//! authentication per session, all at once: on a slow or busy node (an emulated guest, a BMC
//! serial console, a node under load) eight logins at once miss the hello deadline. So the
//! first session to a destination logs in as an OpenSSH multiplexing master
//! (`ControlMaster=auto`, its socket in a private folder of this run: `ssh_sockets`), the others to that
//! destination wait until it is up and then open their sessions over it: one login per host,
//! each rail still its own agent process with its own context, PD, CQ and QPs.
//!
//! The rules are in [`Logins`] (pure); the hub asks it how to open each ssh link and tells it
//! when a link answered or was lost. A master's ssh stays alive while sessions use it, so the
//! hub never kills a master's child early. Beyond [`SHARED_PER_LOGIN`] sessions (sshd's
//! `MaxSessions` is 10 by default) a session logs in on its own.

use super::link_id::LinkId;
use std::collections::HashMap;

/// Sessions opened over one login besides the master's own (sshd's default `MaxSessions` 10
/// counts the master's session too).
pub const SHARED_PER_LOGIN: usize = 8;

/// How to open an ssh link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// The first session to this destination: it logs in and becomes the master.
    Master,
    /// The master is up: open a session over it.
    Shared,
    /// The master is still logging in: wait for it (the link's requests are kept).
    Wait,
    /// A login of its own: sharing is off, failed, or the login holds enough sessions.
    Alone,
}

#[derive(Debug)]
enum LoginState {
    LoggingIn {
        master: LinkId,
    },
    Up,
    /// The master was lost before it answered: the others log in on their own.
    Failed,
}

#[derive(Debug)]
struct Login {
    state: LoginState,
    /// The links sharing (or waiting to share) this login, the master not counted.
    sessions: Vec<LinkId>,
}

/// The logins of one run, per ssh destination (`[user@]host`).
#[derive(Debug, Default)]
pub struct Logins {
    hosts: HashMap<String, Login>,
}

impl Logins {
    /// How link `id` to `destination` opens now.
    pub fn open(&mut self, destination: &str, id: LinkId) -> Open {
        let Some(login) = self.hosts.get_mut(destination) else {
            self.hosts.insert(destination.to_string(), Login { state: LoginState::LoggingIn { master: id }, sessions: Vec::new() });
            return Open::Master;
        };
        let room = login.sessions.contains(&id) || login.sessions.len() < SHARED_PER_LOGIN;
        let how = match login.state {
            LoginState::LoggingIn { master } if master == id => return Open::Master,
            LoginState::Failed => return Open::Alone,
            _ if !room => return Open::Alone,
            LoginState::LoggingIn { .. } => Open::Wait,
            LoginState::Up => Open::Shared,
        };
        if !login.sessions.contains(&id) {
            login.sessions.push(id);
        }
        how
    }

    /// Link `id` answered: if it is a master that was logging in, the links waiting for it,
    /// to be opened now as shared sessions.
    pub fn answered(&mut self, id: LinkId) -> Vec<LinkId> {
        let Some(login) = self.hosts.values_mut().find(|l| matches!(l.state, LoginState::LoggingIn { master } if master == id)) else {
            return Vec::new();
        };
        login.state = LoginState::Up;
        login.sessions.clone()
    }

    /// Link `id` was lost or closed. If it was a master still logging in, the links waiting
    /// for it, to be opened now with logins of their own (each then reports its own loss);
    /// a shared session makes room for another.
    pub fn closed(&mut self, id: LinkId) -> Vec<LinkId> {
        for login in self.hosts.values_mut() {
            if matches!(login.state, LoginState::LoggingIn { master } if master == id) {
                login.state = LoginState::Failed;
                return std::mem::take(&mut login.sessions);
            }
            login.sessions.retain(|&s| s != id);
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_session_logs_in_and_the_others_wait_then_share() {
        let mut logins = Logins::default();
        assert_eq!(logins.open("root@n1", 0), Open::Master);
        assert_eq!(logins.open("root@n1", 2), Open::Wait);
        assert_eq!(logins.open("root@n1", 3), Open::Wait);
        // Another destination has its own login, even on the same host as another user.
        assert_eq!(logins.open("n1", 1), Open::Master);
        // Reopening the master (a request sent again) is still the master.
        assert_eq!(logins.open("root@n1", 0), Open::Master);
        assert_eq!(logins.answered(2), Vec::<LinkId>::new(), "a waiting link answering frees nobody");
        assert_eq!(logins.answered(0), vec![2, 3]);
        assert_eq!(logins.answered(0), Vec::<LinkId>::new(), "once");
        assert_eq!(logins.open("root@n1", 4), Open::Shared);
    }

    #[test]
    fn a_master_lost_before_it_answered_sends_the_waiting_to_log_in_alone() {
        let mut logins = Logins::default();
        assert_eq!(logins.open("n1", 0), Open::Master);
        assert_eq!(logins.open("n1", 1), Open::Wait);
        assert_eq!(logins.open("n1", 2), Open::Wait);
        assert!(logins.closed(2).is_empty(), "a waiting link closed waits no more");
        assert_eq!(logins.closed(0), vec![1]);
        assert_eq!(logins.open("n1", 3), Open::Alone);
        // A master lost after it answered changes nothing: ControlMaster=auto takes over.
        assert_eq!(logins.open("n2", 4), Open::Master);
        logins.answered(4);
        assert!(logins.closed(4).is_empty());
        assert_eq!(logins.open("n2", 5), Open::Shared);
    }

    #[test]
    fn one_login_carries_at_most_its_share_of_sessions_at_a_time() {
        let mut logins = Logins::default();
        assert_eq!(logins.open("n1", 0), Open::Master);
        for id in 1..=SHARED_PER_LOGIN {
            assert_eq!(logins.open("n1", id), Open::Wait, "{id}");
        }
        assert_eq!(logins.open("n1", 100), Open::Alone);
        assert_eq!(logins.answered(0).len(), SHARED_PER_LOGIN);
        assert_eq!(logins.open("n1", 1), Open::Shared, "a session reopened keeps its place");
        assert_eq!(logins.open("n1", 101), Open::Alone);
        logins.closed(3);
        assert_eq!(logins.open("n1", 101), Open::Shared, "a closed session made room");
    }
}
