//! Arbitrary bytes, split into packets from arbitrary senders, through every
//! Paxos role: the coordinator and an acceptor (data-plane programs), and the
//! learner, proposer and backup coordinator (hosts), each behind the trust
//! rule its runtime applies (`innet_paxos::trust::check`). Must never panic
//! (the fuzz profile has overflow checks on); a packet the coordinator or the
//! acceptor does not drop must still decode; a packet the trust rule refuses
//! never reaches the role. Timers fire between packets, so retries, takeover
//! and recovery run on whatever state the packets built.
//!
//! Framing: one byte picks the sender's class (and its round issuer), one
//! byte `n` gives the length `n % (PACKET_LEN + 9)`, then the packet.
#![no_main]

use innet_core::{DataPlane, Host, Outbox, Time, Verdict};
use innet_paxos::trust::{self, class, Kind, Sender};
use innet_paxos::{
    Acceptor, AcceptorConfig, BackupConfig, BackupCoordinator, Coordinator, CoordinatorConfig, Learner, LearnerConfig,
    Proposer, ProposerConfig,
};
use innet_wire::paxos::{PaxosMsg, PACKET_LEN};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

const CLASSES: [u8; 6] =
    [class::COORDINATOR, class::BACKUP, class::ACCEPTOR, class::LEARNER, class::PROPOSER, class::OUTSIDE];

fn sender(pick: u8) -> Sender {
    let c = CLASSES[(pick % 6) as usize];
    // A sender's round issuer: mostly its own, sometimes any.
    let issuer = if pick & 0x80 != 0 { pick >> 3 & 0x0f } else { (pick % 6) + 1 };
    // The block of proposer ids it may submit: the outsiders' block, or
    // (sometimes) any block, so ids bound to other senders are tried too.
    let proposer = if pick & 0x40 != 0 { u16::from(pick >> 1 & 0x07) } else { innet_paxos::envelope::OUTSIDE_BLOCK };
    Sender { class: c, issuer, proposer }
}

fn step<H: Host>(h: &mut H, kind: Kind, from: Sender, now: Time, pkt: &[u8], out: &mut Outbox) {
    if trust::check(kind, from, pkt).is_ok() {
        h.on_packet(now, pkt, out);
    }
    while h.next_tick().is_some_and(|t| t <= now) {
        h.on_tick(now, out);
    }
    out.drain().for_each(drop);
}

fn program<D: DataPlane>(d: &mut D, kind: Kind, from: Sender, pkt: &[u8]) {
    if trust::check(kind, from, pkt).is_err() {
        return;
    }
    let mut b = pkt.to_vec();
    if d.process(&mut b) != Verdict::Drop {
        assert!(PaxosMsg::decode(&b).is_ok(), "{kind:?}: a packet it passes on decodes");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, mut rest)) = data.split_first() else { return };
    let quorum = 1 + (shape % 3) as usize;
    let mut coordinator = Coordinator::new(CoordinatorConfig::new(2));
    let mut acceptor = Acceptor::new(AcceptorConfig::new(0, 2));
    let mut learner = Learner::new(LearnerConfig::new(0, quorum));
    let mut config = ProposerConfig::new(1, quorum, Duration::from_millis(1 + (shape >> 2) as u64 % 8));
    // Half the inputs pack several client values into one instance.
    config.pack = if shape & 0x80 != 0 { 1 + (shape >> 4) as usize % 8 } else { 1 };
    let mut proposer = Proposer::new(config);
    let mut backup = BackupCoordinator::new(BackupConfig::new(quorum));
    let mut out = Outbox::new();
    let mut now = Time::ZERO;
    while let [pick, len, tail @ ..] = rest {
        let n = (*len as usize % (PACKET_LEN + 9)).min(tail.len());
        let (pkt, next) = tail.split_at(n);
        rest = next;
        now = now + Duration::from_micros(100 + (*pick as u64) * 37);
        let from = sender(*pick);
        if pick & 0x40 != 0 && proposer.outstanding() < 8 {
            proposer.submit(now, &pkt[..n.min(16)], &mut out);
        }
        program(&mut coordinator, Kind::Coordinator, from, pkt);
        program(&mut acceptor, Kind::Acceptor, from, pkt);
        step(&mut learner, Kind::Learner, from, now, pkt, &mut out);
        learner.take_deliveries();
        if trust::check(Kind::Proposer, from, pkt).is_ok() {
            proposer.on_packet(now, pkt, &mut out);
        }
        while proposer.next_tick().is_some_and(|t| t <= now) {
            proposer.on_tick(now, &mut out);
        }
        proposer.take_committed();
        step(&mut backup, Kind::Backup, from, now, pkt, &mut out);
    }
    // Let every timer run out: takeover, resubmissions, recovery.
    for _ in 0..64 {
        now = now + Duration::from_millis(5);
        for h in [&mut learner as &mut dyn Host, &mut backup] {
            while h.next_tick().is_some_and(|t| t <= now) {
                h.on_tick(now, &mut out);
            }
        }
        while proposer.next_tick().is_some_and(|t| t <= now) {
            proposer.on_tick(now, &mut out);
        }
        out.drain().for_each(drop);
    }
});
