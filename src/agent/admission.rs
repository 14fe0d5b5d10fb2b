//! Who gets a place at `fabcheck serve` (issue #46 item 2): connections that have not
//! authenticated yet have a budget of their own, in all and per source network, and can never
//! take an authenticated controller's place.
//!
//! In 0.3 every connection, authenticated or not, took one of the 16 places, so 24 idle
//! sockets that reconnected as soon as their hello deadline dropped them kept every controller
//! out ("busy" 40 times of 40). Now:
//! - authenticated sessions have their [`SESSIONS`] places ("busy" beyond, as the contract
//!   says), and only a valid hello takes one;
//! - a connection that has said nothing has no place at all: the accept loop holds it
//!   (`lobby`) until it speaks, so idle sockets that reconnect never take or contest one;
//! - connections that have spoken and are not authenticated yet are [`PRE_AUTH`] at most,
//!   [`PER_SOURCE`] of them from one /24 or /64; a new one beyond either evicts a connection
//!   that has not sent its whole hello yet (of its own source when that source is full): one
//!   with nothing waiting to be read first, the oldest first (a dribbler before a controller,
//!   whose hello arrives whole); once its hello is in, a connection is not evictable;
//! - only when every such place holds a whole hello waiting for its judgement (each waits at
//!   most its turn: `guesses`) is a new connection told busy.
//!
//! Pure: the places and the order; `serve` closes what is evicted.

use super::guesses::Source;
use std::time::Instant;

/// Authenticated sessions at once.
pub const SESSIONS: usize = 16;
/// Connections that have not authenticated yet, all sources together.
pub const PRE_AUTH: usize = 64;
/// Of those, from one source (/24 or /64).
pub const PER_SOURCE: usize = 8;
/// Of those, from one IPv6 /48 (a site that can hand out a fresh /64 per guess).
pub const PER_WIDE: usize = 16;
/// Places kept, beyond [`PRE_AUTH`], for sources that presented the right token before
/// (issue #58: guessers from 96 networks held every place and 0 of 8 controllers got in).
pub const RESERVED: usize = 16;

/// A connection's name in the admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId(u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Accepted; its hello is not whole yet. Evictable.
    Greeting,
    /// Its hello is in, waiting to be judged.
    Judging,
}

#[derive(Debug)]
struct Pending<T> {
    id: ConnId,
    source: Source,
    accepted: Instant,
    stage: Stage,
    /// In one of the [`RESERVED`] places.
    reserved: bool,
    handle: T,
}

/// Why a connection gets no place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// Every authenticated place is taken.
    Sessions,
    /// Every place before authentication holds a hello waiting for its judgement.
    Judging,
    /// Every place of its source does.
    SourceJudging(Source),
}

/// A new connection's place.
#[derive(Debug)]
pub enum Arrival<T> {
    /// Its place, and the handle of a connection evicted to make it (to be closed).
    Admitted {
        id: ConnId,
        evicted: Option<T>,
    },
    Busy(Busy),
}

/// The places; `T` is what the caller needs to close an evicted connection.
#[derive(Debug)]
pub struct Admission<T> {
    pending: Vec<Pending<T>>,
    sessions: usize,
    next: u64,
}

impl<T> Default for Admission<T> {
    fn default() -> Self {
        Admission { pending: Vec::new(), sessions: 0, next: 0 }
    }
}

impl<T> Admission<T> {
    /// A connection accepted from `source` at `now`; `heard` says whether a held connection
    /// has bytes waiting (it began its hello).
    pub fn arrive(&mut self, source: Source, now: Instant, handle: T, heard: impl Fn(&T) -> bool) -> Arrival<T> {
        self.arrive_as(source, false, now, handle, heard)
    }

    /// [`arrive`](Admission::arrive), for a source that presented the right token before
    /// (`trusted`): when the [`PRE_AUTH`] places are full it takes one of the [`RESERVED`].
    pub fn arrive_as(&mut self, source: Source, trusted: bool, now: Instant, handle: T, heard: impl Fn(&T) -> bool) -> Arrival<T> {
        if self.sessions >= SESSIONS {
            return Arrival::Busy(Busy::Sessions);
        }
        let mut evicted = None;
        let same = self.pending.iter().filter(|p| p.source == source).count();
        let wide = source.wide();
        let same_wide = self.pending.iter().filter(|p| wide.is_some() && p.source.wide() == wide).count();
        let general = self.pending.iter().filter(|p| !p.reserved).count();
        let reserved = self.pending.len() - general;
        let mut in_reserve = false;
        if same >= PER_SOURCE {
            match self.victim(|p| p.source == source, &heard) {
                Some(i) => evicted = Some(self.pending.remove(i).handle),
                None => return Arrival::Busy(Busy::SourceJudging(source)),
            }
        } else if same_wide >= PER_WIDE {
            match self.victim(|p| p.source.wide() == wide, &heard) {
                Some(i) => evicted = Some(self.pending.remove(i).handle),
                None => return Arrival::Busy(Busy::SourceJudging(source)),
            }
        } else if general >= PRE_AUTH {
            if trusted && reserved < RESERVED {
                in_reserve = true;
            } else {
                match self.victim(|p| !p.reserved || trusted, &heard) {
                    Some(i) => {
                        in_reserve = self.pending[i].reserved;
                        evicted = Some(self.pending.remove(i).handle);
                    }
                    None => return Arrival::Busy(Busy::Judging),
                }
            }
        }
        let id = ConnId(self.next);
        self.next += 1;
        self.pending.push(Pending { id, source, accepted: now, stage: Stage::Greeting, reserved: in_reserve, handle });
        Arrival::Admitted { id, evicted }
    }

    /// The connection to evict: of those whose hello is not in (and that `among` takes), one
    /// that has said nothing before one that has begun, the oldest first.
    fn victim(&self, among: impl Fn(&Pending<T>) -> bool, heard: &impl Fn(&T) -> bool) -> Option<usize> {
        self.pending
            .iter()
            .enumerate()
            .filter(|(_, p)| p.stage == Stage::Greeting && among(p))
            .min_by_key(|(_, p)| (heard(&p.handle), p.accepted))
            .map(|(i, _)| i)
    }

    /// Its whole hello arrived: it is no longer evictable. False when it was evicted already
    /// (the caller ends it).
    pub fn hello_in(&mut self, id: ConnId) -> bool {
        match self.pending.iter_mut().find(|p| p.id == id) {
            Some(p) => {
                p.stage = Stage::Judging;
                true
            }
            None => false,
        }
    }

    /// Its hello was valid: it takes an authenticated place, if one is left (false: it is
    /// told busy). Either way its place before authentication is given back.
    pub fn authenticated(&mut self, id: ConnId) -> bool {
        self.left(id);
        if self.sessions >= SESSIONS {
            return false;
        }
        self.sessions += 1;
        true
    }

    /// A connection that had not authenticated ended (refused, closed, evicted).
    pub fn left(&mut self, id: ConnId) {
        self.pending.retain(|p| p.id != id);
    }

    /// An authenticated session ended.
    pub fn session_ended(&mut self) {
        self.sessions = self.sessions.saturating_sub(1);
    }

    /// Connections that have not authenticated, and authenticated sessions.
    pub fn counts(&self) -> (usize, usize) {
        (self.pending.len(), self.sessions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;
    use std::time::Duration;

    fn source(text: &str) -> Source {
        Source::of(text.parse::<IpAddr>().unwrap())
    }

    fn admitted<T>(a: Arrival<T>) -> (ConnId, Option<T>) {
        match a {
            Arrival::Admitted { id, evicted } => (id, evicted),
            Arrival::Busy(b) => panic!("busy: {b:?}"),
        }
    }

    #[test]
    fn idle_sockets_make_room_and_a_hello_that_is_in_is_kept() {
        // Issue #46 item 2: 24 idle sockets that reconnect held all 16 places. Now each new
        // connection of theirs evicts the oldest idle one of their source, and a controller
        // whose hello is in keeps its place and then takes an authenticated one.
        let t0 = Instant::now();
        let idle = source("127.0.0.1");
        let mut a: Admission<u32> = Admission::default();
        for k in 0..24u32 {
            let (_, evicted) = admitted(a.arrive(idle, t0 + Duration::from_millis(u64::from(k)), k, |_| false));
            assert_eq!(evicted, k.checked_sub(PER_SOURCE as u32), "the oldest idle one of the source goes");
        }
        let (controller, evicted) = admitted(a.arrive(idle, t0 + Duration::from_millis(100), 1000, |_| false));
        assert_eq!(evicted, Some(16));
        assert!(a.hello_in(controller));
        for k in 0..100u32 {
            let (_, evicted) = admitted(a.arrive(idle, t0 + Duration::from_millis(200 + u64::from(k)), 2000 + k, |_| false));
            assert_ne!(evicted, Some(1000), "a hello that is in is never evicted");
        }
        assert!(a.authenticated(controller));
        assert_eq!(a.counts(), (PER_SOURCE - 1, 1), "its place before authentication given back");
    }

    #[test]
    fn a_connection_that_has_begun_its_hello_goes_after_the_silent_ones() {
        // A controller's hello arrives with its connection; until serve has read it, the
        // silent sockets around it are evicted first, even younger ones.
        let t0 = Instant::now();
        let s = source("127.0.0.1");
        let mut a: Admission<u32> = Admission::default();
        let speaking = 0;
        for k in 0..PER_SOURCE as u32 {
            admitted(a.arrive(s, t0 + Duration::from_millis(u64::from(k)), k, |_| false));
        }
        for k in 0..100u32 {
            let (_, evicted) = admitted(a.arrive(s, t0 + Duration::from_millis(10 + u64::from(k)), 100 + k, |h| *h == speaking));
            assert_ne!(evicted, Some(speaking), "{k}");
        }
        // When every one of them has begun, the oldest goes.
        let (_, evicted) = admitted(a.arrive(s, t0 + Duration::from_secs(1), 999, |_| true));
        assert_eq!(evicted, Some(speaking));
    }

    #[test]
    fn sources_share_the_budget_and_whole_hellos_are_busy_only_when_all_wait() {
        let t0 = Instant::now();
        let mut a: Admission<()> = Admission::default();
        // 64 sources with one idle connection each: a 65th evicts the oldest overall.
        let ids: Vec<ConnId> = (0..PRE_AUTH as u32).map(|k| admitted(a.arrive(source(&format!("10.0.{k}.1")), t0, (), |_| false)).0).collect();
        let (_, evicted) = admitted(a.arrive(source("10.1.0.1"), t0, (), |_| false));
        assert!(evicted.is_some());
        assert!(!a.hello_in(ids[0]), "the oldest was evicted");
        // Every place holds a hello waiting for judgement: busy, nothing evicted.
        let all: Vec<ConnId> = a.pending.iter().map(|p| p.id).collect();
        for id in all {
            assert!(a.hello_in(id));
        }
        assert!(matches!(a.arrive(source("10.2.0.1"), t0, (), |_| false), Arrival::Busy(Busy::Judging)));
        // A source whose places all wait is busy for that source only.
        let mut a: Admission<()> = Admission::default();
        let s = source("192.0.2.1");
        for _ in 0..PER_SOURCE {
            let (id, _) = admitted(a.arrive(s, t0, (), |_| false));
            a.hello_in(id);
        }
        assert!(matches!(a.arrive(s, t0, (), |_| false), Arrival::Busy(Busy::SourceJudging(x)) if x == s));
        admitted(a.arrive(source("192.0.3.1"), t0, (), |_| false));
    }

    #[test]
    fn authenticated_places_are_their_own() {
        let t0 = Instant::now();
        let mut a: Admission<()> = Admission::default();
        for k in 0..SESSIONS as u32 {
            let (id, _) = admitted(a.arrive(source(&format!("10.0.{k}.1")), t0, (), |_| false));
            assert!(a.hello_in(id) && a.authenticated(id));
        }
        assert_eq!(a.counts(), (0, SESSIONS));
        assert!(matches!(a.arrive(source("10.9.0.1"), t0, (), |_| false), Arrival::Busy(Busy::Sessions)));
        a.session_ended();
        let (id, _) = admitted(a.arrive(source("10.9.0.1"), t0, (), |_| false));
        a.left(id);
        assert_eq!(a.counts(), (0, SESSIONS - 1));
    }

    /// Issue #58's flood, in memory with injected addresses and clock: 96 wrong hellos from
    /// rotating /24s of 127.0.0.0/8 hold every place before authentication; 8 controllers that
    /// were served before (their sources presented the right token) are each admitted to a
    /// reserved place and judged at once, outside the shared cap.
    #[test]
    fn a_flood_from_many_networks_keeps_no_controller_served_before_out() {
        use crate::agent::guesses::Guesses;
        let t0 = Instant::now();
        let mut a: Admission<u32> = Admission::default();
        let mut g = Guesses::default();
        let controllers: Vec<IpAddr> = (0..8).map(|c| format!("10.0.{c}.1").parse().unwrap()).collect();
        for (k, ip) in controllers.iter().enumerate() {
            let (id, _) = admitted(a.arrive_as(Source::of(*ip), false, t0, k as u32, |_| false));
            assert!(a.hello_in(id));
            let turn = g.turn(*ip, t0);
            g.right(&turn);
            assert!(a.authenticated(id));
            a.session_ended();
        }
        let t1 = t0 + Duration::from_secs(60);
        let (mut held, mut busy) = (0, 0);
        for k in 0..96u32 {
            let ip: IpAddr = format!("127.{}.{}.9", k / 7, k * 37 % 251).parse().unwrap();
            match a.arrive_as(Source::of(ip), g.trusted(Source::of(ip), t1), t1, 1000 + k, |_| true) {
                Arrival::Admitted { id, .. } => {
                    assert!(a.hello_in(id));
                    let _turn = g.turn(ip, t1);
                    held += 1;
                }
                Arrival::Busy(_) => busy += 1,
            }
        }
        assert_eq!((held, busy), (PRE_AUTH, 96 - PRE_AUTH), "the guessers hold every general place");
        let t2 = t1 + Duration::from_millis(10);
        for (k, ip) in controllers.iter().enumerate() {
            let source = Source::of(*ip);
            assert!(g.trusted(source, t2));
            let (id, evicted) = admitted(a.arrive_as(source, true, t2, 100 + k as u32, |_| true));
            assert_eq!(evicted, None, "a reserved place, no one's");
            assert!(a.hello_in(id));
            let turn = g.turn(*ip, t2);
            assert_eq!(turn.at, t2, "judged at once, outside the cap the guessers used up");
            g.right(&turn);
            assert!(a.authenticated(id), "controller {k} admitted");
        }
        assert_eq!(a.counts(), (PRE_AUTH, 8));
    }

    /// 100 guessers from fresh /64s of one IPv6 /48: they hold at most [`PER_WIDE`] places, so a
    /// controller never served before, from elsewhere, is admitted, and judged within the cap's
    /// bound (the 16 guessers' turns ahead of it, at 16 a second).
    #[test]
    fn guessers_from_fresh_slash_64s_of_one_slash_48_hold_sixteen_places() {
        use crate::agent::guesses::{Guesses, GLOBAL_PER_SEC};
        let t0 = Instant::now();
        let mut a: Admission<u32> = Admission::default();
        let mut g = Guesses::default();
        let mut held = 0;
        for k in 0..100u32 {
            let ip: IpAddr = format!("2001:db8:7:{k:x}::1").parse().unwrap();
            if let Arrival::Admitted { id, .. } = a.arrive_as(Source::of(ip), false, t0, k, |_| true) {
                assert!(a.hello_in(id));
                let _ = g.turn(ip, t0);
                held += 1;
            }
        }
        assert_eq!(held, PER_WIDE);
        let ip: IpAddr = "2001:db8:99::5".parse().unwrap();
        let (id, _) = admitted(a.arrive_as(Source::of(ip), false, t0, 500, |_| true));
        assert!(a.hello_in(id));
        let turn = g.turn(ip, t0);
        let bound = Duration::from_secs(1) * PER_WIDE as u32 / GLOBAL_PER_SEC;
        assert!(turn.at.saturating_duration_since(t0) <= bound, "{:?} > {bound:?}", turn.at.saturating_duration_since(t0));
        g.right(&turn);
        assert!(a.authenticated(id));
    }
}
