# Golden vectors for the Paxos header, from the layout (struct "!H I H H H I 32s"),
# independent of the Rust encoder.
import struct, json
def pk(t, inst, rnd, vrnd, acpt, vlen, val, pad=b""):
    return (struct.pack("!HIHHHI32s", t, inst, rnd, vrnd, acpt, vlen, val) + pad).hex()
T = {"PHASE_1A":0,"PHASE_1B":1,"PHASE_2A":2,"PHASE_2B":3,"REQUEST":4,"TRIM":5,"HEARTBEAT":6,"TAKEOVER":7,"CATCHUP":8,"DECIDED":9,"WINDOW":10}
def env(p, r, payload):  # the library's value envelope: proposer u32, request u32, payload
    return struct.pack("!II", p, r) + payload
vs = []
def valid(name, desc, t, inst, rnd, vrnd, acpt, val, pad=b"", vlen=None, raw=None):
    vlen = len(val) if vlen is None else vlen
    body = val.ljust(32, b"\0") if raw is None else raw
    vs.append({"name": name, "description": desc, "hex": pk(T[t], inst, rnd, vrnd, acpt, vlen, body, pad),
               "decoded": {"msgtype": t, "inst": inst, "rnd": rnd, "vrnd": vrnd, "acptid": acpt, "value_len": vlen, "value_hex": body.hex()}})
def bad(name, desc, hexs, err):
    vs.append({"name": name, "description": desc, "hex": hexs, "error": err})
v1 = env(1, 1, b"put k v")
valid("request", "proposer 1's request 1 ('put k v') to the coordinator: inst and rounds zero", "REQUEST", 0, 0, 0, 0, v1)
valid("coordinator_2a", "the coordinator rewrote the request in place into a 2A for instance 5 in round 1 (the pre-initialised round)", "PHASE_2A", 5, 1, 0, 0, v1)
valid("acceptor_2b", "acceptor 2 voted for instance 5 in round 1: vrnd = rnd = 1, acptid 2", "PHASE_2B", 5, 1, 1, 2, v1)
valid("recover_1a", "learner 0 recovering instance 5 with round 272 = epoch 1, issuer 16", "PHASE_1A", 5, 272, 0, 0, b"")
valid("acceptor_1b_voted", "acceptor 1 promises round 272 for instance 5 and reports its vote of round 1", "PHASE_1B", 5, 272, 1, 1, v1)
valid("acceptor_1b_empty", "acceptor 3 promises round 272 for instance 6 and never voted there: vrnd 0, value_len 0", "PHASE_1B", 6, 272, 0, 3, b"")
valid("noop_2a", "recovery's 2A proposing the no-op (proposer id 0) for instance 6", "PHASE_2A", 6, 272, 0, 0, env(0, 0, b""))
valid("trim", "learner 4 has checkpointed every instance below 1024", "TRIM", 1024, 0, 0, 4, b"")
valid("heartbeat", "backup coordinator's heartbeat, sequence 9 in inst", "HEARTBEAT", 9, 0, 0, 0, b"")
valid("takeover", "backup coordinator announces it coordinates with round 258 (epoch 1, issuer 2)", "TAKEOVER", 0, 258, 0, 0, b"")
valid("catchup", "learner 2 asks its peers for instance 77", "CATCHUP", 77, 0, 0, 2, b"")
valid("decided", "a peer learner answers: instance 77 was decided with this value", "DECIDED", 77, 0, 0, 1, env(3, 9, b"abc"))
valid("window", "the coordinator answers learner 1's TRIM: it hands out instance 2048 next", "WINDOW", 2048, 0, 0, 1, b"")
full = bytes(range(0x40, 0x60))
valid("value_full_width", "a 32-byte value (value_len = VALUE_LEN)", "PHASE_2A", 0xFFFFFFFF, 0xFFFF, 0xFFFE, 0xFFFF, full)
valid("trailing_bytes_ignored", "four bytes after the 48-byte header are ignored", "PHASE_2B", 1, 1, 1, 0, v1, pad=b"\xde\xad\xbe\xef")
valid("padding_kept", "value bytes beyond value_len are kept as sent (not interpreted)", "PHASE_2A", 2, 1, 0, 0, b"ab", raw=b"ab" + b"\x11" * 30)
valid("big_endian_fields", "every multi-byte field big-endian: inst 0x01020304, rnd 0x0506, vrnd 0x0708, acptid 0x090a", "PHASE_1B", 0x01020304, 0x0506, 0x0708, 0x090A, b"z")
ok = pk(3, 1, 1, 1, 0, 3, b"abc".ljust(32, b"\0"))
bad("truncated_47", "one byte short of the 48-byte header", ok[:94], "truncated")
bad("empty", "no bytes at all", "", "truncated")
bad("unknown_msgtype_11", "msgtype 11", pk(11, 1, 1, 1, 0, 0, b"\0" * 32), "unknown_msgtype")
bad("unknown_msgtype_high_byte", "msgtype 0x0100 (the high byte counts)", pk(0x100, 1, 1, 1, 0, 0, b"\0" * 32), "unknown_msgtype")
bad("value_len_33", "value_len 33 > VALUE_LEN", pk(2, 1, 1, 0, 0, 33, b"\0" * 32), "value_too_long")
bad("value_len_huge", "value_len 0x80000000", pk(2, 1, 1, 0, 0, 0x80000000, b"\0" * 32), "value_too_long")
json.dump(vs, open(__import__("os").path.join(__import__("os").path.dirname(__file__), "paxos.json"), "w"), indent=1)
print(len(vs))
