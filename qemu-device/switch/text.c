/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: the growable text buffer of control replies and the one
 * JSON writer every `--json` reply goes through.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

#include "sw.h"

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len, nc;
		char *ns;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		nc = (b->cap + (size_t)n + 1) * 2;
		ns = realloc(b->s, nc);
		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = nc;
	}
}

void jw_init(struct jw *w, struct sbuf *b)
{
	w->b = b;
	w->depth = 0;
	w->after_key = false;
	w->need_comma[0] = false;
}

/* Before a value (or a key): the comma that separates it. */
static void jw_sep(struct jw *w)
{
	if (w->need_comma[w->depth])
		sb_printf(w->b, ",");
	w->need_comma[w->depth] = true;
}

static void jw_open(struct jw *w, char c)
{
	sb_printf(w->b, "%c", c);
	if (w->depth + 1 < (int)(sizeof(w->need_comma) / sizeof(w->need_comma[0])))
		w->depth++;
	else
		w->b->oom = true;
	w->need_comma[w->depth] = false;
}

static void jw_close(struct jw *w, char c)
{
	sb_printf(w->b, "%c", c);
	if (w->depth > 0)
		w->depth--;
	if (w->depth == 0)
		sb_printf(w->b, "\n");
}

/* A value right after jw_key() takes no comma of its own. */
static void jw_value(struct jw *w)
{
	if (w->after_key)
		w->after_key = false;
	else
		jw_sep(w);
}

void jw_obj(struct jw *w)
{
	jw_value(w);
	jw_open(w, '{');
}

void jw_end_obj(struct jw *w)
{
	jw_close(w, '}');
}

void jw_arr(struct jw *w)
{
	jw_value(w);
	jw_open(w, '[');
}

void jw_end_arr(struct jw *w)
{
	jw_close(w, ']');
}

static void jw_quoted(struct jw *w, const char *s)
{
	const char *p;

	sb_printf(w->b, "\"");
	for (p = s; *p; p++) {
		if (*p == '"' || *p == '\\')
			sb_printf(w->b, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			sb_printf(w->b, "\\u%04x", (unsigned char)*p);
		else
			sb_printf(w->b, "%c", *p);
	}
	sb_printf(w->b, "\"");
}

void jw_key(struct jw *w, const char *k)
{
	jw_sep(w);
	jw_quoted(w, k);
	sb_printf(w->b, ":");
	w->after_key = true;
}

void jw_u64(struct jw *w, uint64_t v)
{
	jw_value(w);
	sb_printf(w->b, "%" PRIu64, v);
}

void jw_bool(struct jw *w, bool v)
{
	jw_value(w);
	sb_printf(w->b, "%s", v ? "true" : "false");
}

void jw_null(struct jw *w)
{
	jw_value(w);
	sb_printf(w->b, "null");
}

void jw_str(struct jw *w, const char *s)
{
	if (!s) {
		jw_null(w);
		return;
	}
	jw_value(w);
	jw_quoted(w, s);
}
