-- Wireshark / tshark dissectors for every innet wire format.
--
--   innet_txn      Gotthard / NOCC transactions (crates/wire/src/txn.rs)
--   innet_paxos    the P4xos-style Paxos header of CAANS (crates/wire/src/paxos.rs)
--   innet_netcraq  NetCRAQ (crates/wire/src/netcraq.rs)
--   innet_netchain NetChain with its address stack (crates/wire/src/netchain.rs)
--   innet_kv       the key-value service's client protocol (crates/wire/src/kv.rs)
--   innet_shim     the origin shim the live runtime puts in front of a
--                  protocol packet between two switch processes
--                  (crates/live/src/switch.rs, ORIGIN_SHIM_MAGIC)
--
-- docs/wire.md is the format reference; this file follows it field by field
-- and checks every packet in the order the Rust decoders do, so that the
-- decode error it names (the field `<proto>.error`, also an expert-info error)
-- is the `DecodeError::name` the Rust decoder gives for the same bytes. The
-- test crates/live/tests/wireshark.rs runs tshark over the golden vectors and
-- compares every field with the Rust decoder's.
--
-- Load it with `tshark -X lua_script:tools/wireshark/innet.lua ...`, or copy
-- it into Wireshark's personal Lua plugins folder (docs/wire.md).
--
-- Registration: each format on its default UDP port, and each by a heuristic
-- for any other port (the live runtime's ephemeral ports on loopback, the
-- XDP Paxos testbed's learner i on 34960 + i and proposers from 35000). The heuristics claim a packet only if it is valid and
-- exactly as long as the format says (the formats' valid lengths do not
-- overlap, so no packet is claimed by two of them); a packet with ignored
-- trailing bytes is decoded on a known port or behind a shim, not by a
-- heuristic. The shim's heuristic claims any payload starting with its magic.
--
-- Every read below is bounds-checked first: malformed or truncated input is
-- shown as far as it goes and marked with an expert-info error, never a Lua
-- error.

-- ---------------------------------------------------------------------------
-- Constants (the Rust names in comments). The test decodes packets built
-- with the Rust constants, so it fails when one of these differs.

local TXN_PORT = 9999               -- txn::DEFAULT_PORT
local TXN_HEADER_LEN = 13           -- txn::HEADER_LEN
local TXN_VALUE_LEN = 16            -- txn::VALUE_LEN
local TXN_OP_LEN = 1 + 4 + TXN_VALUE_LEN -- txn::OP_LEN
local TXN_MAX_OPS = 7               -- txn::MAX_OPS_PER_PACKET

local PAXOS_DATAPLANE_PORT = 0x8889 -- paxos::DATAPLANE_PORT (coordinator, acceptors)
local PAXOS_LEARNER_PORT = 0x8890   -- paxos::LEARNER_PORT
local PAXOS_VALUE_LEN = 32          -- paxos::VALUE_LEN
local PAXOS_PACKET_LEN = 48         -- paxos::PACKET_LEN
local PAXOS_ENVELOPE_HEADER_LEN = 8 -- innet_paxos::envelope::ENVELOPE_HEADER_LEN

local CRAQ_PORT = 9201              -- netcraq::DEFAULT_PORT
local CRAQ_LEN = 21                 -- netcraq::LEN
local CRAQ_VALUE_LEN = TXN_VALUE_LEN -- netcraq::VALUE_LEN (txn's Value)

local NC_PORT = 8888                -- netchain::DEFAULT_PORT (requests; NetChain's P4 reference's NC_PORT)
local NC_REPLY_PORT = 8889          -- netchain::REPLY_PORT (replies; the reference's REPLY_PORT)
local NC_MAX_CHAIN_NODES = 10       -- netchain::MAX_CHAIN_NODES
local NC_ADDR_LEN = 4               -- netchain::ADDR_LEN
local NC_KEY_LEN = 16               -- netchain::KEY_LEN
local NC_FIXED_LEN = 38             -- netchain::FIXED_LEN
local NC_VALUE_LEN = TXN_VALUE_LEN  -- netchain::VALUE_LEN (txn's Value)

local SHIM_MAGIC = "694e6f01"       -- switch::ORIGIN_SHIM_MAGIC, b"iNo\x01"
local SHIM_MAGIC_LEN = 4

-- ---------------------------------------------------------------------------
-- Helpers

-- Does tvb hold `len` bytes at `off`?
local function fits(tvb, off, len)
    return off >= 0 and len >= 0 and off + len <= tvb:len()
end

-- Adds `field` over tvb(off, len) if those bytes are there; returns the item.
local function add_if(tree, field, tvb, off, len)
    if fits(tvb, off, len) then
        return tree:add(field, tvb(off, len))
    end
    return nil
end

-- A value's bytes without trailing NULs, quoted, if they are printable ASCII
-- (as `Value`'s Debug in Rust shows them); nil otherwise.
local function printable(range)
    local s = range:raw()
    s = s:gsub("%z+$", "")
    if s == "" then
        return '""'
    end
    if s:find("[^\32-\126]") then
        return nil
    end
    return '"' .. s .. '"'
end

local function annotate_value(item, range)
    local p = printable(range)
    if p then
        item:append_text(" (" .. p .. ")")
    end
end

-- Bytes after the last meaningful one: decoders ignore them.
local function add_trailing(tree, field, tvb, used)
    if used < tvb:len() then
        tree:add(field, tvb(used, tvb:len() - used))
    end
end

-- Marks a malformed packet: the error name as a generated field, and an
-- expert-info error on the protocol item.
local function mark_malformed(tree, error_field, expert_field, name, detail)
    local item = tree:add(error_field, name)
    item:set_generated()
    tree:add_proto_expert_info(expert_field, "Malformed: " .. name .. " (" .. detail .. ")")
end

local function name_of(table, code)
    return table[code] or ("unknown " .. code)
end

-- Ends a format's dissection: the verdict (the error, or the ignored
-- trailing bytes after the `used` ones) and the Info column.
local function finish(tvb, pinfo, root, fields, malformed, err, detail, used, info)
    if err then
        mark_malformed(root, fields.error, malformed, err, detail)
        info[#info + 1] = "[malformed: " .. err .. "]"
    else
        add_trailing(root, fields.trailing, tvb, used)
    end
    pinfo.cols.info = table.concat(info, " ")
    return tvb:len()
end

-- Registers a format's fields with its protocol, plus the two every format
-- has (`<abbr>.trailing`, `<abbr>.error`), and its malformed-packet expert.
local function declare(proto, abbr, fields, title)
    fields.trailing = ProtoField.bytes(abbr .. ".trailing", "Ignored trailing bytes")
    fields.error = ProtoField.string(abbr .. ".error", "Decode error")
    proto.fields = fields
    local malformed = ProtoExpert.new(abbr .. ".malformed", "Malformed " .. title .. " packet",
        expert.group.MALFORMED, expert.severity.ERROR)
    proto.experts = { malformed }
    return malformed
end

-- ---------------------------------------------------------------------------
-- Gotthard / NOCC transactions

local txn = Proto("innet_txn", "innet Gotthard/NOCC transaction")

local TXN_STATUS = { [0] = "OK", [1] = "ABORT", [2] = "OPTIMISTIC_ABORT", [3] = "BADREQ" }
local TXN_OP_TYPE = { [0] = "NOP", [1] = "READ", [2] = "WRITE", [3] = "VALUE", [4] = "UPDATED", [5] = "CPU_PCT" }

local tf = {
    flags = ProtoField.uint8("innet_txn.flags", "Flags", base.HEX),
    msg_type = ProtoField.uint8("innet_txn.flags.msg_type", "msg_type", base.DEC,
        { [0] = "request", [1] = "response" }, 0x80),
    from_switch = ProtoField.bool("innet_txn.flags.from_switch", "from_switch", 8,
        { "made by a switch", "not made by a switch" }, 0x40),
    reset = ProtoField.bool("innet_txn.flags.reset", "reset", 8,
        { "clear the switch cache first", "no cache reset" }, 0x20),
    store_commit = ProtoField.bool("innet_txn.flags.store_commit", "store_commit", 8,
        { "only the store decides (switch forwards untouched)", "switch may judge" }, 0x10),
    reserved = ProtoField.uint8("innet_txn.flags.reserved", "reserved", base.HEX, nil, 0x0f),
    cl_id = ProtoField.uint32("innet_txn.cl_id", "Client id", base.DEC),
    req_id = ProtoField.int32("innet_txn.req_id", "Request id", base.DEC),
    frag_seq = ProtoField.uint8("innet_txn.frag_seq", "Fragment", base.DEC),
    frag_cnt = ProtoField.uint8("innet_txn.frag_cnt", "Fragments", base.DEC),
    status = ProtoField.uint8("innet_txn.status", "Status", base.DEC, TXN_STATUS),
    op_cnt = ProtoField.uint8("innet_txn.op_cnt", "Op count", base.DEC),
    op = ProtoField.none("innet_txn.op", "Op"),
    op_type = ProtoField.uint8("innet_txn.op.type", "Op type", base.DEC, TXN_OP_TYPE),
    op_key = ProtoField.uint32("innet_txn.op.key", "Key", base.DEC),
    op_value = ProtoField.bytes("innet_txn.op.value", "Value"),
}
local txn_malformed = declare(txn, "innet_txn", tf, "innet transaction")

-- The flags as the Rust `Flags` Debug shows them, e.g. "RES|from_switch".
local function txn_flags_text(flags)
    local parts = { flags >= 0x80 and "RES" or "REQ" }
    local names = { [0x40] = "from_switch", [0x20] = "reset", [0x10] = "store_commit" }
    for _, bit in ipairs({ 0x40, 0x20, 0x10 }) do
        if math.floor(flags / bit) % 2 == 1 then
            parts[#parts + 1] = names[bit]
        end
    end
    if flags % 16 ~= 0 then
        parts[#parts + 1] = string.format("reserved=0x%x", flags % 16)
    end
    return table.concat(parts, "|")
end

-- txn::validate: the first failure in the Rust order, and its detail; or nil
-- and the bytes the packet uses.
local function txn_check(tvb)
    local n = tvb:len()
    if n < TXN_HEADER_LEN then
        return "truncated", n .. " bytes, the header is " .. TXN_HEADER_LEN
    end
    local op_cnt = tvb(12, 1):uint()
    if op_cnt > TXN_MAX_OPS then
        return "too_many_ops", "op_cnt " .. op_cnt .. " > " .. TXN_MAX_OPS
    end
    local need = TXN_HEADER_LEN + op_cnt * TXN_OP_LEN
    if n < need then
        return "ops_beyond_packet", op_cnt .. " ops need " .. need .. " bytes, got " .. n
    end
    local status = tvb(11, 1):uint()
    if TXN_STATUS[status] == nil then
        return "unknown_status", "status " .. status
    end
    local seq, cnt = tvb(9, 1):uint(), tvb(10, 1):uint()
    if cnt > 1 and (seq == 0 or seq > cnt) then
        return "bad_fragment", "fragment " .. seq .. " of " .. cnt
    end
    for i = 0, op_cnt - 1 do
        local t = tvb(TXN_HEADER_LEN + i * TXN_OP_LEN, 1):uint()
        if TXN_OP_TYPE[t] == nil then
            return "unknown_op_type", "op " .. (i + 1) .. " has type " .. t
        end
    end
    return nil, need
end

local function txn_dissect(tvb, pinfo, tree)
    pinfo.cols.protocol = "innet-txn"
    local err, detail = txn_check(tvb)
    local root = tree:add(txn, tvb())
    local flags_item = add_if(root, tf.flags, tvb, 0, 1)
    if flags_item then
        local r = tvb(0, 1)
        flags_item:append_text(" (" .. txn_flags_text(r:uint()) .. ")")
        flags_item:add(tf.msg_type, r)
        flags_item:add(tf.from_switch, r)
        flags_item:add(tf.reset, r)
        flags_item:add(tf.store_commit, r)
        flags_item:add(tf.reserved, r)
    end
    add_if(root, tf.cl_id, tvb, 1, 4)
    add_if(root, tf.req_id, tvb, 5, 4)
    add_if(root, tf.frag_seq, tvb, 9, 1)
    add_if(root, tf.frag_cnt, tvb, 10, 1)
    add_if(root, tf.status, tvb, 11, 1)
    add_if(root, tf.op_cnt, tvb, 12, 1)

    local summary = {}
    if fits(tvb, 0, TXN_HEADER_LEN) then
        local flags = tvb(0, 1):uint()
        local status = tvb(11, 1):uint()
        summary[1] = string.format("%s cl_id=%u req_id=%d %s", txn_flags_text(flags),
            tvb(1, 4):uint(), tvb(5, 4):int(), name_of(TXN_STATUS, status))
        if tvb(10, 1):uint() > 1 then
            summary[#summary + 1] = string.format("frag %u/%u", tvb(9, 1):uint(), tvb(10, 1):uint())
        end
        -- Ops as far as whole ops are there (at most op_cnt, at most the maximum).
        local op_cnt = math.min(tvb(12, 1):uint(), TXN_MAX_OPS)
        for i = 0, op_cnt - 1 do
            local o = TXN_HEADER_LEN + i * TXN_OP_LEN
            if not fits(tvb, o, TXN_OP_LEN) then
                break
            end
            local t = tvb(o, 1):uint()
            local key = tvb(o + 1, 4):uint()
            local op_item = root:add(tf.op, tvb(o, TXN_OP_LEN))
            op_item:set_text(string.format("Op %d: %s key %u", i + 1, name_of(TXN_OP_TYPE, t), key))
            op_item:add(tf.op_type, tvb(o, 1))
            op_item:add(tf.op_key, tvb(o + 1, 4))
            local vr = tvb(o + 5, TXN_VALUE_LEN)
            annotate_value(op_item:add(tf.op_value, vr), vr)
            local p = printable(vr)
            if p then
                op_item:append_text(" value " .. p)
            end
            summary[#summary + 1] = string.format("%s(%u)", name_of(TXN_OP_TYPE, t), key)
        end
    end
    return finish(tvb, pinfo, root, tf, txn_malformed, err, detail, detail, summary)
end

-- ---------------------------------------------------------------------------
-- Paxos (CAANS, P4xos layout)

local paxos = Proto("innet_paxos", "innet Paxos (CAANS, P4xos header)")

local PAXOS_MSGTYPE = {
    [0] = "PHASE_1A", [1] = "PHASE_1B", [2] = "PHASE_2A", [3] = "PHASE_2B", [4] = "REQUEST",
    [5] = "TRIM", [6] = "HEARTBEAT", [7] = "TAKEOVER", [8] = "CATCHUP", [9] = "DECIDED", [10] = "WINDOW",
}

local pf = {
    msgtype = ProtoField.uint16("innet_paxos.msgtype", "Message type", base.DEC, PAXOS_MSGTYPE),
    inst = ProtoField.uint32("innet_paxos.inst", "Instance", base.DEC),
    rnd = ProtoField.uint16("innet_paxos.rnd", "Round", base.DEC),
    rnd_epoch = ProtoField.uint16("innet_paxos.rnd.epoch", "epoch", base.DEC, nil, 0xff00),
    rnd_issuer = ProtoField.uint16("innet_paxos.rnd.issuer", "issuer", base.DEC, nil, 0x00ff),
    vrnd = ProtoField.uint16("innet_paxos.vrnd", "Voted round", base.DEC),
    vrnd_epoch = ProtoField.uint16("innet_paxos.vrnd.epoch", "epoch", base.DEC, nil, 0xff00),
    vrnd_issuer = ProtoField.uint16("innet_paxos.vrnd.issuer", "issuer", base.DEC, nil, 0x00ff),
    acptid = ProtoField.uint16("innet_paxos.acptid", "Acceptor / learner id", base.DEC),
    value_len = ProtoField.uint32("innet_paxos.value_len", "Value length", base.DEC),
    value = ProtoField.bytes("innet_paxos.value", "Value"),
    envelope = ProtoField.none("innet_paxos.envelope", "Value envelope"),
    env_proposer = ProtoField.uint32("innet_paxos.envelope.proposer", "Proposer", base.DEC),
    env_request = ProtoField.uint32("innet_paxos.envelope.request", "Request", base.DEC),
    env_payload = ProtoField.bytes("innet_paxos.envelope.payload", "Payload"),
}
local paxos_malformed = declare(paxos, "innet_paxos", pf, "innet Paxos")

-- paxos::validate.
local function paxos_check(tvb)
    local n = tvb:len()
    if n < PAXOS_PACKET_LEN then
        return "truncated", n .. " bytes, a Paxos packet is " .. PAXOS_PACKET_LEN
    end
    local t = tvb(0, 2):uint()
    if PAXOS_MSGTYPE[t] == nil then
        return "unknown_msgtype", "msgtype " .. t
    end
    local len = tvb(12, 4):uint()
    if len > PAXOS_VALUE_LEN then
        return "value_too_long", "value_len " .. len .. " > " .. PAXOS_VALUE_LEN
    end
    return nil, PAXOS_PACKET_LEN
end

local function add_round(root, field, epoch, issuer, tvb, off)
    local item = add_if(root, field, tvb, off, 2)
    if item then
        item:add(epoch, tvb(off, 2))
        item:add(issuer, tvb(off, 2))
    end
end

local function paxos_dissect(tvb, pinfo, tree)
    pinfo.cols.protocol = "innet-paxos"
    local err, detail = paxos_check(tvb)
    local root = tree:add(paxos, tvb())
    add_if(root, pf.msgtype, tvb, 0, 2)
    add_if(root, pf.inst, tvb, 2, 4)
    add_round(root, pf.rnd, pf.rnd_epoch, pf.rnd_issuer, tvb, 6)
    add_round(root, pf.vrnd, pf.vrnd_epoch, pf.vrnd_issuer, tvb, 8)
    add_if(root, pf.acptid, tvb, 10, 2)
    add_if(root, pf.value_len, tvb, 12, 4)
    local value_item = add_if(root, pf.value, tvb, 16, PAXOS_VALUE_LEN)

    local info = {}
    if fits(tvb, 0, 12) then
        info[1] = string.format("%s inst=%u rnd=%u vrnd=%u acptid=%u", name_of(PAXOS_MSGTYPE, tvb(0, 2):uint()),
            tvb(2, 4):uint(), tvb(6, 2):uint(), tvb(8, 2):uint(), tvb(10, 2):uint())
    end
    -- innet_paxos::envelope::Envelope::from_value: the proposer library's
    -- `proposer u32 | request u32 | payload` in the meaningful bytes, of a
    -- valid packet only (value_len is then at most PAXOS_VALUE_LEN).
    local len = not err and tvb(12, 4):uint() or 0
    if len >= PAXOS_ENVELOPE_HEADER_LEN then
        local env = value_item:add(pf.envelope, tvb(16, len))
        local proposer, request = tvb(16, 4):uint(), tvb(20, 4):uint()
        env:set_text(string.format("Envelope: proposer %u, request %u%s", proposer, request,
            proposer == 0 and " (no-op)" or ""))
        env:add(pf.env_proposer, tvb(16, 4))
        env:add(pf.env_request, tvb(20, 4))
        if len > PAXOS_ENVELOPE_HEADER_LEN then
            local payload = tvb(24, len - PAXOS_ENVELOPE_HEADER_LEN)
            annotate_value(env:add(pf.env_payload, payload), payload)
        end
        info[#info + 1] = string.format("proposer=%u request=%u", proposer, request)
    end
    return finish(tvb, pinfo, root, pf, paxos_malformed, err, detail, detail, info)
end

-- ---------------------------------------------------------------------------
-- NetCRAQ

local craq = Proto("innet_netcraq", "innet NetCRAQ")

local CRAQ_OP = { [1] = "READ", [2] = "READ_REPLY", [3] = "WRITE", [4] = "WRITE_REPLY", [5] = "ACK",
    [6] = "WRITE_REFUSED" }

local cf = {
    kv_op = ProtoField.uint8("innet_netcraq.kv_op", "kv_op", base.DEC, CRAQ_OP),
    key = ProtoField.uint32("innet_netcraq.key", "Key", base.DEC),
    value = ProtoField.bytes("innet_netcraq.value", "Value"),
}
local craq_malformed = declare(craq, "innet_netcraq", cf, "NetCRAQ")

-- netcraq::validate.
local function craq_check(tvb)
    local n = tvb:len()
    if n < CRAQ_LEN then
        return "truncated", n .. " bytes, a NetCRAQ packet is " .. CRAQ_LEN
    end
    local op = tvb(0, 1):uint()
    if CRAQ_OP[op] == nil then
        return "unknown_op", "kv_op " .. op
    end
    return nil, CRAQ_LEN
end

local function craq_dissect(tvb, pinfo, tree)
    pinfo.cols.protocol = "NetCRAQ"
    local err, detail = craq_check(tvb)
    local root = tree:add(craq, tvb())
    add_if(root, cf.kv_op, tvb, 0, 1)
    add_if(root, cf.key, tvb, 1, 4)
    local info = {}
    if fits(tvb, 0, 5) then
        info[1] = string.format("%s key=%u", name_of(CRAQ_OP, tvb(0, 1):uint()), tvb(1, 4):uint())
    end
    if fits(tvb, 5, CRAQ_VALUE_LEN) then
        local vr = tvb(5, CRAQ_VALUE_LEN)
        annotate_value(root:add(cf.value, vr), vr)
        local p = printable(vr)
        if p then
            info[#info + 1] = "value=" .. p
        end
    end
    return finish(tvb, pinfo, root, cf, craq_malformed, err, detail, detail, info)
end

-- ---------------------------------------------------------------------------
-- NetChain

local nc = Proto("innet_netchain", "innet NetChain")

local NC_OP = { [10] = "READ_REQ", [11] = "READ_REPLY", [12] = "WRITE_REQ", [13] = "WRITE_REPLY" }
local NC_WRITE_REPLY = 13

local nf = {
    stack = ProtoField.none("innet_netchain.stack", "Chain stack"),
    addr = ProtoField.ipv4("innet_netchain.addr", "Node address"),
    stack_end = ProtoField.uint32("innet_netchain.stack_end", "End of stack", base.HEX),
    op = ProtoField.uint8("innet_netchain.op", "op", base.DEC, NC_OP),
    sc = ProtoField.uint8("innet_netchain.sc", "Stack count (sc)", base.DEC),
    seq = ProtoField.uint16("innet_netchain.seq", "Sequence", base.DEC),
    key = ProtoField.bytes("innet_netchain.key", "Key"),
    value = ProtoField.bytes("innet_netchain.value", "Value"),
    vgroup = ProtoField.uint16("innet_netchain.vgroup", "Virtual group", base.DEC),
}
local nc_malformed = declare(nc, "innet_netchain", nf, "NetChain")

-- netchain::validate: the error, or nil, the stack's entries (addresses and
-- terminator; 0 for a write reply, which is the fixed part alone) and the
-- bytes used.
local function nc_check(tvb)
    local n = tvb:len()
    if n == NC_FIXED_LEN then
        local op = tvb(0, 1):uint()
        if NC_OP[op] == nil then
            return "unknown_op", "op " .. op
        end
        local sc = tvb(1, 1):uint()
        if op ~= NC_WRITE_REPLY or sc ~= 0 then
            return "chain_count_mismatch", "38 bytes without a stack: only a write reply with sc 0 (op " .. op
                .. ", sc " .. sc .. ")"
        end
        return nil, 0, NC_FIXED_LEN
    end
    local depth = nil
    for i = 0, NC_MAX_CHAIN_NODES do
        if n < (i + 1) * NC_ADDR_LEN then
            return "truncated", "the bytes end inside the address stack"
        end
        if tvb(i * NC_ADDR_LEN, NC_ADDR_LEN):uint() == 0 then
            depth = i
            break
        end
    end
    if depth == nil then
        return "chain_too_long", "no terminator within " .. (NC_MAX_CHAIN_NODES + 1) .. " addresses"
    end
    local fixed = (depth + 1) * NC_ADDR_LEN
    if n < fixed + NC_FIXED_LEN then
        return "truncated", "the bytes end inside the fixed part"
    end
    local op = tvb(fixed, 1):uint()
    if NC_OP[op] == nil then
        return "unknown_op", "op " .. op
    end
    if op == NC_WRITE_REPLY then
        return "chain_count_mismatch", "a write reply carries no stack"
    end
    local sc = tvb(fixed + 1, 1):uint()
    if sc ~= depth + 1 then
        return "chain_count_mismatch", "sc " .. sc .. ", the stack holds " .. depth .. " addresses and the terminator"
    end
    return nil, depth + 1, fixed + NC_FIXED_LEN
end

-- The key an application names by number (netchain::key_from_u32): a
-- 128-bit big-endian integer below 2^32.
local function nc_key_number(range)
    if range:raw(0, NC_KEY_LEN - 4) == string.rep("\0", NC_KEY_LEN - 4) then
        return range(NC_KEY_LEN - 4, 4):uint()
    end
    return nil
end

local function nc_dissect(tvb, pinfo, tree)
    pinfo.cols.protocol = "NetChain"
    local err, detail, used = nc_check(tvb)
    local root = tree:add(nc, tvb())
    local info = {}

    -- The stack: addresses up to the terminator, at most MAX_CHAIN_NODES + 1
    -- words; none in a packet of exactly the fixed part (a write reply).
    local stackless = tvb:len() == NC_FIXED_LEN
    local words = 0
    local terminated = stackless
    while not stackless and words <= NC_MAX_CHAIN_NODES and fits(tvb, words * NC_ADDR_LEN, NC_ADDR_LEN) do
        local is_end = tvb(words * NC_ADDR_LEN, NC_ADDR_LEN):uint() == 0
        words = words + 1
        if is_end then
            terminated = true
            break
        end
    end
    local depth = (terminated and not stackless) and words - 1 or words
    local hops = {}
    if not stackless then
        local stack = root:add(nf.stack, tvb(0, words * NC_ADDR_LEN))
        stack:set_text(string.format("Chain stack: %d address%s, next first%s", depth, depth == 1 and "" or "es",
            terminated and "" or " (no terminator)"))
        for i = 0, depth - 1 do
            local item = stack:add(nf.addr, tvb(i * NC_ADDR_LEN, NC_ADDR_LEN))
            item:prepend_text("S" .. i .. ": ")
            hops[#hops + 1] = tostring(tvb(i * NC_ADDR_LEN, NC_ADDR_LEN):ipv4())
        end
        if terminated then
            stack:add(nf.stack_end, tvb(depth * NC_ADDR_LEN, NC_ADDR_LEN))
        end
    end

    if terminated then
        local f = words * NC_ADDR_LEN
        add_if(root, nf.op, tvb, f, 1)
        add_if(root, nf.sc, tvb, f + 1, 1)
        add_if(root, nf.seq, tvb, f + 2, 2)
        if fits(tvb, f + 4, NC_KEY_LEN) then
            local kr = tvb(f + 4, NC_KEY_LEN)
            local key_item = root:add(nf.key, kr)
            local k = nc_key_number(kr)
            if k then
                key_item:append_text(" (object " .. k .. ")")
            end
        end
        if fits(tvb, f + 20, NC_VALUE_LEN) then
            local vr = tvb(f + 20, NC_VALUE_LEN)
            annotate_value(root:add(nf.value, vr), vr)
        end
        add_if(root, nf.vgroup, tvb, f + 36, 2)
        if fits(tvb, f, 4) then
            info[1] = string.format("%s seq=%u", name_of(NC_OP, tvb(f, 1):uint()), tvb(f + 2, 2):uint())
        end
    end
    info[#info + 1] = stackless and "no stack" or "chain [" .. table.concat(hops, " ") .. "]"
    return finish(tvb, pinfo, root, nf, nc_malformed, err, detail, used, info)
end

-- ---------------------------------------------------------------------------
-- Telling the formats apart by content

-- Each format: its checker, its dissector, and the byte count a valid packet
-- has (the formats' lengths do not overlap: txn 13 + 21k, NetCRAQ 21, Paxos
-- 48, NetChain 38 or 42 + 4k).
local FORMATS = {
    { name = "txn", check = txn_check, dissect = txn_dissect,
        used = function(tvb) return select(2, txn_check(tvb)) end },
    { name = "paxos", check = paxos_check, dissect = paxos_dissect,
        used = function(tvb) return select(2, paxos_check(tvb)) end },
    { name = "netcraq", check = craq_check, dissect = craq_dissect,
        used = function(tvb) return select(2, craq_check(tvb)) end },
    { name = "netchain", check = nc_check, dissect = nc_dissect,
        used = function(tvb) return select(3, nc_check(tvb)) end },
}
local FORMAT_BY_NAME = {}
for _, f in ipairs(FORMATS) do
    FORMAT_BY_NAME[f.name] = f
end

-- Valid and exactly as long as the format says.
local function exact(format, tvb)
    return format.check(tvb) == nil and format.used(tvb) == tvb:len()
end

-- The format of a shim's payload: the one it is an exact packet of, else
-- the UDP port's format if the port is a known one (a payload with ignored
-- trailing bytes, or a malformed one, is then shown as that format). nil if
-- neither: guessing from a partial match would mislabel malformed packets.
local function classify_payload(tvb, port_format)
    for _, f in ipairs(FORMATS) do
        if exact(f, tvb) then
            return f
        end
    end
    return port_format
end

-- ---------------------------------------------------------------------------
-- The origin shim between switch processes

local shim = Proto("innet_shim", "innet origin shim")

local sf = {
    magic = ProtoField.bytes("innet_shim.magic", "Magic"),
    family = ProtoField.uint8("innet_shim.family", "Address family", base.DEC, { [4] = "IPv4", [6] = "IPv6" }),
    origin_ipv4 = ProtoField.ipv4("innet_shim.origin_ipv4", "Origin address"),
    origin_ipv6 = ProtoField.ipv6("innet_shim.origin_ipv6", "Origin address"),
    origin_port = ProtoField.uint16("innet_shim.origin_port", "Origin port", base.DEC),
    payload = ProtoField.bytes("innet_shim.payload", "Unrecognised payload"),
    error = ProtoField.string("innet_shim.error", "Decode error"),
}
shim.fields = sf
local shim_malformed = ProtoExpert.new("innet_shim.malformed", "Malformed innet origin shim",
    expert.group.MALFORMED, expert.severity.ERROR)
local shim_unknown_payload = ProtoExpert.new("innet_shim.unknown_payload",
    "The shim's payload is no valid packet of any innet format", expert.group.MALFORMED, expert.severity.ERROR)
shim.experts = { shim_malformed, shim_unknown_payload }

local function has_shim_magic(tvb)
    return fits(tvb, 0, SHIM_MAGIC_LEN) and tostring(tvb(0, SHIM_MAGIC_LEN):bytes()):lower() == SHIM_MAGIC
end

-- switch::split_origin_shim: the error, or nil, the family and the shim's length.
local function shim_check(tvb)
    if not has_shim_magic(tvb) then
        return "bad_magic", "the shim starts with 69 4e 6f 01"
    end
    if not fits(tvb, SHIM_MAGIC_LEN, 1) then
        return "truncated", "no address family"
    end
    local family = tvb(SHIM_MAGIC_LEN, 1):uint()
    local addr_len = ({ [4] = 4, [6] = 16 })[family]
    if addr_len == nil then
        return "unknown_family", "family " .. family .. ", expected 4 or 6"
    end
    local len = SHIM_MAGIC_LEN + 1 + addr_len + 2
    if not fits(tvb, 0, len) then
        return "truncated", "the origin ends after " .. tvb:len() .. " of " .. len .. " bytes"
    end
    return nil, family, len
end

local function shim_dissect(tvb, pinfo, tree, port_format)
    pinfo.cols.protocol = "innet-shim"
    local err, detail, len = shim_check(tvb)
    local root = tree:add(shim, tvb(0, len or tvb:len()))
    add_if(root, sf.magic, tvb, 0, SHIM_MAGIC_LEN)
    add_if(root, sf.family, tvb, SHIM_MAGIC_LEN, 1)
    if err then
        mark_malformed(root, sf.error, shim_malformed, err, detail)
        pinfo.cols.info = "origin shim [malformed: " .. err .. "]"
        return tvb:len()
    end
    local origin
    if detail == 4 then
        root:add(sf.origin_ipv4, tvb(5, 4))
        origin = tostring(tvb(5, 4):ipv4())
    else
        root:add(sf.origin_ipv6, tvb(5, 16))
        origin = "[" .. tostring(tvb(5, 16):ipv6()) .. "]"
    end
    root:add(sf.origin_port, tvb(len - 2, 2))
    origin = origin .. ":" .. tvb(len - 2, 2):uint()
    root:append_text(", origin " .. origin)

    local sub = nil
    if len < tvb:len() then
        local payload = tvb(len):tvb()
        local f = classify_payload(payload, port_format)
        if f then
            f.dissect(payload, pinfo, tree)
            sub = f
        else
            root:add(sf.payload, tvb(len))
        end
    end
    if sub == nil then
        root:add_proto_expert_info(shim_unknown_payload,
            "The shim's payload is no valid packet of any innet format (" .. (tvb:len() - len) .. " bytes)")
        pinfo.cols.protocol = "innet-shim"
        pinfo.cols.info = ""
    end
    pinfo.cols.info:prepend("[origin " .. origin .. "] ")
    return tvb:len()
end

shim.dissector = function(tvb, pinfo, tree)
    return shim_dissect(tvb, pinfo, tree, nil)
end

-- ---------------------------------------------------------------------------
-- Registration

-- On a known port a packet is that port's format, unless it carries a shim.
local function on_port(format)
    return function(tvb, pinfo, tree)
        if has_shim_magic(tvb) then
            return shim_dissect(tvb, pinfo, tree, format)
        end
        return format.dissect(tvb, pinfo, tree)
    end
end

txn.dissector = on_port(FORMAT_BY_NAME.txn)
paxos.dissector = on_port(FORMAT_BY_NAME.paxos)
craq.dissector = on_port(FORMAT_BY_NAME.netcraq)
nc.dissector = on_port(FORMAT_BY_NAME.netchain)

local udp_port = DissectorTable.get("udp.port")
udp_port:add(TXN_PORT, txn)
udp_port:add(PAXOS_DATAPLANE_PORT, paxos)
udp_port:add(PAXOS_LEARNER_PORT, paxos)
udp_port:add(CRAQ_PORT, craq)
udp_port:add(NC_PORT, nc)
udp_port:add(NC_REPLY_PORT, nc)

local function heuristic(format)
    return function(tvb, pinfo, tree)
        if not exact(format, tvb) then
            return false
        end
        format.dissect(tvb, pinfo, tree)
        return true
    end
end

txn:register_heuristic("udp", heuristic(FORMAT_BY_NAME.txn))
paxos:register_heuristic("udp", heuristic(FORMAT_BY_NAME.paxos))
craq:register_heuristic("udp", heuristic(FORMAT_BY_NAME.netcraq))
nc:register_heuristic("udp", heuristic(FORMAT_BY_NAME.netchain))
shim:register_heuristic("udp", function(tvb, pinfo, tree)
    if not has_shim_magic(tvb) then
        return false
    end
    shim_dissect(tvb, pinfo, tree, nil)
    return true
end)

-- ---------------------------------------------------------------------------
-- The key-value service's client protocol (innet_wire::kv; docs/paxos.md).
-- No default port (replicas' client ports are chosen): claimed by a
-- heuristic when valid and exactly as long as its header says.

local KV_MAGIC = 0x4b56             -- kv::MAGIC, "KV"
local KV_VERSION = 1                -- kv::VERSION
local KV_HEADER_LEN = 24            -- kv::HEADER_LEN
local KV_KEY_MAX = 1024             -- kv::KEY_MAX
local KV_VALUE_MAX = 1048576        -- kv::VALUE_MAX
local KV_BODY_MAX = 1 + 2 + KV_KEY_MAX + 1 + 4 + 2 * KV_VALUE_MAX -- kv::BODY_MAX

local kvp = Proto("innet_kv", "innet key-value service client protocol")

local KV_KIND = { [1] = "REQUEST", [2] = "REPLY" }
local KV_OP = { [1] = "PUT", [2] = "DELETE", [3] = "GET", [4] = "CAS" }
local KV_STATUS = { [0] = "OK", [1] = "VALUE", [2] = "NOT_FOUND", [3] = "CAS_FAILED", [4] = "TOO_LARGE",
    [5] = "EXPIRED", [6] = "BUSY", [7] = "INVALID" }

local kf = {
    magic = ProtoField.uint16("innet_kv.magic", "Magic", base.HEX),
    version = ProtoField.uint8("innet_kv.version", "Version", base.DEC),
    kind = ProtoField.uint8("innet_kv.kind", "Kind", base.DEC, KV_KIND),
    client = ProtoField.uint64("innet_kv.client", "Client", base.DEC),
    seq = ProtoField.uint64("innet_kv.seq", "Sequence number", base.DEC),
    body_len = ProtoField.uint32("innet_kv.body_len", "Body length", base.DEC),
    op = ProtoField.uint8("innet_kv.op", "Operation", base.DEC, KV_OP),
    key_len = ProtoField.uint16("innet_kv.key_len", "Key length", base.DEC),
    key = ProtoField.bytes("innet_kv.key", "Key"),
    expected_present = ProtoField.uint8("innet_kv.expected_present", "Expected present", base.DEC),
    expected_len = ProtoField.uint32("innet_kv.expected_len", "Expected length", base.DEC),
    expected = ProtoField.bytes("innet_kv.expected", "Expected value"),
    value = ProtoField.bytes("innet_kv.value", "Value"),
    status = ProtoField.uint8("innet_kv.status", "Status", base.DEC, KV_STATUS),
    value_len = ProtoField.uint32("innet_kv.value_len", "Value length (TOO_LARGE)", base.DEC),
}
local kv_malformed = declare(kvp, "innet_kv", kf, "innet key-value")

-- kv::Message::decode, in its order: the error name and detail, or nil.
local function kv_check(tvb)
    local n = tvb:len()
    if n < KV_HEADER_LEN then
        return "truncated", n .. " bytes, the header is " .. KV_HEADER_LEN
    end
    if tvb(0, 2):uint() ~= KV_MAGIC then
        return "bad_magic", "magic is not \"KV\""
    end
    if tvb(2, 1):uint() ~= KV_VERSION then
        return "bad_version", "version " .. tvb(2, 1):uint()
    end
    local kind = tvb(3, 1):uint()
    if KV_KIND[kind] == nil then
        return "unknown_kind", "kind " .. kind
    end
    local body_len = tvb(20, 4):uint()
    if body_len > KV_BODY_MAX then
        return "bad_body_len", "body_len " .. body_len .. " > " .. KV_BODY_MAX
    end
    local rest = n - KV_HEADER_LEN
    if rest < body_len then
        return "truncated", rest .. " body bytes of " .. body_len
    elseif rest > body_len then
        return "bad_body_len", rest .. " body bytes, body_len " .. body_len
    end
    local at, stop = KV_HEADER_LEN, n
    if kind == 2 then
        local st = tvb(at, 1)
        if body_len < 1 then return "truncated", "no status" end
        st = st:uint()
        if KV_STATUS[st] == nil then return "unknown_status", "status " .. st end
        local want = (st == 4) and 5 or nil
        if st == 1 then
            if body_len - 1 > KV_VALUE_MAX then return "value_too_long", "value of " .. (body_len - 1) end
            return nil
        end
        if want and body_len < want then return "truncated", "no value length" end
        if body_len > (want or 1) then return "malformed", "bytes after the status" end
        return nil
    end
    if body_len < 1 then return "truncated", "no operation" end
    local op = tvb(at, 1):uint()
    if stop - at < 3 then return "truncated", "no key length" end
    local klen = tvb(at + 1, 2):uint()
    if klen > KV_KEY_MAX then return "key_too_long", "key_len " .. klen end
    at = at + 3
    if stop - at < klen then return "truncated", "the key ends past the body" end
    at = at + klen
    if KV_OP[op] == nil then return "unknown_op", "op " .. op end
    if op == 1 then
        if stop - at > KV_VALUE_MAX then return "value_too_long", "value of " .. (stop - at) end
    elseif op == 4 then
        if stop - at < 5 then return "truncated", "no expected value" end
        local present, elen = tvb(at, 1):uint(), tvb(at + 1, 4):uint()
        at = at + 5
        if not (present == 1 or (present == 0 and elen == 0)) then
            return "malformed", "expected_present " .. present .. " with length " .. elen
        end
        if elen > KV_VALUE_MAX then return "value_too_long", "expected of " .. elen end
        if stop - at < elen then return "truncated", "the expected value ends past the body" end
        at = at + elen
        if stop - at > KV_VALUE_MAX then return "value_too_long", "value of " .. (stop - at) end
    elseif at < stop then
        return "malformed", "bytes after a " .. KV_OP[op]
    end
    return nil
end

local function kv_dissect(tvb, pinfo, tree)
    pinfo.cols.protocol = "innet-kv"
    local err, detail = kv_check(tvb)
    local root = tree:add(kvp, tvb())
    add_if(root, kf.magic, tvb, 0, 2)
    add_if(root, kf.version, tvb, 2, 1)
    add_if(root, kf.kind, tvb, 3, 1)
    add_if(root, kf.client, tvb, 4, 8)
    add_if(root, kf.seq, tvb, 12, 8)
    add_if(root, kf.body_len, tvb, 20, 4)
    local info = {}
    if fits(tvb, 0, KV_HEADER_LEN) then
        info[1] = string.format("%s client=%s seq=%s", name_of(KV_KIND, tvb(3, 1):uint()),
            tostring(tvb(4, 8):uint64()), tostring(tvb(12, 8):uint64()))
    end
    if not err then
        local n, at = tvb:len(), KV_HEADER_LEN
        if tvb(3, 1):uint() == 2 then
            local st = tvb(at, 1):uint()
            root:add(kf.status, tvb(at, 1))
            info[#info + 1] = name_of(KV_STATUS, st)
            if st == 1 and n > at + 1 then
                annotate_value(root:add(kf.value, tvb(at + 1)), tvb(at + 1))
            elseif st == 4 then
                root:add(kf.value_len, tvb(at + 1, 4))
            end
        else
            local op, klen = tvb(at, 1):uint(), tvb(at + 1, 2):uint()
            root:add(kf.op, tvb(at, 1))
            root:add(kf.key_len, tvb(at + 1, 2))
            at = at + 3
            info[#info + 1] = name_of(KV_OP, op)
            if klen > 0 then
                annotate_value(root:add(kf.key, tvb(at, klen)), tvb(at, klen))
                local p = printable(tvb(at, klen))
                if p then info[#info + 1] = "key=" .. p end
            end
            at = at + klen
            if op == 4 then
                root:add(kf.expected_present, tvb(at, 1))
                root:add(kf.expected_len, tvb(at + 1, 4))
                local elen = tvb(at + 1, 4):uint()
                at = at + 5
                if elen > 0 then root:add(kf.expected, tvb(at, elen)) end
                at = at + elen
            end
            if (op == 1 or op == 4) and at < n then
                annotate_value(root:add(kf.value, tvb(at)), tvb(at))
            end
        end
    end
    return finish(tvb, pinfo, root, kf, kv_malformed, err, detail, tvb:len(), info)
end

kvp.dissector = kv_dissect
kvp:register_heuristic("udp", function(tvb, pinfo, tree)
    if not fits(tvb, 0, 3) or tvb(0, 2):uint() ~= KV_MAGIC or tvb(2, 1):uint() ~= KV_VERSION
        or kv_check(tvb) ~= nil then
        return false
    end
    kv_dissect(tvb, pinfo, tree)
    return true
end)
