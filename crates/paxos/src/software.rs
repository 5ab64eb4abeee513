//! The software baseline (CAANS section 6.3: libpaxos): the coordinator and
//! acceptor programs, unchanged, run as ordinary processes. A
//! [`SoftwareNode`] is an end host that hands each packet to the data-plane
//! program and turns its verdict into a send, so both deployments share one
//! implementation of the protocol and differ only in where it runs.

use innet_core::{DataPlane, Dest, Host, Outbox, Time, Verdict};

#[derive(Clone, Debug)]
pub struct SoftwareNode<P> {
    pub program: P,
}

impl<P: DataPlane> SoftwareNode<P> {
    pub fn new(program: P) -> Self {
        SoftwareNode { program }
    }
}

impl<P: DataPlane> Host for SoftwareNode<P> {
    fn on_packet(&mut self, _now: Time, packet: &[u8], out: &mut Outbox) {
        let mut bytes = packet.to_vec();
        let verdict = self.program.process(&mut bytes);
        debug_assert_eq!(bytes.len(), packet.len(), "a program rewrites its packet in place");
        let dest = match verdict {
            Verdict::Drop => return,
            // A process has no forwarding path: the sender is the origin.
            Verdict::Reflect | Verdict::Origin | Verdict::Downstream { .. } => Dest::Reply,
            Verdict::Upstream { .. } => Dest::Upstream,
            Verdict::Port { port } => Dest::Port(port),
            Verdict::Multicast { group } => Dest::Group(group),
        };
        out.send(dest, bytes);
    }
    fn on_tick(&mut self, _now: Time, _out: &mut Outbox) {}
    fn next_tick(&self) -> Option<Time> {
        None
    }
    fn before_send(&mut self) {
        self.program.before_send()
    }
}
