-- SPDX-License-Identifier: MIT
--
-- Wireshark dissector for Weft frames (docs/debugging.md, "Reading captures").
--
-- weft-switch writes pcap files of link type LINKTYPE_USER0 (147): each
-- record is one packet, a struct weft_wire_hdr and its payload
-- (include/weft/wire.h).  This file decodes every packet type of
-- include/weft/wire.h, of the verbs engine (include/weft/verbs.h:
-- struct weft_vhdr, struct weft_vaddr), of header matching
-- (include/weft/match.h: struct weft_match_whdr) and of the counter engine
-- (include/weft/cnt.h: struct weft_cnt_hdr), and hands the Ethernet frames that
-- weftN carries in FIFO packets (include/weft/net.h) to Wireshark's own
-- Ethernet dissector, hence to IP, ARP, TCP...
--
--   tshark -X lua_script:scripts/wireshark/weft.lua -r capture.pcap
--   scripts/weft-wireshark --install    (copies it to the personal plugins)
--
-- Field names are those of the C structures: weft.<wire header field>,
-- weft.vhdr.<field>, weft.vaddr.<field>, weft.net.<field>,
-- weft.match.<field>, weft.cnt.<field>.  A frame that is
-- shorter than its header, whose length disagrees with the record, or
-- whose body is too short for its type is marked with the expert item
-- weft.malformed; nothing in a frame can make this script throw.
--
-- The layouts below are tables of { name, offset, size [, names [, base]] };
-- tests/wireshark/ checks every offset and size against the C headers, so
-- a change of the wire format fails the test until this file follows.
-- A new packet type is one entry of PKT_TYPES (its name and which body
-- decoder reads its payload).

local weft = Proto("weft", "Weft fabric")

-- ---- names -------------------------------------------------------------------
-- enum weft_reason (WEFT_REASON_LIST of include/weft/counters.h), in order
-- from 0.  tests/wireshark/ compares this list with the C one, so a reason
-- added there fails the test until it is added here.
local REASONS = {
	"OK", "BAD_HEADER", "BAD_TYPE", "NOT_FOR_US", "WINDOW_INVALID", "KEY_MISMATCH",
	"FIFO_FULL", "RCXT_INVALID", "RCXT_FOREIGN", "RCXT_KEY", "TID_STALE", "RCXT_BUSY",
	"TCE_TABLE", "TCE_OWNER", "TCE_BOUNDS", "TCE_KEY", "DMA_ERROR", "LENGTH",
	"BCAST_DISABLED", "NO_LINK", "RX_QUEUE_FULL", "CANCELLED", "WINDOW_CLOSED", "RESET",
	"DUPLICATE", "COND_BUSY", "ADAPTER_FATAL", "QP_INVALID", "QP_STATE", "QP_TYPE",
	"PSN_DUP", "PSN_OOS", "PSN_WINDOW", "QKEY", "STAG_INDEX", "STAG_INSTANCE",
	"STAG_INVALID", "PD_MISMATCH", "STAG_TYPE", "BOUNDS", "ACCESS", "BIND_DISABLED",
	"ONE_TOUCH", "ATT", "RNR", "MSN", "RRQ_FULL", "TERMINATED", "RETRY_EXCEEDED",
	"RNR_EXCEEDED", "FLUSHED", "BAD_WQE", "CQ_INVALID", "CQ_OVERFLOW", "UAR_MISMATCH",
	"INV_REFUSED", "ALIGN", "STAG_BUSY", "INSTANCE_REUSED", "GID_INVALID", "GID_TYPE",
	"DGID_UNKNOWN", "SRQ_INVALID",
	"MATCH_QUEUE", "MATCH_STOPPED", "MATCH_STORE_FULL", "MATCH_NO_BUFFER", "MATCH_TOO_SMALL",
	"MATCH_BAD_OP", "MATCH_STALE_POST", "MATCH_NOT_FOUND", "MATCH_BUSY", "MATCH_RNDV_SLOT",
	"MATCH_CLAIMED", "MATCH_ZERO_WORD", "MATCH_CQ", "MATCH_MODE",
	"CNT_OBJ_INVALID", "CNT_OBJ_STALE", "CNT_OP_MISMATCH", "CNT_OUTSIDE", "CNT_NOT_EXPOSED",
	"CNT_RIGHTS", "CNT_DUP", "CNT_TIMEOUT",
	"TM_BAD_OP", "TM_HANDLE", "TM_TAGS_FULL", "TM_TAG_GONE", "TM_SYNC_AHEAD", "TM_BAD_TMH",
	"TM_NO_QUEUE", "TM_QUEUE_LENT", "TM_RNDV_HDR", "TM_RVH_LEN", "TM_RVH_SHORT", "TM_RNDV_BUSY",
	"MATCH_DUP", "MATCH_SEQ", "MATCH_BAD_ACK", "MATCH_NO_ROOM", "MATCH_PEER_DEAD", "MATCH_PEERS",
	"HQ_QUEUE", "HQ_BUF", "HQ_SHORT", "CNT_SLOT", "CNT_MODE", "WAIT_SLOT", "WAIT_GONE",
	"CQ_MODERATION",
}
local REASON_NAMES = {}
for i, n in ipairs(REASONS) do REASON_NAMES[i - 1] = n end

-- enum weft_sw_status
local SW_STATUS = { [0] = "OK", [1] = "NODE_IN_USE", [2] = "BAD_NODE", [3] = "BAD_HELLO",
	[4] = "AUTH_FAILED" }
-- WEFT_NOTIFY_*
local NOTIFY = { [0] = "NONE", [1] = "SOURCE", [2] = "TARGET", [3] = "BOTH" }
-- enum weft_vop
local VOPS = { [1] = "SEND", [2] = "WRITE", [3] = "READ_REQ", [4] = "READ_RESP", [5] = "CAS",
	[6] = "FAA", [7] = "ATOMIC_RESP", [8] = "ACK", [9] = "TERMINATE", [10] = "UD_SEND" }
-- enum weft_vack
local VACK = { [0] = "ACK", [1] = "NAK_SEQ", [2] = "NAK_RNR" }
-- enum weft_net_type
local NET_TYPES = { [1] = "FRAME", [2] = "FRAG", [3] = "ANNOUNCE" }
-- enum weft_match_wop (include/weft/match.h)
local MWOPS = { [1] = "EAGER", [2] = "RNDV_REQ", [3] = "RNDV_ACK", [4] = "DATA", [5] = "PULL",
	[6] = "FIN", [7] = "CTS", [8] = "NAK", [9] = "ACK" }
-- WEFT_MACK_*: the status of a RNDV_ACK
local MACK = { [1] = "MATCHED", [2] = "PENDING", [3] = "NOT_FOUND" }
-- enum weft_cnt_dir (include/weft/cnt.h)
local CNT_DIRS = { [1] = "READ", [2] = "WRITE" }

-- ---- constants (include/weft/wire.h, verbs.h, net.h, match.h, cnt.h) ---------
local WIRE_VERSION = 1
local WIRE_HDR_SIZE = 104
local MAX_PAYLOAD = 1920
local WIRE_MAX_PAYLOAD = 4200
local HELLO_MAGIC = 0x57465357
local TOKEN_SIZE = 32
local VHDR_SIZE = 64
local VADDR_SIZE = 40
local VERBS_MTU = 4096
local NET_KEY = 0x4e455449
local NET_VERSION = 1
local NET_HDR_SIZE = 28
local NODE_MCAST_BASE = 0xF000
local NR_MCAST_GROUPS = 256
local NODE_BROADCAST = 0xFFFF
local VOP_ACK = 8
local VOP_TERMINATE = 9
local VOP_UD_SEND = 10
local NET_FRAME = 1
local NET_FRAG = 2
local MWHDR_SIZE = 48
local MATCH_EAGER_MAX = 1872
local MWOP_EAGER = 1
local MWOP_RNDV_ACK = 3
local MWOP_DATA = 4
local MWOP_NAK = 8
local CNT_HDR_SIZE = 64
local CNT_CHUNK = 1024
local PKT_CNT_DATA = 0x13
local PKT_CNT_ERROR = 0x15

-- ---- layouts: { name, offset, size [, names [, base]] } -----------------------
-- struct weft_wire_hdr
local WIRE_HDR = {
	{ "version", 0, 1 },
	{ "type", 1, 1 },               -- names: PKT_TYPES below
	{ "notify", 2, 1, NOTIFY },
	{ "flags", 3, 1, nil, base.HEX },
	{ "dst_node", 4, 2 },
	{ "src_node", 6, 2 },
	{ "dst_window", 8, 2 },
	{ "src_window", 10, 2 },
	{ "key", 12, 4, nil, base.HEX },
	{ "length", 16, 4 },
	{ "rcxt", 20, 4 },
	{ "src_rcxt", 24, 4 },
	{ "rcxt_key", 28, 2, nil, base.HEX },
	{ "src_rcxt_key", 30, 2, nil, base.HEX },
	{ "tid", 32, 4 },
	{ "reserved0", 36, 4, nil, base.HEX },
	{ "pvo", 40, 8, nil, base.HEX },
	{ "aux_pvo", 48, 8, nil, base.HEX },
	{ "total_length", 56, 8 },
	{ "offset", 64, 8 },
	{ "protocol_cookie", 72, 8, nil, base.HEX },
	{ "user_cookie", 80, 8, nil, base.HEX },
	{ "ctl_node", 88, 2 },
	{ "ctl_window", 90, 2 },
	{ "ctl_rcxt", 92, 4 },
	{ "ctl_rcxt_key", 96, 2, nil, base.HEX },
	{ "status", 98, 2 },            -- names by type: see status_name()
	{ "reserved1", 100, 4, nil, base.HEX },
}
-- WEFT_WF_*
local WIRE_FLAGS = { { "read_resp", 0x01 }, { "last", 0x02 }, { "half", 0x04 },
	{ "replayed", 0x80 } }

-- struct weft_vhdr
local VHDR = {
	{ "opcode", 0, 1, VOPS },
	{ "flags", 1, 1, nil, base.HEX },
	{ "reserved0", 2, 2, nil, base.HEX },
	{ "dst_qpn", 4, 4 },
	{ "src_qpn", 8, 4 },
	{ "psn", 12, 4 },
	{ "msn", 16, 4 },
	{ "imm_inv", 20, 4, nil, base.HEX },
	{ "va", 24, 8, nil, base.HEX },
	{ "rkey", 32, 4, nil, base.HEX },
	{ "dma_len", 36, 4 },
	{ "swap_add", 40, 8, nil, base.HEX },
	{ "compare", 48, 8, nil, base.HEX },
	{ "syndrome", 56, 4 },          -- names by opcode: see syndrome_name()
	{ "qkey", 60, 4, nil, base.HEX },
}
-- WEFT_VF_*
local VHDR_FLAGS = { { "first", 0x01 }, { "last", 0x02 }, { "se", 0x04 }, { "ackreq", 0x08 },
	{ "imm", 0x10 }, { "inv", 0x20 } }

-- struct weft_vaddr
local VADDR = {
	{ "sgid", 0, 16, "gid" },
	{ "dgid", 16, 16, "gid" },
	{ "flow_label", 32, 4, nil, base.HEX },
	{ "traffic_class", 36, 1 },
	{ "hop_limit", 37, 1 },
	{ "reserved", 38, 2, nil, base.HEX },
}

-- struct weft_net_hdr
local NET_HDR = {
	{ "version", 0, 1 },
	{ "type", 1, 1, NET_TYPES },
	{ "flags", 2, 1, nil, base.HEX },
	{ "reserved", 3, 1 },
	{ "frag_index", 4, 2 },
	{ "frag_count", 6, 2 },
	{ "src_epoch", 8, 4, nil, base.HEX },
	{ "dst_epoch", 12, 4, nil, base.HEX },
	{ "seq", 16, 4 },
	{ "total_len", 20, 4 },
	{ "csum_start", 24, 2 },
	{ "csum_offset", 26, 2 },
}
-- WEFT_NET_F_*
local NET_FLAGS = { { "reply", 0x01 }, { "csum", 0x02 } }

-- struct weft_match_whdr
local MATCH_WHDR = {
	{ "op", 0, 1, MWOPS },
	{ "flags", 1, 1, nil, base.HEX },
	{ "queue", 2, 2 },
	{ "len", 4, 4 },
	{ "match", 8, 8, nil, base.HEX },
	{ "total", 16, 8 },
	{ "offset", 24, 8 },
	{ "sslot", 32, 4 },
	{ "rslot", 36, 4 },
	{ "status", 40, 4 },            -- names by op: see match_status_name()
	{ "req_id", 44, 4, nil, base.HEX },
}
-- WEFT_MWF_*
local MATCH_FLAGS = { { "rnr", 0x01 }, { "to_sender", 0x02 }, { "syn", 0x04 } }

-- struct weft_cnt_hdr
local CNT_HDR = {
	{ "obj", 0, 2 },
	{ "gen", 2, 2 },
	{ "slot", 4, 1 },
	{ "dir", 5, 1, CNT_DIRS },
	{ "cause", 6, 2 },              -- CNT_ERROR: a reason, see body_cnt()
	{ "seq", 8, 4 },
	{ "reserved0", 12, 4, nil, base.HEX },
	{ "region_pa", 16, 8, nil, base.HEX },
	{ "block_pa", 24, 8, nil, base.HEX },
	{ "remote_va", 32, 8, nil, base.HEX },
	{ "length", 40, 8 },
	{ "offset", 48, 8 },
	{ "span", 56, 8 },
}

-- ---- packet types (enum weft_pkt_type) -------------------------------------------
-- body: how the payload is read: "data" (bytes; RDMA payload), "fifo" (a
-- FIFO payload: IP over Weft when key is WEFT_NET_KEY), "verbs", "hello",
-- "match" (struct weft_match_whdr + data), "cnt" (struct weft_cnt_hdr, +
-- data for CNT_DATA), "none" (header only: any payload is malformed).
local PKT_TYPES = {
	[0x01] = { "FIFO", "fifo" },
	[0x02] = { "RDMAW", "data" },
	[0x03] = { "RDMAR_REQ", "none" },
	[0x04] = { "COMPLETION", "none" },
	[0x05] = { "TP_RDMAR_REQ", "none" },
	[0x06] = { "TP_RDMAW", "data" },
	[0x07] = { "FIFO_DATA", "data" },
	[0x08] = { "RDMAR_FIFO_REQ", "none" },
	[0x09] = { "RDMAR_PUT_REQ", "none" },
	[0x10] = { "VERBS", "verbs" },
	[0x11] = { "CNT_WRITE_OP", "cnt" },
	[0x12] = { "CNT_READ_OP", "cnt" },
	[0x13] = { "CNT_DATA", "cnt" },
	[0x14] = { "CNT_ACK", "cnt" },
	[0x15] = { "CNT_ERROR", "cnt" },
	[0x20] = { "MATCH", "match" },
	[0x80] = { "HELLO", "hello" },
	[0x81] = { "HELLO_ACK", "none" },
}
local PKT_NAMES = {}
for t, e in pairs(PKT_TYPES) do PKT_NAMES[t] = e[1] end

-- ---- fields --------------------------------------------------------------------
local UINT = { [1] = ProtoField.uint8, [2] = ProtoField.uint16, [4] = ProtoField.uint32,
	[8] = ProtoField.uint64 }
local BITS = { [1] = 8, [2] = 16, [4] = 32 }

local function make_fields(prefix, layout, flags, flag_size)
	local f = {}
	for _, d in ipairs(layout) do
		local name, size, names, b = d[1], d[3], d[4], d[5]
		local abbr = prefix .. name
		if names == "gid" then
			f[name] = ProtoField.ipv6(abbr, name)
		elseif size == 8 then
			f[name] = ProtoField.uint64(abbr, name, b or base.DEC)
		else
			f[name] = UINT[size](abbr, name, b or base.DEC, names)
		end
		weft.fields[#weft.fields + 1] = f[name]
	end
	for _, fl in ipairs(flags or {}) do
		f["flag_" .. fl[1]] = ProtoField.bool(prefix .. "flags." .. fl[1], string.upper(fl[1]),
			BITS[flag_size], nil, fl[2])
		weft.fields[#weft.fields + 1] = f["flag_" .. fl[1]]
	end
	return f
end

local F = make_fields("weft.", WIRE_HDR, WIRE_FLAGS, 1)
local FV = make_fields("weft.vhdr.", VHDR, VHDR_FLAGS, 1)
local FA = make_fields("weft.vaddr.", VADDR)
local FN = make_fields("weft.net.", NET_HDR, NET_FLAGS, 1)
local FM = make_fields("weft.match.", MATCH_WHDR, MATCH_FLAGS, 1)
local FC = make_fields("weft.cnt.", CNT_HDR)
local f_type_name = ProtoField.string("weft.type_name", "packet type")
local f_payload = ProtoField.bytes("weft.payload", "payload")
local f_token = ProtoField.bytes("weft.token", "token")
local f_dst_kind = ProtoField.string("weft.dst_kind", "destination")
local f_status_name = ProtoField.string("weft.status_name", "status name")
local f_op_name = ProtoField.string("weft.vhdr.opcode_name", "opcode name")
local f_syndrome_name = ProtoField.string("weft.vhdr.syndrome_name", "syndrome name")
local f_vdata = ProtoField.bytes("weft.vhdr.data", "data")
local f_net_data = ProtoField.bytes("weft.net.data", "frame piece")
local f_mop_name = ProtoField.string("weft.match.op_name", "op name")
local f_mstatus_name = ProtoField.string("weft.match.status_name", "status name")
local f_mdata = ProtoField.bytes("weft.match.data", "data")
local f_cdir_name = ProtoField.string("weft.cnt.dir_name", "direction name")
local f_cause_name = ProtoField.string("weft.cnt.cause_name", "cause name")
local f_cdata = ProtoField.bytes("weft.cnt.data", "data")
for _, x in ipairs({ f_type_name, f_payload, f_token, f_dst_kind, f_status_name, f_op_name,
	f_syndrome_name, f_vdata, f_net_data, f_mop_name, f_mstatus_name, f_mdata, f_cdir_name,
	f_cause_name, f_cdata }) do
	weft.fields[#weft.fields + 1] = x
end

local e_malformed = ProtoExpert.new("weft.malformed", "Malformed Weft frame",
	expert.group.MALFORMED, expert.severity.ERROR)
local e_note = ProtoExpert.new("weft.note", "Weft frame note", expert.group.PROTOCOL,
	expert.severity.NOTE)
weft.experts = { e_malformed, e_note }

local eth = Dissector.get("eth_withoutfcs")

-- ---- helpers ---------------------------------------------------------------------
local function u(tvb, off, size)
	local r = tvb:range(off, size)
	if size == 8 then return r:le_uint64() end
	return r:le_uint()
end

-- add_layout TREE TVB BASE LAYOUT FIELDS: every field of LAYOUT at BASE;
-- the caller has checked that the whole layout is in TVB.  Returns the
-- values by name (numbers; UInt64 for 8-byte fields).
local function add_layout(tree, tvb, at, layout, fields, flags, flag_field)
	local v = {}
	for _, d in ipairs(layout) do
		local name, off, size = d[1], d[2], d[3]
		local r = tvb:range(at + off, size)
		if d[4] == "gid" then
			tree:add(fields[name], r)
		else
			local item = tree:add_le(fields[name], r)
			v[name] = u(tvb, at + off, size)
			if name == flag_field and flags then
				for _, fl in ipairs(flags) do
					item:add(fields["flag_" .. fl[1]], r)
				end
			end
		end
	end
	return v
end

local function flag_text(value, flags)
	local t = {}
	for _, fl in ipairs(flags) do
		if bit32.band(value, fl[2]) ~= 0 then t[#t + 1] = string.upper(fl[1]) end
	end
	return table.concat(t, "|")
end

local function node_text(n)
	if n == NODE_BROADCAST then return "broadcast" end
	if n >= NODE_MCAST_BASE and n < NODE_MCAST_BASE + NR_MCAST_GROUPS then
		return string.format("mcast%d", n - NODE_MCAST_BASE)
	end
	if n > 0xEFFF then return string.format("0x%04x", n) end
	return tostring(n)
end

local function malformed(pinfo, item, text)
	item:add_proto_expert_info(e_malformed, text)
	pinfo.cols.info:append(" [Malformed: " .. text .. "]")
end

-- add_struct: the structure LAYOUT (SIZE bytes, called TITLE) at AT when
-- the LEN bytes there hold it, else MARK is marked malformed; returns its
-- subtree and values, or nil.
local function add_struct(tvb, pinfo, tree, mark, at, len, size, title, layout, fields, flags)
	if len < size then
		malformed(pinfo, mark, string.format("%d bytes left for %s, %d needed", len, title, size))
		return nil
	end
	local t = tree:add(weft, tvb:range(at, size), title)
	return t, add_layout(t, tvb, at, layout, fields, flags, "flags")
end

-- ---- bodies ----------------------------------------------------------------------
local function body_net(tvb, pinfo, tree, root, at, len)
	local nt, v = add_struct(tvb, pinfo, tree, root, at, len, NET_HDR_SIZE,
		"IP over Weft (struct weft_net_hdr)", NET_HDR, FN, NET_FLAGS)
	if not nt then return end
	local rest = len - NET_HDR_SIZE
	if v.version ~= NET_VERSION then
		malformed(pinfo, nt, string.format("weft_net_hdr version %d, expected %d", v.version, NET_VERSION))
	end
	if v.type == NET_FRAME then
		if v.total_len ~= rest then
			malformed(pinfo, nt, string.format("FRAME total_len %d, but %d bytes follow", v.total_len, rest))
			if rest > 0 then nt:add(f_net_data, tvb:range(at + NET_HDR_SIZE, rest)) end
			return
		end
		if rest > 0 and eth then
			pinfo.cols.protocol:set("Weft")
			eth:call(tvb:range(at + NET_HDR_SIZE, rest):tvb(), pinfo, root)
		end
	elseif v.type == NET_FRAG then
		pinfo.cols.info:append(string.format(" IP fragment %d/%d seq %d", v.frag_index, v.frag_count, v.seq))
		if v.frag_index >= v.frag_count then
			malformed(pinfo, nt, string.format("frag_index %d of %d pieces", v.frag_index, v.frag_count))
		end
		if rest > 0 then nt:add(f_net_data, tvb:range(at + NET_HDR_SIZE, rest)) end
	elseif v.type == 3 then
		pinfo.cols.info:append(" IP over Weft ANNOUNCE")
		if rest ~= 8 then
			malformed(pinfo, nt, string.format("ANNOUNCE payload of %d bytes, expected 8", rest))
		end
		if rest > 0 then nt:add(f_net_data, tvb:range(at + NET_HDR_SIZE, rest)) end
	else
		malformed(pinfo, nt, string.format("unknown weft_net_hdr type %d", v.type))
	end
end

local function syndrome_name(op, s)
	if op == VOP_ACK then return VACK[s] or "UNKNOWN" end
	if op == VOP_TERMINATE then return REASON_NAMES[s] or "UNKNOWN" end
	return nil
end

local function body_verbs(tvb, pinfo, tree, root, at, len)
	local vt, v = add_struct(tvb, pinfo, tree, root, at, len, VHDR_SIZE,
		"Verbs transport header (struct weft_vhdr)", VHDR, FV, VHDR_FLAGS)
	if not vt then return end
	local op = VOPS[v.opcode] or "UNKNOWN"
	vt:add(f_op_name, op):set_generated()
	local sn = syndrome_name(v.opcode, v.syndrome)
	if sn then vt:add(f_syndrome_name, sn):set_generated() end
	local info = string.format(" %s qpn %d->%d psn %d", op, v.src_qpn, v.dst_qpn, v.psn)
	local fl = flag_text(v.flags, VHDR_FLAGS)
	if fl ~= "" then info = info .. " " .. fl end
	if sn then info = info .. " " .. sn end
	pinfo.cols.info:append(info)
	if not VOPS[v.opcode] then
		malformed(pinfo, vt, string.format("unknown verbs opcode %d", v.opcode))
	end
	local at2, rest = at + VHDR_SIZE, len - VHDR_SIZE
	if v.opcode == VOP_UD_SEND then
		if not add_struct(tvb, pinfo, tree, vt, at2, rest, VADDR_SIZE,
			"RoCE v2 address of UD_SEND (struct weft_vaddr)", VADDR, FA) then
			return
		end
		at2, rest = at2 + VADDR_SIZE, rest - VADDR_SIZE
	end
	if rest > VERBS_MTU then
		malformed(pinfo, vt, string.format("%d data bytes, more than WEFT_VERBS_MTU %d", rest, VERBS_MTU))
	end
	if rest > 0 then tree:add(f_vdata, tvb:range(at2, rest)) end
end

local function match_status_name(op, s)
	if op == MWOP_RNDV_ACK then return MACK[s] or "UNKNOWN" end
	if op == MWOP_NAK then return REASON_NAMES[s] or "UNKNOWN" end
	return nil
end

-- WEFT_PKT_MATCH (docs/hw-spec.md 17.5): the checks a receiver makes on the
-- shape of the packet alone are malformed here.
local function body_match(tvb, pinfo, tree, root, at, len)
	local mt, v = add_struct(tvb, pinfo, tree, root, at, len, MWHDR_SIZE,
		"Header matching (struct weft_match_whdr)", MATCH_WHDR, FM, MATCH_FLAGS)
	if not mt then return end
	local op = MWOPS[v.op] or "UNKNOWN"
	mt:add(f_mop_name, op):set_generated()
	local sn = match_status_name(v.op, v.status)
	if sn then mt:add(f_mstatus_name, sn):set_generated() end
	local info = string.format(" %s queue %d match 0x%s len %d", op, v.queue, v.match:tohex(16), v.len)
	local fl = flag_text(v.flags, MATCH_FLAGS)
	if fl ~= "" then info = info .. " " .. fl end
	if sn then info = info .. " " .. sn end
	pinfo.cols.info:append(info)
	if not MWOPS[v.op] then
		malformed(pinfo, mt, string.format("unknown match op %d", v.op))
	end
	local rest = len - MWHDR_SIZE
	if v.len ~= rest then
		malformed(pinfo, mt, string.format("len %d, but %d data bytes follow", v.len, rest))
	end
	if rest > MATCH_EAGER_MAX then
		malformed(pinfo, mt, string.format("%d data bytes, more than WEFT_MATCH_EAGER_MAX %d", rest, MATCH_EAGER_MAX))
	end
	if rest > 0 and v.op ~= MWOP_EAGER and v.op ~= MWOP_DATA then
		malformed(pinfo, mt, string.format("%s carries no data, has %d bytes", op, rest))
	end
	if v.op == MWOP_EAGER and v.total ~= UInt64(v.len) then
		malformed(pinfo, mt, string.format("EAGER total %s, len %d", tostring(v.total), v.len))
	end
	if rest > 0 then tree:add(f_mdata, tvb:range(at + MWHDR_SIZE, rest)) end
end

-- WEFT_PKT_CNT_* (docs/hw-spec.md 18.4): a header, and data only in
-- CNT_DATA (1 to WEFT_CNT_CHUNK bytes, span of them).
local function body_cnt(tvb, pinfo, tree, root, at, len, t, tname)
	local ct, v = add_struct(tvb, pinfo, tree, root, at, len, CNT_HDR_SIZE,
		"Counter engine (struct weft_cnt_hdr)", CNT_HDR, FC)
	if not ct then return end
	local dir = CNT_DIRS[v.dir] or "UNKNOWN"
	ct:add(f_cdir_name, dir):set_generated()
	local info = string.format(" obj %d gen %d slot %d seq %d %s offset %s span %s", v.obj, v.gen,
		v.slot, v.seq, dir, tostring(v.offset), tostring(v.span))
	if t == PKT_CNT_ERROR then
		local cn = REASON_NAMES[v.cause] or "UNKNOWN"
		ct:add(f_cause_name, cn):set_generated()
		info = info .. " cause " .. cn
	end
	pinfo.cols.info:append(info)
	if not CNT_DIRS[v.dir] then
		malformed(pinfo, ct, string.format("unknown direction %d", v.dir))
	end
	local rest = len - CNT_HDR_SIZE
	if t ~= PKT_CNT_DATA then
		if rest > 0 then
			malformed(pinfo, ct, string.format("%s carries no data, has %d bytes", tname, rest))
		end
	elseif rest == 0 or rest > CNT_CHUNK then
		malformed(pinfo, ct, string.format("CNT_DATA of %d bytes: 1 to WEFT_CNT_CHUNK %d", rest, CNT_CHUNK))
	elseif v.span ~= UInt64(rest) then
		malformed(pinfo, ct, string.format("span %s, but %d data bytes follow", tostring(v.span), rest))
	end
	if rest > 0 then tree:add(f_cdata, tvb:range(at + CNT_HDR_SIZE, rest)) end
end

local function status_name(t, s)
	if t == 0x81 then return SW_STATUS[s] or "UNKNOWN" end
	if t == 0x04 then return REASON_NAMES[s] or "UNKNOWN" end
	return nil
end

-- ---- the dissector ------------------------------------------------------------------
local function dissect(tvb, pinfo, tree)
	pinfo.cols.protocol:set("Weft")
	local cap = tvb:len()
	local root = tree:add(weft, tvb:range(0, cap))
	if cap < WIRE_HDR_SIZE then
		pinfo.cols.info:set(string.format("Weft frame of %d bytes", cap))
		malformed(pinfo, root, string.format("%d bytes, struct weft_wire_hdr is %d", cap, WIRE_HDR_SIZE))
		return
	end
	local h = add_layout(root, tvb, 0, WIRE_HDR, F, WIRE_FLAGS, "flags")
	local pt = PKT_TYPES[h.type]
	local tname = pt and pt[1] or string.format("UNKNOWN(0x%02x)", h.type)
	root:add(f_type_name, tname):set_generated()
	root:append_text(string.format(", %s, node %s -> %s", tname, node_text(h.src_node), node_text(h.dst_node)))
	local dk = root:add(f_dst_kind, node_text(h.dst_node)):set_generated()
	local sn = status_name(h.type, h.status)
	if sn then root:add(f_status_name, sn):set_generated() end
	local info = string.format("%s %s->%s", tname, node_text(h.src_node), node_text(h.dst_node))
	-- verbs, matching and counter packets leave the window fields at 0
	if not pt or (pt[2] ~= "verbs" and pt[2] ~= "match" and pt[2] ~= "cnt") then
		info = info .. string.format(" w%d->w%d key 0x%x len %d", h.src_window, h.dst_window, h.key, h.length)
	end
	local fl = flag_text(h.flags, WIRE_FLAGS)
	if fl ~= "" then info = info .. " " .. fl end
	if sn then info = info .. " status " .. sn end
	pinfo.cols.info:set(info)
	pinfo.cols.src:set(node_text(h.src_node))
	pinfo.cols.dst:set(node_text(h.dst_node))

	if h.version ~= WIRE_VERSION then
		malformed(pinfo, root, string.format("version %d, expected %d", h.version, WIRE_VERSION))
	end
	local rest = cap - WIRE_HDR_SIZE
	local len = h.length
	if tvb:reported_len() ~= cap then
		malformed(pinfo, root, string.format("record truncated: %d of %d bytes captured", cap, tvb:reported_len()))
	end
	if len ~= rest then
		malformed(pinfo, root, string.format("length %d, but %d bytes follow the header", len, rest))
		if len > rest then len = rest end
	end
	if pt and pt[2] == "verbs" then
		if len > WIRE_MAX_PAYLOAD then
			malformed(pinfo, root, string.format("length %d, more than WEFT_WIRE_MAX_PAYLOAD %d", len, WIRE_MAX_PAYLOAD))
		end
	elseif len > MAX_PAYLOAD then
		malformed(pinfo, root, string.format("length %d, more than WEFT_MAX_PAYLOAD %d", len, MAX_PAYLOAD))
	end
	if not pt then
		malformed(pinfo, root, string.format("unknown packet type 0x%02x", h.type))
		if len > 0 then root:add(f_payload, tvb:range(WIRE_HDR_SIZE, len)) end
		return
	end
	local body = pt[2]
	if body == "verbs" then
		body_verbs(tvb, pinfo, root, root, WIRE_HDR_SIZE, len)
	elseif body == "match" then
		body_match(tvb, pinfo, root, root, WIRE_HDR_SIZE, len)
	elseif body == "cnt" then
		body_cnt(tvb, pinfo, root, root, WIRE_HDR_SIZE, len, h.type, tname)
	elseif body == "fifo" and h.key == NET_KEY and len > 0 then
		body_net(tvb, pinfo, root, tree, WIRE_HDR_SIZE, len)
	elseif body == "hello" then
		if h.key ~= HELLO_MAGIC then
			malformed(pinfo, root, string.format("HELLO key 0x%08x, expected 0x%08x", h.key, HELLO_MAGIC))
		end
		if len ~= 0 and len ~= TOKEN_SIZE then
			malformed(pinfo, root, string.format("HELLO payload of %d bytes: none or a %d-byte token", len, TOKEN_SIZE))
		end
		if len > 0 then root:add(f_token, tvb:range(WIRE_HDR_SIZE, len)) end
	elseif body == "none" then
		if len > 0 then
			malformed(pinfo, root, string.format("%s carries no payload, has %d bytes", tname, len))
			root:add(f_payload, tvb:range(WIRE_HDR_SIZE, len))
		end
	elseif len > 0 then
		root:add(f_payload, tvb:range(WIRE_HDR_SIZE, len))
	end
	return dk
end

function weft.dissector(tvb, pinfo, tree)
	local ok, err = pcall(dissect, tvb, pinfo, tree)
	if not ok then
		-- A bug here, never a frame, should get this far: still no throw.
		local item = tree:add(weft, tvb:range(0, tvb:len()))
		malformed(pinfo, item, "dissector error: " .. tostring(err))
	end
	return tvb:len()
end

DissectorTable.get("wtap_encap"):add(wtap.USER0, weft)
