/* SPDX-License-Identifier: MIT */
/*
 * weft-switch: node tokens.  A token file (--tokens FILE) binds each node
 * id to a 256-bit secret; a HELLO for that node id must carry it.  See
 * docs/switch.md, "Authentication".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sw.h"

struct token {
	uint16_t node;
	unsigned char tok[WEFT_WIRE_TOKEN_SIZE];
};

struct auth {
	struct token *t;
	size_t n;
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly 2 * WEFT_WIRE_TOKEN_SIZE hex digits. */
static bool parse_token(const char *s, unsigned char *out)
{
	size_t i;

	if (strlen(s) != 2 * WEFT_WIRE_TOKEN_SIZE)
		return false;
	for (i = 0; i < WEFT_WIRE_TOKEN_SIZE; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return true;
}

static struct token *auth_find(const struct auth *a, uint16_t node)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->t[i].node == node)
			return &a->t[i];
	return NULL;
}

static int auth_parse(struct auth *a, FILE *fp, const char *path, char *err, size_t errlen)
{
	char line[256];
	unsigned int lineno = 0;

	while (fgets(line, sizeof(line), fp)) {
		char *save = NULL, *n, *t, *x;
		uint64_t node;
		struct token *nt;

		lineno++;
		n = strtok_r(line, " \t\r\n", &save);
		if (!n || n[0] == '#')
			continue;
		t = strtok_r(NULL, " \t\r\n", &save);
		x = strtok_r(NULL, " \t\r\n", &save);
		if (!parse_u64(n, WEFT_NODE_MAX_UNICAST, &node) || !t || x) {
			snprintf(err, errlen, "%s:%u: expected 'NODE TOKEN' (NODE 0..%u)", path,
				 lineno, WEFT_NODE_MAX_UNICAST);
			return -1;
		}
		if (auth_find(a, (uint16_t)node)) {
			snprintf(err, errlen, "%s:%u: node %u has a token already", path, lineno,
				 (unsigned int)node);
			return -1;
		}
		nt = realloc(a->t, (a->n + 1) * sizeof(*a->t));
		if (!nt) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		a->t = nt;
		nt = &a->t[a->n];
		nt->node = (uint16_t)node;
		if (!parse_token(t, nt->tok)) {
			snprintf(err, errlen, "%s:%u: a token is %u hex digits", path, lineno,
				 2 * WEFT_WIRE_TOKEN_SIZE);
			return -1;
		}
		a->n++;
	}
	if (ferror(fp)) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

struct auth *auth_load(const char *path, char *err, size_t errlen)
{
	struct auth *a;
	struct stat st;
	FILE *fp;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		snprintf(err, errlen, "cannot open token file %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		snprintf(err, errlen, "token file %s must be a regular file of this user with "
			 "mode 0600 or 0400", path);
		close(fd);
		return NULL;
	}
	fp = fdopen(fd, "r");
	a = calloc(1, sizeof(*a));
	if (!fp || !a) {
		snprintf(err, errlen, "out of memory");
		if (fp)
			fclose(fp);
		else
			close(fd);
		free(a);
		return NULL;
	}
	if (auth_parse(a, fp, path, err, errlen)) {
		fclose(fp);
		auth_free(a);
		return NULL;
	}
	fclose(fp);
	if (!a->n) {
		snprintf(err, errlen, "token file %s has no tokens", path);
		auth_free(a);
		return NULL;
	}
	return a;
}

void auth_free(struct auth *a)
{
	if (!a)
		return;
	/* The secrets do not outlive the switch in freed memory. */
	if (a->t)
		explicit_bzero(a->t, a->n * sizeof(*a->t));
	free(a->t);
	free(a);
}

bool auth_check(const struct auth *a, uint16_t node, const unsigned char *token)
{
	const struct token *t = auth_find(a, node);
	unsigned char diff = 0;
	size_t i;

	if (!t)
		return false;
	for (i = 0; i < WEFT_WIRE_TOKEN_SIZE; i++)
		diff |= (unsigned char)(t->tok[i] ^ token[i]);
	return diff == 0;
}

size_t auth_nodes(const struct auth *a)
{
	return a ? a->n : 0;
}
