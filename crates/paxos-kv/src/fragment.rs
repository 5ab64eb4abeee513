//! Commands of any size over 24-byte consensus payloads (issue 24 item 2).
//!
//! A consensus value carries 24 payload bytes (`innet_paxos::envelope`), so
//! a network client's command (`client u64 | seq u64 | operation`, up to a
//! 1 MiB value) is split across consecutive requests of one proposer, one
//! instance each:
//!
//! ```text
//! START  0x11 | total_len u32 | digest u64 | the first 11 bytes   (request r)
//! MORE   0x12 | index u24     | the next 20 bytes                   (request r + index)
//! ```
//!
//! The proposer library numbers a proposer's requests consecutively and
//! the replica's front end submits one command's pieces back to back, so
//! piece `index` travels as request `first + index`: a piece names its
//! command by `(proposer, request - index)` without carrying it. Pieces may
//! be chosen in any order (resubmission), interleaved with other
//! proposers' values and chosen twice; the replica collects them in an
//! [`Assemblies`] table and applies the command once, at the instance of
//! its last piece, atomically (one LevelDB batch) and in log order.
//!
//! The table is replicated state: every replica feeds it the same pieces
//! in the same (log) order and it evicts by a rule that only depends on
//! that order, so replicas agree on which commands complete. Bounds: at
//! most [`ASSEMBLIES_MAX`] commands and [`ASSEMBLY_BYTES_MAX`] bytes in
//! progress; beyond either the command whose first piece is oldest in the
//! log is dropped (its client times out and resends). A piece that
//! contradicts its command (index past the end, lengths that do not add
//! up) drops the command (`malformed`).
//!
//! Why split rather than store by reference (docs/paxos.md has the longer
//! argument): every replica gets every byte through the log it already
//! follows, so recovery, catch-up from peers and the acceptors, and
//! atomicity need nothing new; a reference would need a second
//! replica-to-replica channel, a quorum of stored copies before ordering,
//! fetch-on-miss and garbage collection. The cost is one instance per 20
//! bytes (about 52,000 instances for 1 MiB).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use innet_paxos::envelope::PAYLOAD_MAX;

pub const START: u8 = 0x11;
pub const MORE: u8 = 0x12;
/// Command bytes a START carries (after its kind, total and digest).
pub const START_DATA: usize = PAYLOAD_MAX - 13;
/// Command bytes a MORE carries (all but the last exactly this many).
pub const MORE_DATA: usize = PAYLOAD_MAX - 4;
/// Widest command: client id, sequence number and the widest operation.
pub const COMMAND_MAX: usize = 16 + innet_wire::kv::BODY_MAX;
/// Pieces of the widest command.
pub const PIECES_MAX: usize = pieces(COMMAND_MAX);
/// Commands in progress a replica keeps (far more than its clients send
/// at once through every replica's front end).
pub const ASSEMBLIES_MAX: usize = 1024;
/// Bytes of commands in progress a replica keeps (at least four commands
/// of the widest kind).
pub const ASSEMBLY_BYTES_MAX: usize = 64 << 20;

const _: () = assert!(PIECES_MAX < 1 << 24, "a piece index is a u24");
const _: () = assert!(START_DATA > 0 && MORE_DATA > START_DATA);

/// The digest a START carries: SipHash-2-4 of the whole command under a
/// fixed, public key (see the module doc for what it does and does not
/// keep out).
pub fn digest(command: &[u8]) -> u64 {
    use std::hash::Hasher;
    debug_assert!(command.len() <= COMMAND_MAX, "a digest covers one command (a parsed START bounds its total)");
    let mut h = siphasher::sip::SipHasher24::new_with_keys(0x696e_6e65_742d_6b76, 0x7069_6563_6573_2d31);
    h.write(command);
    h.finish()
}
const _: () = assert!(ASSEMBLY_BYTES_MAX >= 4 * COMMAND_MAX);

/// How many pieces a command of `len` bytes takes.
pub const fn pieces(len: usize) -> usize {
    let n = if len <= START_DATA { 1 } else { 1 + (len - START_DATA).div_ceil(MORE_DATA) };
    // The pieces hold the command, and one piece fewer would not.
    debug_assert!(n >= 1 && START_DATA + (n - 1) * MORE_DATA >= len);
    debug_assert!(n == 1 || START_DATA + (n - 2) * MORE_DATA < len);
    n
}

/// The payloads of `command`'s pieces, in order. Panics past [`COMMAND_MAX`].
pub fn split(command: &[u8]) -> Vec<Vec<u8>> {
    assert!(command.len() <= COMMAND_MAX, "command of {} bytes", command.len());
    let (head, mut rest) = command.split_at(command.len().min(START_DATA));
    let mut out = Vec::with_capacity(pieces(command.len()));
    let mut p = vec![START];
    p.extend_from_slice(&(command.len() as u32).to_be_bytes());
    p.extend_from_slice(&digest(command).to_be_bytes());
    p.extend_from_slice(head);
    out.push(p);
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rest.len().min(MORE_DATA));
        let index = out.len() as u32;
        let mut p = vec![MORE];
        p.extend_from_slice(&index.to_be_bytes()[1..]);
        p.extend_from_slice(chunk);
        out.push(p);
        rest = tail;
    }
    debug_assert_eq!(out.len(), pieces(command.len()));
    out
}

/// A piece as read from a payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Start { total: u32, digest: u64, data: &'a [u8] },
    More { index: u32, data: &'a [u8] },
}

impl<'a> Piece<'a> {
    /// `None` if `payload` is no piece (another kind of command), or one
    /// whose own fields are out of range.
    pub fn parse(payload: &'a [u8]) -> Option<Piece<'a>> {
        match *payload.first()? {
            START => {
                let total = u32::from_be_bytes(payload.get(1..5)?.try_into().ok()?);
                let digest = u64::from_be_bytes(payload.get(5..13)?.try_into().ok()?);
                let data = &payload[13..];
                let whole = (total as usize) <= COMMAND_MAX && data.len() == (total as usize).min(START_DATA);
                let piece = whole.then_some(Piece::Start { total, digest, data });
                debug_assert!(piece.is_none_or(|p| p.index() == 0 && p.data().len() <= START_DATA));
                piece
            }
            MORE => {
                let b = payload.get(1..4)?;
                let index = u32::from_be_bytes([0, b[0], b[1], b[2]]);
                let data = &payload[4..];
                let fits = index >= 1 && (index as usize) < PIECES_MAX && !data.is_empty();
                let piece = fits.then_some(Piece::More { index, data });
                debug_assert!(piece.is_none_or(|p| p.index() >= 1 && p.data().len() + 4 == payload.len()));
                piece
            }
            _ => None,
        }
    }

    pub fn index(&self) -> u32 {
        let i = match self {
            Piece::Start { .. } => 0,
            Piece::More { index, .. } => *index,
        };
        debug_assert!((i as usize) < PIECES_MAX, "a piece index within PIECES_MAX");
        i
    }

    fn data(&self) -> &'a [u8] {
        match self {
            Piece::Start { data, .. } | Piece::More { data, .. } => data,
        }
    }
}

/// A command's name: its proposer and the request of its first piece.
pub type CommandId = (u32, u32);

#[derive(Clone, Debug, Default)]
struct Assembly {
    /// The START's total length and digest.
    total: Option<(u32, u64)>,
    pieces: BTreeMap<u32, Vec<u8>>,
    bytes: usize,
    /// The earliest instance a piece of it was chosen in.
    born: u32,
}

/// What adding a piece did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Added {
    /// Kept; the command is not complete.
    Pending,
    /// The piece was known already (chosen twice).
    Repeated,
    /// The command is complete: its bytes (its pieces are forgotten).
    Complete(Vec<u8>),
    /// The piece contradicts its command (or names none): the command is
    /// dropped.
    Malformed,
    /// The command's pieces do not agree with its START's digest (pieces
    /// of two commands, see the module doc): the command is dropped.
    Forged,
}

/// Commands in progress (see the module doc), and what they cost.
#[derive(Clone, Debug, Default)]
pub struct Assemblies {
    open: HashMap<CommandId, Assembly>,
    /// `(born, proposer, first)` of every open command: eviction order.
    by_age: BTreeSet<(u32, u32, u32)>,
    bytes: usize,
    pub evicted: u64,
    pub malformed: u64,
    /// Commands dropped because their pieces did not match their digest.
    pub forged: u64,
    pub completed: u64,
}

impl Assemblies {
    /// Open commands.
    pub fn len(&self) -> usize {
        debug_assert!(self.open.len() <= ASSEMBLIES_MAX && self.open.len() == self.by_age.len());
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        debug_assert_eq!(self.open.is_empty(), self.bytes == 0, "bytes are held only by open commands");
        self.open.is_empty()
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        debug_assert!(self.bytes <= ASSEMBLY_BYTES_MAX, "{} bytes of commands in progress", self.bytes);
        self.bytes
    }

    /// Adds `piece`, chosen in `instance` as `(proposer, request)`. Every
    /// piece dropped on the way (completed, evicted or malformed commands)
    /// is appended to `forget` as `(proposer, request)`, for the caller's
    /// storage.
    pub fn add(
        &mut self,
        instance: u32,
        proposer: u32,
        request: u32,
        piece: Piece,
        forget: &mut Vec<CommandId>,
    ) -> Added {
        let Some(first) = request.checked_sub(piece.index()) else {
            self.malformed += 1;
            return Added::Malformed;
        };
        let id = (proposer, first);
        if !self.open.contains_key(&id) {
            self.make_room(forget);
        }
        let a = self.open.entry(id).or_insert_with(|| Assembly { born: instance, ..Assembly::default() });
        if a.pieces.contains_key(&piece.index()) {
            return Added::Repeated;
        }
        self.by_age.remove(&(a.born, id.0, id.1));
        a.born = a.born.min(instance);
        self.by_age.insert((a.born, id.0, id.1));
        if let Piece::Start { total, digest, .. } = piece {
            a.total = Some((total, digest));
        }
        let data = piece.data();
        a.pieces.insert(piece.index(), data.to_vec());
        a.bytes += data.len();
        self.bytes += data.len();
        // Checked once for every piece: each as it comes once the total is
        // known, those before it when the START brings the total.
        let fits =
            |t: u32, i: u32, d: &[u8]| (i as usize) < pieces(t as usize) && d.len() == Self::piece_len(t as usize, i);
        let consistent = match (a.total, piece) {
            (None, _) => true,
            (Some((t, _)), Piece::Start { .. }) => a.pieces.iter().all(|(&i, d)| fits(t, i, d)),
            (Some((t, _)), Piece::More { index, data }) => fits(t, index, data),
        };
        if !consistent {
            self.malformed += 1;
            self.drop_command(id, forget);
            return Added::Malformed;
        }
        if let Some((t, d)) = a.total.filter(|&(t, _)| a.pieces.len() == pieces(t as usize)) {
            let command: Vec<u8> = a.pieces.values().flatten().copied().collect();
            debug_assert_eq!(command.len(), t as usize, "every piece's length was checked");
            self.drop_command(id, forget);
            if digest(&command) != d {
                self.forged += 1;
                return Added::Forged;
            }
            self.completed += 1;
            return Added::Complete(command);
        }
        self.make_room_for(id, forget);
        Added::Pending
    }

    /// Bytes piece `index` of a `total`-byte command carries.
    fn piece_len(total: usize, index: u32) -> usize {
        if index == 0 {
            return total.min(START_DATA);
        }
        let before = START_DATA + (index as usize - 1) * MORE_DATA;
        total.saturating_sub(before).min(MORE_DATA)
    }

    /// Evicts the oldest commands until one more fits (`ASSEMBLIES_MAX`).
    fn make_room(&mut self, forget: &mut Vec<CommandId>) {
        while self.open.len() >= ASSEMBLIES_MAX {
            let Some(&(_, p, f)) = self.by_age.first() else { break };
            self.evicted += 1;
            self.drop_command((p, f), forget);
        }
    }

    /// Evicts the oldest commands other than `keep` while the bytes held
    /// exceed [`ASSEMBLY_BYTES_MAX`].
    fn make_room_for(&mut self, keep: CommandId, forget: &mut Vec<CommandId>) {
        while self.bytes > ASSEMBLY_BYTES_MAX {
            let Some(&(_, p, f)) = self.by_age.iter().find(|(_, p, f)| (*p, *f) != keep) else { break };
            self.evicted += 1;
            self.drop_command((p, f), forget);
        }
    }

    fn drop_command(&mut self, id: CommandId, forget: &mut Vec<CommandId>) {
        let Some(a) = self.open.remove(&id) else { return };
        self.by_age.remove(&(a.born, id.0, id.1));
        self.bytes -= a.bytes;
        forget.extend(a.pieces.keys().map(|i| (id.0, id.1 + i)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(t: &mut Assemblies, inst: u32, proposer: u32, first: u32, ps: &[Vec<u8>], order: &[usize]) -> Vec<Added> {
        let mut forget = vec![];
        order
            .iter()
            .map(|&k| t.add(inst + k as u32, proposer, first + k as u32, Piece::parse(&ps[k]).unwrap(), &mut forget))
            .collect()
    }

    #[test]
    fn split_and_reassemble_any_size_in_any_order() {
        for len in [0, 1, START_DATA, START_DATA + 1, START_DATA + MORE_DATA, START_DATA + MORE_DATA + 1, 5000] {
            let command: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let ps = split(&command);
            assert_eq!(ps.len(), pieces(len));
            assert!(ps.iter().all(|p| p.len() <= PAYLOAD_MAX));
            // Backwards, the first piece sent chosen twice in a row.
            let mut order: Vec<usize> = (0..ps.len()).rev().collect();
            if ps.len() > 1 {
                order.insert(0, ps.len() - 1);
            }
            let mut t = Assemblies::default();
            let got = feed(&mut t, 100, 7, 40, &ps, &order);
            let done: Vec<&Added> = got.iter().filter(|a| matches!(a, Added::Complete(_))).collect();
            assert_eq!(done, vec![&Added::Complete(command.clone())], "length {len}");
            assert_eq!(got.last(), Some(&Added::Complete(command.clone())));
            if ps.len() > 1 {
                assert_eq!(got[1], Added::Repeated);
            }
            // Chosen again after completion, a command completes again:
            // the learner's duplicate filter and the client table keep it
            // from being applied twice.
            assert!(t.is_empty());
        }
        assert_eq!(pieces(COMMAND_MAX), PIECES_MAX);
    }

    #[test]
    fn interleaved_commands_of_two_proposers_stay_apart() {
        let (a, b) = (vec![1u8; 100], vec![2u8; 90]);
        let (pa, pb) = (split(&a), split(&b));
        let mut t = Assemblies::default();
        let mut forget = vec![];
        let mut got = vec![];
        for k in 0..pa.len().max(pb.len()) {
            for (p, ps) in [(1, &pa), (2, &pb)] {
                if let Some(x) = ps.get(k) {
                    got.push(t.add(k as u32, p, 10 + k as u32, Piece::parse(x).unwrap(), &mut forget));
                }
            }
        }
        let done: Vec<Vec<u8>> = got
            .into_iter()
            .filter_map(|x| match x {
                Added::Complete(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(done, vec![b, a], "b has fewer pieces: complete first");
        assert!(t.is_empty() && t.bytes() == 0);
    }

    #[test]
    fn contradictions_and_bounds() {
        let mut forget = vec![];
        let mut t = Assemblies::default();
        // A START claiming 30 bytes, then a piece past its end.
        let ps = split(&[9u8; 30]);
        assert_eq!(t.add(1, 5, 10, Piece::parse(&ps[0]).unwrap(), &mut forget), Added::Pending);
        let mut past = vec![MORE, 0, 0, 2];
        past.extend_from_slice(&[0; 3]);
        assert_eq!(t.add(2, 5, 12, Piece::parse(&past).unwrap(), &mut forget), Added::Malformed);
        assert!(t.is_empty() && t.malformed == 1);
        assert_eq!(forget, vec![(5, 10), (5, 12)]);
        // Pieces that cannot be: a MORE before request 0, bad lengths.
        assert_eq!(t.add(1, 5, 0, Piece::parse(&ps[1]).unwrap(), &mut forget), Added::Malformed);
        assert_eq!(
            Piece::parse(&[START, 0, 0, 0, 30, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
            None,
            "START shorter than its share"
        );
        assert_eq!(Piece::parse(&[START, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None, "past COMMAND_MAX");
        assert_eq!(Piece::parse(&[START, 0, 0, 0, 0, 0, 0, 0]), None, "START without its digest");
        assert_eq!(Piece::parse(&[MORE, 0, 0, 0, 1]), None, "index 0");
        assert_eq!(Piece::parse(&[MORE, 0, 0, 1]), None, "no data");
        assert_eq!(Piece::parse(&[1, 1, b'k']), None, "an old-style command");
        // ASSEMBLIES_MAX: the oldest in the log goes first.
        let mut t = Assemblies::default();
        let open = split(&[1u8; 50]);
        for k in 0..ASSEMBLIES_MAX as u32 + 3 {
            t.add(1000 + k, 9, 100 * k + 1, Piece::parse(&open[0]).unwrap(), &mut forget);
        }
        assert_eq!((t.len(), t.evicted), (ASSEMBLIES_MAX, 3));
        assert!(!t.open.contains_key(&(9, 1)) && t.open.contains_key(&(9, 301)));
    }

    /// Pieces forged under a command's `(proposer, request)`, of the
    /// right length and index, chosen before the real ones (without
    /// `--auth-key` anyone outside the deployment can send them): the
    /// command is never applied with their bytes, in any order; the real
    /// command, resubmitted under new requests, is applied whole.
    #[test]
    fn forged_pieces_never_complete_a_command() {
        let real: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
        let ps = split(&real);
        for forged_index in 0..ps.len() {
            let mut forged = split(&[0xee; 200]);
            if forged_index > 0 {
                // Only the data differs: the real START's digest stands.
                forged[0] = ps[0].clone();
            }
            let mut t = Assemblies::default();
            let mut got = vec![];
            let mut forget = vec![];
            let mut add = |t: &mut Assemblies, k: usize, p: &Vec<u8>| {
                got.push(t.add(k as u32, 3, 50 + k as u32, Piece::parse(p).unwrap(), &mut forget))
            };
            add(&mut t, forged_index, &forged[forged_index]);
            for (k, p) in ps.iter().enumerate() {
                add(&mut t, k, p);
            }
            assert!(!got.iter().any(|a| matches!(a, Added::Complete(_))), "piece {forged_index}: {got:?}");
            let forged_count = got.iter().filter(|a| **a == Added::Forged).count();
            assert_eq!((forged_count, t.forged), (1, 1), "piece {forged_index}: {got:?}");
            // A real piece that came after the command was dropped opens a
            // command that never completes (evicted in time).
            assert!(t.len() <= 1, "piece {forged_index}");
            // Resubmitted as new requests: applied as it was sent.
            let again = feed(&mut t, 500, 3, 900, &ps, &(0..ps.len()).collect::<Vec<_>>());
            assert_eq!(again.last(), Some(&Added::Complete(real.clone())));
        }
    }
}
