//! The far end of the fabric-only benchmarks (`bpf/sink.bpf.c`): `xdp_sink`
//! on an end host's devices counts every frame that arrives and drops it,
//! so frames the in-kernel generator ([`crate::generator`]) injected end
//! where the host's socket would have taken them.
//!
//! The generator's frames are `xdp_frame`s from start to end, which a veth
//! delivers only to a peer running a driver-mode program: a sink always
//! attaches in driver mode, whatever the rest of the fabric runs.

use std::os::fd::RawFd;

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::fabric::{Fabric, XdpMode};
use crate::object::BpfObject;

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sink.bpf.o"));

pub const SINK_PROGRAM: &str = "xdp_sink";
pub const MAP_COUNTERS: &str = "sink_counters";

/// A loaded sink: one count, for every device it is attached to.
pub struct Sink {
    obj: BpfObject,
}

/// The sink's count, readable from any thread (the generator's pacing).
pub struct SinkCount(MapHandle);

impl SinkCount {
    /// Frames the sink has counted so far (summed over CPUs; 0 if the map
    /// cannot be read).
    pub fn get(&self) -> u64 {
        let per_cpu = self.0.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY).ok().flatten().unwrap_or_default();
        per_cpu.iter().map(|v| u64::from_ne_bytes(v[..8].try_into().expect("u64 counter"))).sum()
    }
}

impl Sink {
    pub fn load() -> Result<Sink> {
        Ok(Sink { obj: BpfObject::load(OBJECT, &[])? })
    }

    pub fn program_fd(&self) -> Result<RawFd> {
        self.obj.program_fd(SINK_PROGRAM)
    }

    /// Attaches the sink in driver mode to `devs` of `ns` (threaded NAPI
    /// there if `fabric` has it).
    pub fn attach(&self, fabric: &Fabric, ns: &str, devs: &[&str]) -> Result<()> {
        let native = Fabric { mode: XdpMode::Native, ..*fabric };
        native.attach(self.program_fd()?, ns, devs).with_context(|| format!("attach xdp_sink in {ns}"))?;
        if native.threaded != crate::fabric::ThreadedNapi::Off {
            for d in devs {
                crate::fabric::threaded_napi(ns, d)?;
            }
        }
        Ok(())
    }

    /// A handle on the count.
    pub fn count(&self) -> Result<SinkCount> {
        let m = self.obj.map(MAP_COUNTERS)?;
        Ok(SinkCount(MapHandle::try_from(&m).context("open sink_counters")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_has_one_per_cpu_counter() {
        crate::object::assert_maps(OBJECT, &[(MAP_COUNTERS, Some(1), Some(8))]);
    }
}
