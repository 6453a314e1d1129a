/* SPDX-License-Identifier: MIT */
/*
 * Names of registers, reasons, counters and packet types, generated from
 * the X-macro lists so that traces, debugfs and tools agree.
 */
#ifndef WEFT_NAMES_H
#define WEFT_NAMES_H

#include "weft/hw.h"
#include "weft/counters.h"
#include "weft/wire.h"
#include "weft/verbs.h"
#include "weft/match.h"
#include "weft/cnt.h"

/* Name of the fixed register at offset off in BAR 0, or NULL.  TCE table
 * and counter registers are named by weft_reg_array_name(). */
static inline const char *weft_reg_name(uint64_t off)
{
	switch (off) {
#define WEFT_REG_CASE(name, o, acc) case o: return #name;
	WEFT_REG_LIST(WEFT_REG_CASE)
#undef WEFT_REG_CASE
	default: return NULL;
	}
}

/* Access rule of a fixed register: 'R' read-only, 'W' write-only,
 * 'B' read-write, 0 if there is none at off. */
static inline char weft_reg_access(uint64_t off)
{
#define WEFT_ACC_RO 'R'
#define WEFT_ACC_WO 'W'
#define WEFT_ACC_RW 'B'
	switch (off) {
#define WEFT_REG_ACC(name, o, acc) case o: return WEFT_ACC_##acc;
	WEFT_REG_LIST(WEFT_REG_ACC)
#undef WEFT_REG_ACC
	default: return 0;
	}
}

static inline const char *weft_db_name(uint64_t off_in_page)
{
	switch (off_in_page) {
#define WEFT_DB_CASE(name, o, acc) case o: return #name;
	WEFT_DB_LIST(WEFT_DB_CASE)
#undef WEFT_DB_CASE
	default: return NULL;
	}
}

static inline char weft_db_access(uint64_t off_in_page)
{
	switch (off_in_page) {
#define WEFT_DB_ACC(name, o, acc) case o: return WEFT_ACC_##acc;
	WEFT_DB_LIST(WEFT_DB_ACC)
#undef WEFT_DB_ACC
	default: return 0;
	}
}

static inline const char *weft_reason_name(unsigned int r)
{
	static const char *const names[] = {
#define WEFT_REASON_NAME(name, text) #name,
		WEFT_REASON_LIST(WEFT_REASON_NAME)
#undef WEFT_REASON_NAME
	};
	return r < WEFT_R__COUNT ? names[r] : "UNKNOWN";
}

static inline const char *weft_reason_text(unsigned int r)
{
	static const char *const texts[] = {
#define WEFT_REASON_TEXT(name, text) text,
		WEFT_REASON_LIST(WEFT_REASON_TEXT)
#undef WEFT_REASON_TEXT
	};
	return r < WEFT_R__COUNT ? texts[r] : "unknown reason";
}

/* Counter name; drop counters are named by their reason (DROP_<REASON>
 * is spelled as the reason name, the caller adds the prefix). */
static inline const char *weft_counter_name(unsigned int c)
{
	static const char *const names[] = {
#define WEFT_CNT_NAME(name) #name,
		WEFT_CNT_LIST(WEFT_CNT_NAME)
#undef WEFT_CNT_NAME
	};
	if (c < WEFT_CNT_DROP_BASE)
		return names[c];
	if (c < WEFT_CNT__COUNT)
		return weft_reason_name(c - WEFT_CNT_DROP_BASE);
	return "UNKNOWN";
}

static inline const char *weft_pkt_type_name(unsigned int t)
{
	switch (t) {
#define WEFT_PKT_CASE(name, val, rule) case WEFT_PKT_##name: return #name;
	WEFT_PKT_LIST(WEFT_PKT_CASE)
	WEFT_PKT_CTL_LIST(WEFT_PKT_CASE)
#undef WEFT_PKT_CASE
	default: return "UNKNOWN";
	}
}

static inline const char *weft_uar_name(uint64_t off_in_page)
{
	switch (off_in_page) {
#define WEFT_UAR_CASE(name, o, acc) case o: return #name;
	WEFT_UAR_LIST(WEFT_UAR_CASE)
#undef WEFT_UAR_CASE
	default: return NULL;
	}
}

static inline const char *weft_vop_name(unsigned int op)
{
	switch (op) {
#define WEFT_VOP_CASE(name, val) case WEFT_VOP_##name: return #name;
	WEFT_VOP_LIST(WEFT_VOP_CASE)
#undef WEFT_VOP_CASE
	default: return "UNKNOWN";
	}
}

static inline const char *weft_vcmd_name(unsigned int op)
{
	switch (op) {
#define WEFT_VCMD_CASE(name, val) case WEFT_VCMD_##name: return #name;
	WEFT_VCMD_LIST(WEFT_VCMD_CASE)
#undef WEFT_VCMD_CASE
	default: return "UNKNOWN";
	}
}

/* Header matching (weft/match.h): fixed registers, descriptor
 * registers, operations and wire operations. */
static inline const char *weft_match_reg_name(uint64_t off)
{
	static const char *const qd[] = { "MATCH_QCFG", "MATCH_QTAG", "MATCH_QRANK",
					  "MATCH_QSTAT" };

	switch (off) {
#define WEFT_MATCH_REG_CASE(name, o, acc) case o: return #name;
	WEFT_MATCH_REG_LIST(WEFT_MATCH_REG_CASE)
#undef WEFT_MATCH_REG_CASE
	default: break;
	}
	if (off >= WEFT_MATCH_QD_BASE && off < WEFT_MATCH_QD_END)
		return qd[((off - WEFT_MATCH_QD_BASE) % WEFT_MATCH_QD_STRIDE) / 8];
	return NULL;
}

static inline char weft_match_reg_access(uint64_t off)
{
	switch (off) {
#define WEFT_MATCH_REG_ACC(name, o, acc) case o: return WEFT_ACC_##acc;
	WEFT_MATCH_REG_LIST(WEFT_MATCH_REG_ACC)
#undef WEFT_MATCH_REG_ACC
	default: break;
	}
	if (off >= WEFT_MATCH_QD_BASE && off < WEFT_MATCH_QD_END)
		return 'B';
	return 0;
}

static inline const char *weft_mop_name(unsigned int op)
{
	switch (op) {
	case WEFT_MOP_POST: return "MATCH_POST";
	case WEFT_MOP_REMOVE: return "MATCH_REMOVE";
	case WEFT_MOP_SEND: return "MATCH_SEND";
	case WEFT_MOP_SYNC: return "MATCH_SYNC";
	case WEFT_MOP_POOL_ADD: return "MATCH_POOL_ADD";
	case WEFT_MOP_DUMP: return "MATCH_DUMP";
	case WEFT_MOP_RNDV_PUT: return "MATCH_RNDV_PUT";
	default: return "MATCH_UNKNOWN";
	}
}

static inline const char *weft_mwop_name(unsigned int op)
{
	switch (op) {
	case WEFT_MWOP_EAGER: return "EAGER";
	case WEFT_MWOP_RNDV_REQ: return "RNDV_REQ";
	case WEFT_MWOP_RNDV_ACK: return "RNDV_ACK";
	case WEFT_MWOP_DATA: return "DATA";
	case WEFT_MWOP_PULL: return "PULL";
	case WEFT_MWOP_FIN: return "FIN";
	case WEFT_MWOP_CTS: return "CTS";
	case WEFT_MWOP_NAK: return "NAK";
	case WEFT_MWOP_ACK: return "ACK";
	default: return "UNKNOWN";
	}
}

static inline const char *weft_cnt_cmd_name(unsigned int op)
{
	switch (op) {
	case WEFT_CNT_CMD_CREATE: return "CNT_CREATE";
	case WEFT_CNT_CMD_DESTROY: return "CNT_DESTROY";
	case WEFT_CNT_CMD_POST: return "CNT_POST";
	case WEFT_CNT_CMD_EXPOSE: return "CNT_EXPOSE";
	case WEFT_CNT_CMD_UNEXPOSE: return "CNT_UNEXPOSE";
	case WEFT_CNT_CMD_QUERY: return "CNT_QUERY";
	case WEFT_CNT_CMD_QUERY_EXP: return "CNT_QUERY_EXP";
	case WEFT_CNT_CMD_BIND_QP: return "CNT_BIND_QP";
	case WEFT_CNT_CMD_UNBIND_QP: return "CNT_UNBIND_QP";
	case WEFT_CNT_CMD_EV_SET: return "CNT_EV_SET";
	default: return "UNKNOWN";
	}
}

#endif /* WEFT_NAMES_H */
